// The implementation of report/proxy_stalls.hpp (pure).
#include "report/proxy_stalls.hpp"

#include <algorithm>
#include <cmath>

namespace mpo::report {

std::optional<ProxyStalls> find_proxy_stalls(const RowList& rows) {
  struct Wait {
    std::int64_t arrived_us, read_us;
    double lag_ms;
    bool held_up;
  };
  // No line lasts 11 days: a larger lag or arrival is not a time (a hand-edited or damaged ledger)
  // and its line is left out, as converting it to microseconds would overflow.
  constexpr double kMostMs = 1e9;
  std::vector<Wait> waits;
  std::size_t timed = 0;
  for (const Row* r : rows) {
    if (r->proxy_lag_ms) ++timed;
    if (!r->proxy_lag_ms || *r->proxy_lag_ms < kProxyLagWarnMs) continue;
    if (!r->proxy_lag_at_ms) return std::nullopt;
    const double lag_ms = *r->proxy_lag_ms, at_ms = *r->proxy_lag_at_ms;
    if (!(lag_ms <= kMostMs) || !(std::abs(at_ms) <= kMostMs)) continue;
    const auto arrived = r->started_at_us + static_cast<std::int64_t>(at_ms * 1000);
    waits.push_back(
        {arrived, arrived + static_cast<std::int64_t>(lag_ms * 1000), lag_ms, r->lag_quiet == Row::kLagHeldUp});
  }
  if (waits.empty()) return std::nullopt;
  std::sort(waits.begin(), waits.end(), [](const Wait& a, const Wait& b) { return a.arrived_us < b.arrived_us; });
  ProxyStalls out;
  out.late_lines = waits.size();
  out.timed_lines = timed;
  // In arrival order, a wait joins the current stall while it arrived before every wait of that
  // stall was read (they share an instant); the first that arrived after one was read starts the
  // next. This greedy choice gives the fewest instants.
  std::int64_t first_read_us = 0;
  for (const Wait& w : waits) {
    if (w.held_up) ++out.held_up_lines;
    if (out.stalls.empty() || w.arrived_us > first_read_us) {
      out.stalls.push_back({w.arrived_us, w.read_us, w.lag_ms, 1, w.held_up});
      first_read_us = w.read_us;
      continue;
    }
    ProxyStall& s = out.stalls.back();
    s.to_us = std::max(s.to_us, w.read_us);
    s.longest_ms = std::max(s.longest_ms, w.lag_ms);
    ++s.lines;
    s.held_up = s.held_up && w.held_up;
    first_read_us = std::min(first_read_us, w.read_us);
  }
  // Stretches: stalls not held up, each within kStallSeparationMs of the next such.
  const auto apart_us = static_cast<std::int64_t>(kStallSeparationMs * 1000);
  std::size_t run = 0;
  const ProxyStall* last = nullptr;
  for (const ProxyStall& s : out.stalls) {
    if (s.held_up) {
      ++out.held_up_stalls;
      continue;
    }
    run = last != nullptr && s.from_us - last->to_us < apart_us ? run + 1 : 1;
    if (run >= kStallsInAStretch) out.stretch = true;
    last = &s;
  }
  out.most_lines_late = 2 * out.late_lines > out.timed_lines;
  return out;
}

}  // namespace mpo::report
