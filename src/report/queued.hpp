// Requests that queued part of the time (docs/REPORT.md "A queue at times"). The ranking reads
// medians: a run whose load came and went (a sweep's points in one ledger, a production day's peak)
// can have a third of its requests wait a second for a slot while its median request waited for
// none, and "no candidate crosses" would hide where those requests' time went. Where the engine's own
// numbers split each request's TTFT (llama.cpp's timings.prompt_ms, vLLM's spans), the requests that
// waited past the queueing threshold before the engine began their prompt are counted, set against
// the others, and dated. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/stats.hpp"

namespace mpo::report {

inline constexpr std::size_t kMinQueuedRequests = 3;  // a finding needs as many that waited
inline constexpr double kMinQueuedShare = 0.1;        // and as large a share of the requests split

// One request as the engine's split of its TTFT tells it.
struct QueueWait {
  double wait_ms = 0;  // before the engine began the prompt (or the engine's own queue time)
  double ttft_ms = 0;
  std::int64_t started_at_us = 0;   // 0: unknown
  std::optional<double> in_flight;  // requests in flight at the proxy when it started
};

struct QueuedAtTimes {
  double threshold_ms = 0;
  std::size_t n = 0, of = 0;  // the requests that waited past the threshold, of those split
  Summary wait_ms;            // theirs
  double ttft_p50_ms = 0, others_ttft_p50_ms = 0;
  std::optional<double> in_flight_p50, others_in_flight_p50;  // where every request says
  std::int64_t first_start_us = 0, last_start_us = 0;         // 0: unknown
};

// Whether `n` of `of` requests that waited past the threshold make a finding: kMinQueuedRequests and
// kMinQueuedShare of them, and not all (some to compare with, and a median that did not wait).
bool enough_queued(double n, double of);

// The requests whose wait exceeded `threshold_ms`, where at least kMinQueuedRequests and
// kMinQueuedShare of them did and some did not; nullopt otherwise.
std::optional<QueuedAtTimes> queued_at_times(std::span<const QueueWait> waits, double threshold_ms);

// "16 of 37 requests (43%) waited more than 500 ms before ..." (`what`: how the wait was measured,
// e.g. "llama.cpp timings.prompt_ms: TTFT - prompt_ms"), and a short form for a candidate's evidence.
std::string queued_at_times_sentence(const QueuedAtTimes& q, std::string_view what);
std::string queued_at_times_evidence(const QueuedAtTimes& q);
// "; they started with 3 requests already in flight at this proxy p50, the others with 0; they
// started between 06:59:02 and 06:59:08": what a finding "at times" says of its requests' load and
// time, each part where known (also report/slow_decode.hpp's).
std::string at_times_context(std::optional<double> in_flight_p50, std::optional<double> others_in_flight_p50,
                             std::int64_t first_start_us, std::int64_t last_start_us);
// What the sentences end with: why the ranking does not call it queueing, and what it is.
std::string_view queued_at_times_meaning();

}  // namespace mpo::report
