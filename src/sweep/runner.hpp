// Runs a whole sweep (edge): the engine identity, then each point in ascending order (scrape
// before, gauges sampled during, the point's requests, scrape after, energy), optional bisection
// between the last point inside the p99 budgets and the first outside, and the evaluated receipt.
// SIGINT/SIGTERM stop it after the point in progress; the receipt then holds what was measured.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ledger/observation.hpp"
#include "loadgen/driver.hpp"
#include "loadgen/workload.hpp"
#include "scrape/snapshot.hpp"
#include "sweep/merge.hpp"
#include "sweep/parity.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {

struct SweepOptions {
  loadgen::Target target;
  loadgen::LoadMode mode = loadgen::LoadMode::kConcurrency;
  std::vector<double> coordinates;  // concurrencies or rates
  loadgen::Arrival arrival = loadgen::Arrival::kPoisson;
  double burstiness = 1;
  std::vector<loadgen::ServingRequest> workload;  // the base list; each point sends `requests` of it
  std::string workload_source;                    // "synthetic ...", "web-tasks FILE", "replay FILE"
  std::size_t requests = 64;                      // measured requests per point
  double duration_s = 0;                          // > 0: each point runs this long instead (the requests cycle)
  long warmup = -1;                               // -1: one per worker (closed) or one second of arrivals (open)
  std::uint64_t seed = 1;
  double slo_ms = 2000;
  SlaBudgets sla;
  bool refine = false;
  double lateness_bound_ms = 1.0;
  std::string metrics_url;
  double metrics_interval_s = 0.25;
  std::string power;  // "", "nvidia-smi"
  std::string dcgm_url;
  std::string track = "ours";
  std::string engine;          // "" : detected
  std::string engine_receipt;  // "" : the digest of the identity observed at the start
  std::int64_t batch_capacity = 0;
  std::string capacity_source;
  std::string machine_id;
  std::string tool_version;
  // Every point sends the same prompts (by default each point marks its own: docs/SWEEP.md
  // "Prompts per point"): a warm-cache measurement on purpose; later points are cache_carryover.
  bool same_prompts_every_point = false;
  // A word every prompt of this run carries (docs/SWEEP.md "Prompts"), so a run never meets the
  // prefix cache an earlier run of the same workload filled; "" = none (a rerun repeats the prompts).
  std::string prompt_salt;
  // Fit each prompt to its asked length as the server's tokenizer counts it (loadgen/prompt_length.hpp):
  // for workloads whose lengths are targets (synthetic, replay).
  bool exact_prompt_tokens = false;
  // The synthetic workload's shared prefix, in tokens (--shared-prefix-tokens): fitted to that many
  // as the server counts them where prompts are fitted; 0: none.
  std::int64_t shared_prefix_tokens = 0;
  // A multi-turn workload's messages each fitted to its length in tokens, where prompts are fitted
  // (loadgen/prompt_length.hpp PromptFitter::fit_messages); its prompts are not fitted whole.
  bool fit_each_message = false;
  // Why this workload's prompts are not fitted although its lengths are targets (a conversation's
  // turns, a trace's blocks: fitting would break the prefixes they share); "" : fitted.
  std::string not_fitted_because;
  // Empty the server's prefix cache before each point (vLLM /reset_prefix_cache, SGLang
  // /flush_cache, llama.cpp slot erase); the sweep stops at start-up when the server offers none.
  bool reset_cache_between_points = false;
  // One share of every point (loadgen/shard.hpp); with `start_at_us` the first point is due at that
  // wall time and point k at start_at_us + k * point_period_s (0: right after the one before).
  loadgen::Shard shard;
  std::optional<std::int64_t> start_at_us;
  double point_period_s = 0;
};

// A point's progress as it runs: requests finished of those planned (warm-up included), how many
// ended ok and how many failed, and the latest failure's class ("http_error 503",
// "upstream_timeout"; "" before any).
struct PointProgress {
  std::size_t done = 0, total = 0, ok = 0, failed = 0;
  std::string latest_error;
};

struct SweepCallbacks {
  std::function<void(const ledger::Observation&)> on_observation;
  std::function<void(const std::string& label, const PointProgress& progress)> on_progress;
  std::function<void(const std::string& line)> on_note;  // one line per finished point, warnings
  // Every /metrics snapshot taken (with --metrics-url), in order.
  std::function<void(const scrape::Snapshot&)> on_snapshot;
};

// Errors only for what stops a sweep before it starts (no identity can be taken, bad options).
Result<SweepReceipt> run_sweep(const SweepOptions& opts, const SweepCallbacks& cb);

// One point (closed loop at `concurrency`, the same requests) against each track's server, in
// fak's track order: `fak.serving-parity.v1`. Uses opts' target (model, key, timeout), workload,
// requests, warm-up, SLO, seed and machine; the URL of each track replaces the target's.
struct ParityTrackUrl {
  std::string track;
  net::BackendUrl url;
};
Result<ParityReport> run_parity(const SweepOptions& opts, const std::vector<ParityTrackUrl>& tracks,
                                std::int64_t concurrency, const SweepCallbacks& cb);

}  // namespace mpo::sweep
