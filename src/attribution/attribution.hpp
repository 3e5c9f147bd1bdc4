// Server counter deltas joined to requests, only as far as the evidence allows (docs/FAK.md 3;
// fak's grades, counters, causes and decision order, with the improvements of its section 8.3).
// Pure: snapshots and request windows in, a graded attribution out.
//
// A counter delta between two scrapes is shared evidence: it covers every request the server
// instance served between them, observed or not. It reaches one request only when the window
// holds exactly that request (isolated-window) or the server itself tied the evidence to the
// request (request-correlated: a trace or request label, or what the server returned in that
// request's own response: usage.prompt_tokens_details.cached_tokens, llama.cpp timings.cache_n).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mpo::attribution {

// fak's closed list of counter names (the adapter adds ours: prefix_cache_queries,
// queue_time_seconds, prompt_tokens, generation_tokens).
inline constexpr const char* kFakCounters[] = {"requests", "prefix_cache_hits", "cache_evictions", "queue_events",
                                               "preemptions"};

struct Counter {
  double value = 0;
  std::optional<double> wrap_at;  // the counter's modulus when it wraps (none: a decrease is a reset)
};
using CounterSet = std::map<std::string, Counter>;

struct CorrelatedCounters {
  std::string source;  // request-label, trace (fak's trusted), response-usage, server-timings (ours)
  CounterSet counters;
};

// One scrape in neutral form.
struct MetricsSnapshot {
  std::string server_instance_id;  // URL, engine, models, process start time ("" unknown)
  std::int64_t started_at_us = 0;  // the scrape's request went out
  std::int64_t scraped_at_us = 0;  // its answer was read
  CounterSet counters;
  std::map<std::string, CorrelatedCounters> request_counters;
  bool stale = false;   // the scrape ended after the next one was due
  std::string failure;  // non-empty: the scrape failed (unreachable, timeout, parse...)
  // For the output: who answered.
  std::string source, engine;
  std::vector<std::string> models;
  std::optional<double> process_start_time_s;
};

struct RequestWindow {
  std::string request_id;
  std::int64_t started_at_us = 0;
  std::int64_t ended_at_us = 0;  // 0: still running
  // Evidence the server returned in this request's response (ours).
  std::optional<CorrelatedCounters> returned;
};

// A window's bounds, widened to the whole of both scrapes (a request that touches either counts),
// and whether a request overlaps them (a running one, ended_at_us 0, runs to the upper bound).
struct WindowBounds {
  std::int64_t lo = 0, hi = 0;
  bool overlaps(const RequestWindow& r) const {
    return r.started_at_us < hi && (r.ended_at_us == 0 ? hi : r.ended_at_us) > lo;
  }
};
WindowBounds window_bounds(const MetricsSnapshot& before, const MetricsSnapshot& after);

struct AttributionInput {
  std::optional<MetricsSnapshot> before, after;
  std::vector<RequestWindow> requests;
  std::string scrape_failure;
  std::int64_t observed_at_us = 0;  // staleness reference (0: no check)
  std::int64_t max_scrape_age_us = 0;
};

enum class CounterState { kOk, kWrapped, kReset, kUnavailable };
const char* to_string(CounterState s);

struct CounterDelta {
  CounterState state = CounterState::kUnavailable;
  double value = 0;  // meaningful for ok and wrapped
  bool usable() const { return state == CounterState::kOk || state == CounterState::kWrapped; }
};

struct MetricsDelta {
  std::string server_instance_id;
  std::int64_t scrape_started_at_us = 0, scrape_ended_at_us = 0;
  std::map<std::string, CounterDelta> counters;
  std::map<std::string, std::pair<std::string, std::map<std::string, CounterDelta>>> request_counters;
  std::vector<std::string> overlapping_request_ids;
  std::int64_t overlapping_observed_requests = 0;
  std::optional<double> background_unobserved_requests;  // only when the requests counter is usable
  std::vector<std::string> counter_resets, counter_wraps;
  std::string grade = "unavailable";
  std::string reason;
  std::vector<std::string> notes;  // ours: what fak does not flag (fewer server requests than observed)
};

struct RequestAttribution {
  std::string request_id, grade;
  std::vector<std::string> causes;
  std::string correlation_source;
  std::string reason;
  std::map<std::string, CounterState> cause_counters;  // ours: each cause counter's state (8.3 #22)
  std::map<std::string, double> magnitudes;            // ours: the deltas behind each cause
};

struct CohortAttribution {
  std::vector<std::string> request_ids;
  std::string grade;
  std::vector<std::string> causes;
  std::string reason;
  std::map<std::string, double> magnitudes;
};

struct AttributionResult {
  MetricsDelta delta;
  std::vector<RequestAttribution> requests;
  std::optional<CohortAttribution> cohort;
  std::vector<std::string> shared_causes;
  std::map<std::string, double> shared_magnitudes;
};

// fak's AttributeMetrics, deterministic for the same input (requests in any order).
AttributionResult attribute(const AttributionInput& in);

// The cause a counter stands for ("prefix_cache_hits" -> "prefix-cache-hit"), or nullptr.
const char* cause_of(std::string_view counter);
bool trusted_source(std::string_view source);

}  // namespace mpo::attribution
