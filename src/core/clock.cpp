// The system clock, and the time documents are dated with (core/clock.hpp).
#include "core/clock.hpp"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace mpo {

std::int64_t SystemClock::steady_us() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

std::int64_t SystemClock::wall_us() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

const SystemClock& SystemClock::instance() {
  static const SystemClock clock;
  return clock;
}

ClockReading read_clocks_together() {
  using namespace std::chrono;
  ClockReading best;
  auto best_gap = steady_clock::duration::max();
  for (int attempt = 0; attempt < 4; ++attempt) {
    const auto before = steady_clock::now();
    const auto wall = system_clock::now();
    const auto after = steady_clock::now();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, wall};
    }
    if (best_gap <= microseconds(20)) break;
  }
  return best;
}

std::int64_t ClockReading::steady_us() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady.time_since_epoch()).count();
}

std::int64_t ClockReading::wall_us() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(wall.time_since_epoch()).count();
}

std::int64_t ClockReading::wall_ns() const {
  using namespace std::chrono;
  return duration_cast<nanoseconds>(wall.time_since_epoch()).count();
}

std::int64_t document_time_us() {
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    std::int64_t seconds = 0;
    const char* end = epoch + std::strlen(epoch);
    const auto [at, ec] = std::from_chars(epoch, end, seconds);
    // Only a whole, non-negative number of seconds that fits in microseconds; anything else is
    // ignored, as reproducible-builds.org asks of tools.
    if (ec == std::errc() && at == end && at != epoch && seconds >= 0 && seconds < 9'000'000'000'000) {
      return seconds * 1'000'000;
    }
  }
  return SystemClock::instance().wall_us();
}

}  // namespace mpo
