// The moments when the proxy read nothing (pure). A proxy line names its latest read: how late it
// was (`proxy_lag_ms`: the kernel's receive time -> the proxy's read) and when its bytes arrived
// (`proxy_lag_at_ms`, after the line's start). Reads late by kProxyLagWarnMs or more are grouped
// into stalls: the fewest instants such that every such read waited through one of them. Stalls
// apart mean the proxy kept up between them (its loop held up once, or its machine paused: on
// this project's two-vCPU virtual machine the host pauses both vCPUs for 3-18 ms, several times a
// minute, docs/BENCHMARKS.md); a stretch of stalls, each soon after the last, means it was behind
// throughout, a lack of CPU. docs/REPORT.md "The proxy's own lateness".
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "report/rows.hpp"

namespace mpo::report {

// The proxy's read lag (p99 over a group's lines) from which the report says the proxy's reads were
// late: its loop read bytes that long after they arrived (docs/REPORT.md).
inline constexpr double kProxyLagWarnMs = 1.0;

struct ProxyStall {
  std::int64_t from_us = 0;  // the earliest arrival of the bytes that waited (wall clock)
  std::int64_t to_us = 0;    // the latest read of them
  double longest_ms = 0;     // the largest lag among them
  std::size_t lines = 0;
  // Every line of it says its loop read nothing at all for most of its wait (Row::kLagHeldUp): the
  // loop was held up (descheduled, its machine paused, one long step), not behind with traffic.
  bool held_up = false;
};

struct ProxyStalls {
  std::size_t late_lines = 0;      // lines whose latest read waited kProxyLagWarnMs or more
  std::size_t timed_lines = 0;     // lines with a read lag at all
  std::vector<ProxyStall> stalls;  // in time order
  std::size_t held_up_stalls = 0;  // stalls held up (ProxyStall::held_up)
  std::size_t held_up_lines = 0;   // late lines whose wait was held up
  // A stretch: kStallsInAStretch stalls not held up, each beginning less than kStallSeparationMs
  // after the last ended (the loop kept falling behind its traffic). Held-up stalls make none: a
  // loop that read nothing while it waited was not behind (a virtual machine's host pausing it
  // several times a second makes such runs).
  bool stretch = false;
  // Most lines late: the proxy was late on the typical request, however the stalls fall (with few
  // lines, each shows only its latest read: sustained lateness looks like stalls apart; seen in
  // front of the real llama-server on two vCPUs, 15 of 24 lines late, 15 stalls, none in a stretch).
  bool most_lines_late = false;
  // Neither: the proxy read on time between the stalls and on most lines (the report's note, not
  // its warning).
  bool isolated() const { return !stretch && !most_lines_late; }
  // Most late lines were held up: the advice is a CPU of its own, not more CPU.
  bool mostly_held_up() const { return 2 * held_up_lines > late_lines; }
};

// Stalls closer than this make a stretch of lateness. A stall's own aftermath (the loop catching up
// with what queued) can make one more shortly after (seen: 1.2 ms, 37 ms after an 18 ms pause);
// a third means the loop kept falling behind.
inline constexpr double kStallSeparationMs = 100;
inline constexpr std::size_t kStallsInAStretch = 3;

// nullopt when no line's latest read waited kProxyLagWarnMs, or when one that did does not say when
// its bytes arrived (ledgers before the field): the report then judges by the p99 alone.
std::optional<ProxyStalls> find_proxy_stalls(const RowList& rows);

}  // namespace mpo::report
