// Folding a point's samples into fak's ServingStats (docs/FAK.md 6.4), and the evidence this
// project adds beside them: the generator's own lateness, bootstrap confidence intervals on the
// p99s, errors by class, achieved rate. Pure and deterministic, so `sweep verify` recomputes a
// receipt's figures from its samples and gets the same bytes.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/sample.hpp"
#include "sweep/point_evidence.hpp"
#include "sweep/serving_stats.hpp"

namespace mpo::sweep {

// Nearest rank, index ceil(q * n) - 1 clamped, on ascending values; rounded to 3 decimals.
double nearest_rank(std::span<const double> sorted, double q);

struct FoldOptions {
  double slo_ms = 2000;  // goodput: end-to-end within this (<= 0: not configured)
  // The server's prefix-cache hit rate over the point (a counter delta); nullopt: not measured.
  std::optional<ScalarMetric> prefix_cache_hit_rate;
};

// ServingStats over the measured (non-warm-up) samples. The wall time runs from the first
// measured send to the last measured completion.
ServingStats fold_samples(std::span<const loadgen::Sample> samples, const FoldOptions& opts);

// The largest number of requests in flight at once, over every sample (warm-up included).
std::int64_t max_in_flight(std::span<const loadgen::Sample> samples);

struct Interval {
  double low = 0, high = 0;
};
// Percentile bootstrap of the nearest-rank p99: `resamples` draws with replacement, seeded, the
// (1-level)/2 and (1+level)/2 quantiles of the replicated p99s. nullopt for fewer than 2 values.
std::optional<Interval> bootstrap_p99(std::span<const double> values, std::uint64_t seed, int resamples = 1000,
                                      double level = 0.95);

// The measured samples' values of one latency, in sample order (itl pooled).
std::vector<double> ttft_values(std::span<const loadgen::Sample> samples);
std::vector<double> itl_values(std::span<const loadgen::Sample> samples);
std::vector<double> e2e_values(std::span<const loadgen::Sample> samples);

// The "generator", "confidence" and "errors_by_class" members of a point's evidence block (send
// lateness over the measured requests; warm-up excluded like everywhere else).
struct GeneratorFigures {
  double lateness_bound_ms = 1.0;
  double cpu_seconds = 0;   // the generator's CPU time over the point (measured by the driver)
  double wall_seconds = 0;  // the point's whole duration, warm-up included
};
GeneratorEvidence generator_evidence(std::span<const loadgen::Sample> samples, const GeneratorFigures& g);
ConfidenceEvidence confidence_evidence(std::span<const loadgen::Sample> samples, std::uint64_t seed);
std::map<std::string, std::int64_t> errors_by_class(std::span<const loadgen::Sample> samples);
// The prompt and output token counts of the measured ok requests, as their usage gave them
// (nearest-rank p50); nullopt when none carries usage.
std::optional<TokenEvidence> token_evidence(std::span<const loadgen::Sample> samples);
// The measured requests that failed, grouped by HTTP status and the server's own message (at most
// kFailureGroups groups, most frequent first, each message cut to 200 bytes): "3 x HTTP 400:
// request (272547 tokens) exceeds the available context size (1024 tokens)". Empty when none failed.
inline constexpr std::size_t kFailureGroups = 5;
std::vector<std::string> failure_lines(std::span<const loadgen::Sample> samples);

// The "load" member of a point's evidence block. `coordinate`, `duration_s` (0: none) and the wall
// times are how the point was driven; the counts and rates follow from the samples: warm-up and
// measured requests, the offered rate (open loop: measured requests over the span of their
// scheduled sends) and the achieved rate (measured requests over the span from the first measured
// send to the last measured completion).
struct LoadFigures {
  std::string coordinate_key;  // "concurrency" | "rate_rps"
  double coordinate = 0;
  bool open_loop = false;
  double duration_s = 0;
  std::string started_at, ended_at;
};
LoadEvidence load_evidence(std::span<const loadgen::Sample> samples, const LoadFigures& f);

// The "cache" member: how much of the point's prompts the server served from its prefix cache,
// against what the workload declares shared (docs/SWEEP.md "Prompts per point"). From the
// responses' own usage.cached_tokens when any measured response carries it, else from the
// server's prefix-cache counters (hits over queries, `server` evidence); `carryover` when the
// cached tokens exceed the declared share plus kCacheAllowanceTokens per request (a chat template's
// leading tokens, a cache block's rounding): the point was served from a cache an earlier point, or
// something else, filled.
inline constexpr std::int64_t kCacheAllowanceTokens = 16;
struct CacheDeclaration {
  std::string prompts;               // distinct_per_point | same_every_point
  double declared_shared_share = 0;  // of the point's measured prompt bytes (repeats within the point count whole)
  std::optional<CacheReset> reset;   // how the cache was reset before the point, if it was
};
CacheEvidence cache_evidence(std::span<const loadgen::Sample> samples, const CacheDeclaration& d,
                             const boost::json::object* server_evidence);

// The steady-state window: from the first measured send to the last measured send (after it the
// load only drains: fewer requests in flight than the point asks for), and the output tokens the
// measured requests generated inside it (each request's first token when it came, the others
// spread evenly from it to the request's end), over its length; `completed_requests` those that
// ended inside it. Not measured when the window is empty or no token came in it.
//
// Receipts written before 2026-12-06 counted the tokens of the requests that completed inside the
// window (steady_state_by_completions, their `rule` says which; `sweep verify` re-derives each by
// its own): a point of few requests per slot lost the tokens of every request still running at the
// last send, and the ramp before the first completion (a sweep of 24 requests at concurrency 16
// read 131.7 tok/s steady against 352.1 over the whole point).
inline constexpr std::string_view kSteadyStateRule =
    "output tokens generated between the first and the last measured send (each measured request's first token "
    "when it came, the others spread evenly from it to the request's end), over that span";
inline constexpr std::string_view kSteadyStateRuleByCompletions =
    "output tokens of measured requests completing between the first and the last measured send, over that span";
SteadyStateEvidence steady_state_evidence(std::span<const loadgen::Sample> samples);
SteadyStateEvidence steady_state_by_completions(std::span<const loadgen::Sample> samples);

}  // namespace mpo::sweep

namespace mpo::sweep {
// The prefix-cache hit rate of a point as a ScalarMetric, from the server evidence block's
// counter deltas (hits / queries over the point, every series summed); null when not measured.
std::optional<ScalarMetric> prefix_hit_rate_metric(const boost::json::object& server_evidence);
}  // namespace mpo::sweep
