// The implementation of report/queued.hpp.
#include "report/queued.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/time.hpp"

namespace mpo::report {
namespace {

double p50(std::vector<double> v) { return v.empty() ? 0 : summarize(std::move(v))->p50; }

std::string clock_of(std::int64_t us) { return format_rfc3339_us(us).substr(11, 8); }

}  // namespace

bool enough_queued(double n, double of) {
  return n >= static_cast<double>(kMinQueuedRequests) && n >= kMinQueuedShare * of && n < of;
}

std::optional<QueuedAtTimes> queued_at_times(std::span<const QueueWait> waits, double threshold_ms) {
  std::vector<double> wait, ttft, others_ttft, in_flight, others_in_flight;
  bool every_in_flight = true;
  std::int64_t first = 0, last = 0;
  bool every_start = true;
  for (const QueueWait& w : waits) {
    every_in_flight &= w.in_flight.has_value();
    if (w.wait_ms <= threshold_ms) {
      others_ttft.push_back(w.ttft_ms);
      if (w.in_flight) others_in_flight.push_back(*w.in_flight);
      continue;
    }
    wait.push_back(w.wait_ms);
    ttft.push_back(w.ttft_ms);
    if (w.in_flight) in_flight.push_back(*w.in_flight);
    every_start &= w.started_at_us > 0;
    first = first == 0 ? w.started_at_us : std::min(first, w.started_at_us);
    last = std::max(last, w.started_at_us);
  }
  if (!enough_queued(static_cast<double>(wait.size()), static_cast<double>(waits.size()))) return std::nullopt;
  QueuedAtTimes q;
  q.threshold_ms = threshold_ms;
  q.n = wait.size();
  q.of = waits.size();
  q.wait_ms = *summarize(std::move(wait));
  q.ttft_p50_ms = p50(std::move(ttft));
  q.others_ttft_p50_ms = p50(std::move(others_ttft));
  if (every_in_flight) {
    q.in_flight_p50 = p50(std::move(in_flight));
    q.others_in_flight_p50 = p50(std::move(others_in_flight));
  }
  if (every_start) {
    q.first_start_us = first;
    q.last_start_us = last;
  }
  return q;
}

std::string queued_at_times_sentence(const QueuedAtTimes& q, std::string_view what) {
  std::string out = fmt::format(
      "{} of {} requests ({:.0f}%) waited more than {:.0f} ms before the engine began their prompt ({}): {:.1f} ms "
      "p50, {:.1f} ms max, of a TTFT p50 of {:.1f} ms against {:.1f} ms for the others",
      q.n, q.of, 100.0 * static_cast<double>(q.n) / static_cast<double>(q.of), q.threshold_ms, what, q.wait_ms.p50,
      q.wait_ms.max, q.ttft_p50_ms, q.others_ttft_p50_ms);
  out += at_times_context(q.in_flight_p50, q.others_in_flight_p50, q.first_start_us, q.last_start_us);
  if (q.in_flight_p50 && q.others_in_flight_p50 && *q.in_flight_p50 <= *q.others_in_flight_p50) {
    // Not started under more of this proxy's load than the others: not a queue behind its requests.
    out +=
        ". They met no more of this proxy's requests than the others did, so what held them was not a queue behind "
        "its own traffic: clients that bypass the proxy, or the engine's own work before the prompt (its prompt "
        "cache, a request it was still reading); the median request waited for none of it, so the ranking, which "
        "weighs medians, does not call it queueing, and it is these requests' TTFT tail";
    return out;
  }
  out += queued_at_times_meaning();
  return out;
}

std::string at_times_context(std::optional<double> in_flight_p50, std::optional<double> others_in_flight_p50,
                             std::int64_t first_start_us, std::int64_t last_start_us) {
  std::string out;
  if (in_flight_p50 && others_in_flight_p50) {
    out +=
        fmt::format("; they started with {:.0f} requests already in flight at this proxy p50, the others with {:.0f}",
                    *in_flight_p50, *others_in_flight_p50);
  }
  if (first_start_us > 0) {
    // To the second, as said: "between 09:48:28 and 09:48:28" is "at 09:48:28".
    const std::string first = clock_of(first_start_us), last = clock_of(last_start_us);
    out += first == last ? fmt::format("; at {}", first) : fmt::format("; they started between {} and {}", first, last);
  }
  return out;
}

std::string_view queued_at_times_meaning() {
  return ". The median request waited for no slot, so the ranking, which weighs medians, does not call it "
         "queueing: the queue came and went with the load (as when more requests come at once than the engine has "
         "slots), and it is these requests' TTFT tail";
}

std::string queued_at_times_evidence(const QueuedAtTimes& q) {
  return fmt::format(
      "a queue at times: {} of {} requests waited more than {:.0f} ms ({:.1f} ms p50) before the "
      "engine began their prompt, TTFT p50 {:.1f} ms against {:.1f} ms for the others",
      q.n, q.of, q.threshold_ms, q.wait_ms.p50, q.ttft_p50_ms, q.others_ttft_p50_ms);
}

}  // namespace mpo::report
