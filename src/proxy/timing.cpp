// The implementation of proxy/timing.hpp. When the bytes of a request and of its response reached
// the proxy's sockets (pure).
#include "proxy/timing.hpp"

#include <algorithm>
#include <cmath>

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

namespace {

// Microseconds as milliseconds to the nanosecond, what the clocks measured: the double nearest
// n / 10^6, which the ledger writes as its few digits ("3.774754"). Dividing the microseconds by 1000
// as they are can land beside it ("3.7747539999999997", the ledger's longest text for no added
// meaning, and a float search per line instead of the writer's millionths).
double ms_to_the_ns(double us) { return std::round(us * 1000.0) / 1e6; }

}  // namespace

std::optional<double> LineTiming::max_lag_ms() const {
  if (!any_kernel_) return std::nullopt;
  return ms_to_the_ns(max_lag_us_);
}

std::optional<double> LineTiming::max_lag_quiet_ms() const {
  if (!any_kernel_ || max_lag_quiet_us_ < 0) return std::nullopt;
  return ms_to_the_ns(max_lag_quiet_us_);
}

namespace {

// The first of lo .. hi - 1 for which `after` holds (it holds for all after it), or hi: a binary
// search over numbers, not iterators (std::views::iota with std::ranges::partition_point does not
// build under clang 14 with libstdc++ 12, the sanitizer build's).
template <typename Pred>
std::uint64_t first_where(std::uint64_t lo, std::uint64_t hi, Pred after) {
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (after(mid)) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

}  // namespace

std::int64_t LoopReads::longest_quiet_us(std::int64_t from_us, std::int64_t to_us) const {
  if (count_ == 0) return std::max<std::int64_t>(to_us - from_us, 0);
  const std::uint64_t oldest = count_ > kKept ? count_ - kKept : 0;
  // The first kept read after `from_us` (times only grow).
  const std::uint64_t first = first_where(oldest, count_, [&](std::uint64_t n) { return at_[n % kKept] > from_us; });
  if (first == count_) return std::max<std::int64_t>(to_us - std::max(from_us, at_[(count_ - 1) % kKept]), 0);
  std::int64_t longest = to_us - at_[(count_ - 1) % kKept];  // after the newest read
  // The stretches between reads after `first`: the longest is that of the first read after it
  // among longest_.
  const std::uint64_t at = first_where(bottom_, top_, [&](std::uint64_t i) { return longest_[i % kKept] > first; });
  if (at < top_) longest = std::max(longest, gap_[longest_[at % kKept] % kKept]);
  // From the arrival to the first read after it, when that read is the first after it of all.
  if (first > oldest || count_ <= kKept) longest = std::max(longest, at_[first % kKept] - from_us);
  return std::max<std::int64_t>(longest, 0);
}

std::optional<std::int64_t> LineTiming::max_lag_arrival_steady_us() const {
  if (!any_kernel_) return std::nullopt;
  return max_lag_arrival_us_;
}

}  // namespace mpo::proxy
