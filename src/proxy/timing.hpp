// When the bytes of a request and of its response reached the proxy's sockets (pure). The proxy
// reads with the kernel's software receive timestamps (SO_TIMESTAMPNS): each read carries the time
// its bytes were queued on the socket, so TTFT, ITL and e2e do not grow when the event loop is
// busy and late to read. Where the kernel gives no timestamp (TLS upstreams, a socket option
// refused), the loop's own clock at the read stands in, and the line says so (`timing_basis`).
// docs/PROXY.md "Timestamps".
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mpo::proxy {

// One read's time on the proxy's steady clock (what the stream tap and the ledger's durations
// use) and on the wall clock, and how late the loop was to read it.
struct RxStamp {
  std::int64_t steady_us = 0;
  std::int64_t wall_us = 0;
  double lag_us = 0;    // read time minus the kernel's receive time; 0 on the loop basis
  bool kernel = false;  // from the kernel's receive timestamp
  // For a read late by kQuietFromUs or more: the longest stretch of that wait in which the loop
  // read nothing at all (LoopReads); -1 when not measured.
  double quiet_us = -1;
};

// The lag from which a read asks how its loop spent the wait (the report's threshold for a late
// read, kProxyLagWarnMs).
inline constexpr double kQuietFromUs = 1000;

// When a loop's latest stamped reads happened (the steady clock, µs), to tell how the loop spent
// the wait of a late read: a loop busy with other traffic reads all along the wait (its longest
// quiet stretch is short), one held up (descheduled for another process, its machine paused, or in
// one long step of its own) reads nothing for most of it. Recording a read costs a few stores; a
// late read's question two binary searches, however many reads it waited through (under load
// every read is late: at 1,000 streams on two vCPUs most wait 50 ms). docs/REPORT.md "The proxy's
// own lateness".
class LoopReads {
 public:
  static constexpr std::size_t kKept = 256;
  void record(std::int64_t steady_us) {  // inline: once per read on the loop
    const std::uint64_t n = count_++;
    const std::int64_t gap = n == 0 ? 0 : steady_us - at_[(n - 1) % kKept];
    at_[n % kKept] = steady_us;
    gap_[n % kKept] = gap;
    // At most one read leaves the kept window per read recorded.
    if (bottom_ < top_ && longest_[bottom_ % kKept] + kKept < count_) ++bottom_;
    while (top_ > bottom_ && gap_[longest_[(top_ - 1) % kKept] % kKept] <= gap) --top_;
    longest_[top_++ % kKept] = n;
  }
  // The longest stretch of (from_us, to_us) in which no recorded read happened. When more than
  // kKept reads came after `from_us`, only the stretches between the kept ones are known (a loop
  // that read that often was busy).
  std::int64_t longest_quiet_us(std::int64_t from_us, std::int64_t to_us) const;

 private:
  // Read n is at slot n % kKept: its time and the stretch before it (from the read before).
  std::array<std::int64_t, kKept> at_{}, gap_{};
  std::uint64_t count_ = 0;
  // The kept reads whose stretch before them is longer than every later read's, oldest first (so
  // the first of them after a read is the longest stretch after it): reads bottom_ to top_ - 1 of
  // this ring.
  std::array<std::uint64_t, kKept> longest_{};
  std::uint64_t bottom_ = 0, top_ = 0;
};

// A read's stamp. `rx_wall_ns`: the kernel's receive timestamp (CLOCK_REALTIME, ns), when the
// read brought one; `now_wall_ns`/`now_steady_us`: the clocks read right after the read. The
// kernel time moves onto the steady clock through the lag (now - rx) measured within this read,
// so a wall-clock step between reads cannot skew durations. A receive time after `now` (the wall
// clock stepped back during the read) counts as lag 0; one older than `max_lag_us` is not
// trusted (a stale timestamp) and the loop basis is used.
RxStamp stamp_read(std::optional<std::int64_t> rx_wall_ns, std::int64_t now_wall_ns, std::int64_t now_steady_us,
                   double max_lag_us = 60e6);
// The loop basis: the clocks at the read, no lag known.
RxStamp loop_stamp(std::int64_t now_wall_us, std::int64_t now_steady_us);

inline constexpr std::string_view kKernelRx = "kernel_rx";
inline constexpr std::string_view kLoop = "loop";

// What one ledger line's times rest on: `kernel_rx` when the request's arrival and every read of
// the response that fed a time (head, events, end) had a kernel timestamp, else `loop`; and the
// largest lag seen over those reads (the proxy's own lateness on this request).
class LineTiming {
 public:
  void note(const RxStamp& s);
  // A time that came from the loop's clock (an answer of our own, a read without a stamp).
  void note_loop() { all_kernel_ = false; }
  std::string_view basis() const { return seen_ && all_kernel_ ? kKernelRx : kLoop; }
  // nullopt when no read had a kernel timestamp.
  std::optional<double> max_lag_ms() const;
  // When the bytes of that latest read arrived (the steady clock); nullopt as max_lag_ms. With the
  // lag it places the read in time: the report finds the moments when the proxy read nothing
  // (docs/REPORT.md "The proxy's own lateness").
  std::optional<std::int64_t> max_lag_arrival_steady_us() const;
  // How much of that wait the loop read nothing at all (RxStamp::quiet_us), in ms; nullopt when
  // not measured (a lag under kQuietFromUs, or no kernel timestamp).
  std::optional<double> max_lag_quiet_ms() const;
  // The largest lag so far in µs (0 before any kernel-stamped read): a read must be later than this
  // to become the line's latest-largest (note), so only such a read need say how its wait was spent.
  double largest_lag_us() const { return any_kernel_ ? max_lag_us_ : 0; }

 private:
  bool seen_ = false, all_kernel_ = true, any_kernel_ = false;
  double max_lag_us_ = 0;
  double max_lag_quiet_us_ = -1;
  std::int64_t max_lag_arrival_us_ = 0;
};

}  // namespace mpo::proxy
