// The implementation of proxy/timing.hpp. When the bytes of a request and of its response reached
// the proxy's sockets (pure).
#include "proxy/timing.hpp"

#include <algorithm>

namespace mpo::proxy {

RxStamp stamp_read(std::optional<std::int64_t> rx_wall_ns, std::int64_t now_wall_ns, std::int64_t now_steady_us,
                   double max_lag_us) {
  if (!rx_wall_ns || *rx_wall_ns <= 0) return loop_stamp(now_wall_ns / 1000, now_steady_us);
  const double lag_us = std::max(0.0, static_cast<double>(now_wall_ns - *rx_wall_ns) / 1000.0);
  if (lag_us > max_lag_us) return loop_stamp(now_wall_ns / 1000, now_steady_us);
  RxStamp s;
  s.kernel = true;
  s.lag_us = lag_us;
  const auto lag_whole_us = static_cast<std::int64_t>(lag_us);
  s.steady_us = now_steady_us - lag_whole_us;
  s.wall_us = now_wall_ns / 1000 - lag_whole_us;
  return s;
}

RxStamp loop_stamp(std::int64_t now_wall_us, std::int64_t now_steady_us) {
  RxStamp s;
  s.steady_us = now_steady_us;
  s.wall_us = now_wall_us;
  return s;
}

void LineTiming::note(const RxStamp& s) {
  seen_ = true;
  if (!s.kernel) {
    all_kernel_ = false;
    return;
  }
  if (!any_kernel_ || s.lag_us > max_lag_us_) {
    max_lag_us_ = s.lag_us;
    max_lag_arrival_us_ = s.steady_us;
    max_lag_quiet_us_ = s.quiet_us;
  }
  any_kernel_ = true;
}

std::optional<double> LineTiming::max_lag_ms() const {
  if (!any_kernel_) return std::nullopt;
  return max_lag_us_ / 1000.0;
}

std::optional<double> LineTiming::max_lag_quiet_ms() const {
  if (!any_kernel_ || max_lag_quiet_us_ < 0) return std::nullopt;
  return max_lag_quiet_us_ / 1000.0;
}

std::int64_t LoopReads::longest_quiet_us(std::int64_t from_us, std::int64_t to_us) const {
  std::int64_t longest = 0;
  std::int64_t later = to_us;  // the read after the stretch being measured
  bool first_known = true;     // the first read after `from_us` is among the kept
  std::size_t looked = 0;
  for (std::uint64_t i = count_; i > 0; --i, ++looked) {
    if (looked == kKept) {
      first_known = false;
      break;
    }
    const std::int64_t t = at_[(i - 1) % kKept];
    if (t <= from_us) break;
    longest = std::max(longest, later - t);
    later = t;
  }
  if (first_known) longest = std::max(longest, later - from_us);  // from the arrival to that read
  return std::max<std::int64_t>(longest, 0);
}

std::optional<std::int64_t> LineTiming::max_lag_arrival_steady_us() const {
  if (!any_kernel_) return std::nullopt;
  return max_lag_arrival_us_;
}

}  // namespace mpo::proxy
