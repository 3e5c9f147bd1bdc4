// Requests that decoded slowly part of the time (docs/REPORT.md "Decode slow at times"). The
// ranking reads medians: a run whose load came and went can have a fifth of its streams decode at
// 150 ms a token while its median stream decoded at 30, and "nothing looks like a bottleneck" would
// hide where those streams' time went. The streams whose TPOT passed the decode threshold are
// counted (where at least kMinQueuedRequests and kMinQueuedShare of them did, and not all), set
// against the others (their TPOT, the requests in flight at the proxy when they started) and dated.
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "core/stats.hpp"
#include "report/interference.hpp"
#include "report/rows.hpp"

namespace mpo::report {

inline constexpr double kTpotThresholdMs = 100;  // decode: 10 tokens/s per stream (the ranking's)

struct SlowDecode {
  double threshold_ms = 0;
  std::string source;         // where each request's time per token came from
  std::size_t n = 0, of = 0;  // the requests past the threshold, of those with a time per token
  Summary tpot_ms;            // theirs
  double others_tpot_p50_ms = 0;
  std::optional<double> in_flight_p50, others_in_flight_p50;  // where every request says
  std::int64_t first_start_us = 0, last_start_us = 0;         // 0: unknown
  // Of the n, those that decoded while other requests' prompts were read (report/interference.hpp),
  // where the engine's prompt windows are known (`prompts_source`); nullopt otherwise.
  std::optional<std::size_t> behind_prompts;
  std::string prompts_source;
};

// The streamed requests' TPOT (the proxy's: from the first content event to the last), or where no
// request in `rs` has one, the engine's own decode per token of those not streamed (llama.cpp's
// timings.predicted_ms over the tokens after the first); nullopt where too few or all of them passed
// `threshold_ms` (a median past it is the decode candidate's to judge).
// `overlap`: the group's prompt windows, to tell which of them decoded behind other prompts.
std::optional<SlowDecode> slow_decode_at_times(const RowList& rs, double threshold_ms,
                                               const PrefillOverlap* overlap = nullptr);

// "5 of 26 requests (19%) decoded slower than 100 ms a token (...): ..." and what it means; a short
// form for the decode candidate's evidence.
std::string slow_decode_sentence(const SlowDecode& d);
std::string slow_decode_evidence(const SlowDecode& d);

}  // namespace mpo::report
