// The sweep receipt `fak.serving-sweep.v1` as data (docs/FAK.md 6.6, field order kept), with
// what this project adds: rate (open-loop) sweeps, per-point samples and evidence (generator
// lateness, server counters, energy, confidence intervals), an e2e budget, the p99 SLA boundary,
// the saturation finding, and a validity block. Pure.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "loadgen/load_mode.hpp"
#include "loadgen/sample.hpp"
#include "sweep/point_evidence.hpp"
#include "sweep/serving_stats.hpp"

namespace mpo::sweep {

inline constexpr const char* kSweepSchema = "fak.serving-sweep.v1";
inline constexpr const char* kEnvelopeSchema = "fak.sweep-envelope.v1";

inline constexpr int kRulesGeneration = 2;

struct Contract {
  std::string track, model, engine, engine_receipt_digest;
  std::int64_t batch_capacity = 0;
  std::string capacity_source;
};

struct TrackPoint {
  std::string track, status, reason_code, reason, measurement_status;
  std::string model, engine, engine_receipt_digest;
  std::int64_t batch_capacity = 0;
  std::string capacity_source;
  ServingStats stats;
  PointEvidence evidence;                // ours
  std::vector<loadgen::Sample> samples;  // ours: every request of the point, warm-up included
};

struct Point {
  double coordinate = 0;  // concurrency (closed loop) or offered rate in requests/s (open loop)
  std::string workload_digest;
  std::vector<TrackPoint> tracks;
};

struct Selection {
  double coordinate = 0;
  double throughput_tok_s = 0;
  // What the throughput counts (fak's rules of generation 2 write both on a selection); "" unknown.
  std::string throughput_unit, token_count_basis;
  std::optional<double> goodput_rps, ttft_p99_ms, itl_p99_ms, e2e_p99_ms;
};

// Ours: the largest coordinate meeting every configured p99 budget (evaluate.cpp decides it).
struct P99Boundary {
  std::string rule;    // "" when no budget is configured
  std::string status;  // not_configured | not_identifiable | measured | right_censored
  std::optional<double> coordinate, last_passing;
  std::string reason;
  std::optional<double> first_failing;
  std::string confidence;  // robust | marginal
  std::string note;        // the curve is not monotone
};

// Ours: where the server saturates, and the signals that said so.
struct SaturationSignal {
  std::string signal;  // throughput_plateau | rate_shortfall | server_queue_capacity
  double at = 0;
  std::string detail;
};
struct Saturation {
  std::string rule;
  std::string status;  // not_observed | measured | left_censored
  std::string reason;
  std::optional<double> knee, saturated_at;
  std::vector<SaturationSignal> signals;
};

struct TrackSummary {
  std::string track, status, reason;
  std::int64_t valid_points = 0;
  std::string envelope_digest;
  std::string peak_status, peak_reason;
  std::optional<Selection> peak;
  std::string sla_status, sla_reason;
  std::optional<Selection> sla_knee;
  P99Boundary p99_boundary;  // ours
  Saturation saturation;     // ours
};

struct SlaBudgets {
  double ttft_p99_ms = 0, itl_p99_ms = 0, e2e_p99_ms = 0;  // 0: none
  bool any() const { return ttft_p99_ms > 0 || itl_p99_ms > 0 || e2e_p99_ms > 0; }
};

// What the sweep's server said it was, before the first point (its digest is the observed engine
// receipt when none is declared).
struct EngineIdentity {
  std::vector<std::string> models;
  std::string owned_by, metrics_engine, server_instance;
};
boost::json::object engine_identity_json(const EngineIdentity& id);

// Ours: a shard's place in a sharded sweep (`sweep --shard I/N`, docs/SWEEP.md "Sharded sweeps").
struct ShardSetting {
  std::int64_t index = 0, count = 1;
  std::optional<std::string> start_at;      // --start-at: when the first point was due
  std::optional<double> point_period_s;     // --point-period: point k due at start_at + k periods
  std::optional<double> start_lateness_ms;  // the first point's start after start_at
};

// Ours, in a merged receipt: each shard it was merged from.
struct ShardRecord {
  std::int64_t index = 0;
  std::string file, receipt_sha256, machine_id, generated_at;
  std::optional<double> start_lateness_ms;
  // The shard machine's clock against the others': not measured (nothing shared between the
  // machines dates an event on both); the merge relies on synchronised clocks (NTP/chrony) and
  // says so.
  std::string clock_offset;
};

// Ours: how the points were driven (the settings of the run, recorded once).
struct SweepLoad {
  // Each member is optional: a receipt written before a member existed is read and written back
  // without it.
  std::optional<std::string> mode;     // closed-loop | open-loop
  std::optional<std::string> arrival;  // open loop: poisson | gamma | constant | replay
  std::optional<double> burstiness;    // gamma shape
  std::optional<std::string> url, api, workload_source;
  // A multi-turn workload: its sessions and what a point's coordinate counts ("16 sessions of 4
  // turns (64 requests): each point's concurrency is live sessions, ...").
  std::optional<std::string> sessions;
  std::optional<std::int64_t> requests_per_point;
  std::optional<std::string> warmup_rule;
  std::optional<std::uint64_t> seed;
  std::optional<double> slo_ms, lateness_bound_ms;
  std::optional<bool> ignore_eos;
  std::optional<double> timeout_s;
  std::optional<std::string> metrics_url, power, dcgm_url;
  std::optional<std::string> prompts;      // how each point's prompts differ (docs/SWEEP.md)
  std::optional<std::string> prompt_salt;  // the run's own word in every prompt (docs/SWEEP.md)
  // How prompt lengths were made: "exact: <the server's tokenizer route>" or "approximate: <why>".
  std::optional<std::string> prompt_lengths;
  // Set when a signal stopped the run: what happened ("SIGINT during concurrency=4: ..."). Such a
  // receipt is not valid for claims.
  std::optional<std::string> interrupted;
  std::optional<std::string> cache_reset;  // --reset-cache-between-points: how
  std::optional<EngineIdentity> observed_engine_identity;
  std::optional<std::string> observed_engine_receipt_digest;
  std::optional<ShardSetting> shard;               // a shard's receipt
  std::optional<std::vector<ShardRecord>> shards;  // a merged receipt
  boost::json::object unknown;                     // members of a read receipt this struct does not name, as written
};

struct SweepReceipt {
  std::string schema = kSweepSchema;
  std::string generated_at;  // RFC 3339, seconds
  std::string machine_id = "unknown";
  std::string model;
  loadgen::LoadMode mode = loadgen::LoadMode::kConcurrency;
  std::string workload_digest;
  std::int64_t workload_requests = 0;
  std::vector<double> coordinates;  // concurrencies or rates, ascending
  std::vector<Contract> contracts;
  SlaBudgets sla;
  std::vector<Point> points;
  std::vector<TrackSummary> tracks;
  std::string artifact;
  // Ours.
  std::string tool_name = "modelperfobs";  // "" when read from a receipt without a tool block (fak's)
  std::string tool_version;
  int interrupted_by = 0;       // the signal that stopped the run (not written: load.interrupted says it)
  std::string stopped_because;  // the run stopped itself (a wrong model, everything failing); not written
  // Which generation of fak's rules judge the receipt (docs/SWEEP.md "fak's rules, two generations"):
  // 1 before fak added the throughput identity (its codes throughput_identity_unknown|mismatch and
  // the throughput_unit and token_count_basis envelope bindings), 2 with it. Ours write 2 (in
  // tool.rules_generation); a fak receipt is read as 1 unless it shows the newer rules.
  int rules_generation = kRulesGeneration;
  std::optional<SweepLoad> load;  // ours: nullopt in a receipt read from fak's writer
  bool valid = false;
  std::vector<std::string> validity_reasons, warnings;
};

const char* axis_name(loadgen::LoadMode m);
const char* axis_unit(loadgen::LoadMode m);
const char* point_key(loadgen::LoadMode m);  // "concurrency" | "rate_rps"

boost::json::value receipt_json(const SweepReceipt& r);
std::string receipt_text(const SweepReceipt& r);  // pretty Go JSON, one trailing newline
// Reads a receipt. Unknown fields are ignored (fak readers do the same); numbers are exact.
Result<SweepReceipt> parse_sweep_receipt(std::string_view text);

}  // namespace mpo::sweep
