// Clocks behind an interface so tests can drive time. Steady time measures durations; wall time
// stamps records. Both are expressed as integer microseconds.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace mpo {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic microseconds since an arbitrary origin; never goes backwards.
  virtual std::int64_t steady_us() const = 0;
  // Microseconds since the Unix epoch (UTC).
  virtual std::int64_t wall_us() const = 0;
};

class SystemClock final : public Clock {
 public:
  std::int64_t steady_us() const override;
  std::int64_t wall_us() const override;
  static const SystemClock& instance();
};

// A clock that only moves when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t wall_us = 1'767'225'600'000'000, std::int64_t steady_us = 0)
      : wall_(wall_us), steady_(steady_us) {}
  std::int64_t steady_us() const override { return steady_.load(); }
  std::int64_t wall_us() const override { return wall_.load(); }
  void advance_us(std::int64_t d) {
    steady_ += d;
    wall_ += d;
  }

 private:
  std::atomic<std::int64_t> wall_;
  std::atomic<std::int64_t> steady_;
};

// The steady and the wall clock read at one moment, as near as a preemptible thread can: the
// steady clock is read on both sides of the wall clock and the pair is taken again (up to four
// times, keeping the tightest) when more than 20 µs passed between, so a time put together from
// one clock's start and the other's difference is not off by a preemption between two reads.
struct ClockReading {
  std::chrono::steady_clock::time_point steady;
  std::chrono::system_clock::time_point wall;
  std::int64_t steady_us() const;
  std::int64_t wall_us() const;
  std::int64_t wall_ns() const;
};
ClockReading read_clocks_together();

// The time a document (a report, a receipt, a facts page) says it was made: SOURCE_DATE_EPOCH
// (whole seconds since the epoch, the reproducible-builds convention) when it is set to one, so
// the same inputs give byte-identical outputs (the golden tests rely on it); otherwise now.
std::int64_t document_time_us();

}  // namespace mpo
