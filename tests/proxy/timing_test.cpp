#include "proxy/timing.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "proxy/first_reads.hpp"

namespace mpo::proxy {
namespace {

constexpr std::int64_t kWallNs = 1'767'225'600'000'000'000;  // 2026-01-01T00:00:00Z
constexpr std::int64_t kSteadyUs = 5'000'000;

TEST(Timing, AKernelStampMovesOntoTheSteadyClockThroughTheLagOfItsRead) {
  // The bytes reached the socket 3.25 ms before the loop read them.
  const auto s = stamp_read(kWallNs - 3'250'000, kWallNs, kSteadyUs);
  EXPECT_TRUE(s.kernel);
  EXPECT_DOUBLE_EQ(s.lag_us, 3250.0);
  EXPECT_EQ(s.steady_us, kSteadyUs - 3250);
  EXPECT_EQ(s.wall_us, kWallNs / 1000 - 3250);
}

TEST(Timing, NoKernelStampIsTheLoopsClock) {
  const auto s = stamp_read(std::nullopt, kWallNs, kSteadyUs);
  EXPECT_FALSE(s.kernel);
  EXPECT_EQ(s.steady_us, kSteadyUs);
  EXPECT_EQ(s.wall_us, kWallNs / 1000);
  EXPECT_EQ(s.lag_us, 0);
  EXPECT_FALSE(stamp_read(0, kWallNs, kSteadyUs).kernel);  // the kernel's "no timestamp"
}

TEST(Timing, AReceiveTimeAfterTheReadIsLagZeroAndAStaleOneIsNotTrusted) {
  // The wall clock stepped back between the packet and the read.
  const auto back = stamp_read(kWallNs + 2'000'000, kWallNs, kSteadyUs);
  EXPECT_TRUE(back.kernel);
  EXPECT_EQ(back.lag_us, 0);
  EXPECT_EQ(back.steady_us, kSteadyUs);
  // Older than a minute: a stale timestamp or a stepped clock, not the proxy's lateness.
  const auto stale = stamp_read(kWallNs - 120'000'000'000, kWallNs, kSteadyUs);
  EXPECT_FALSE(stale.kernel);
  EXPECT_EQ(stale.steady_us, kSteadyUs);
}

TEST(Timing, ALineIsKernelRxOnlyWhenEveryReadWas) {
  LineTiming all;
  all.note(stamp_read(kWallNs - 100'000, kWallNs, kSteadyUs));
  all.note(stamp_read(kWallNs - 2'500'000, kWallNs, kSteadyUs));
  all.note(stamp_read(kWallNs - 40'000, kWallNs, kSteadyUs));
  EXPECT_EQ(all.basis(), kKernelRx);
  ASSERT_TRUE(all.max_lag_ms());
  EXPECT_DOUBLE_EQ(*all.max_lag_ms(), 2.5);

  LineTiming mixed = all;
  mixed.note(loop_stamp(kWallNs / 1000, kSteadyUs));
  EXPECT_EQ(mixed.basis(), kLoop);
  EXPECT_DOUBLE_EQ(*mixed.max_lag_ms(), 2.5);  // the lag that was measured is still said

  LineTiming answered_by_us = all;
  answered_by_us.note_loop();
  EXPECT_EQ(answered_by_us.basis(), kLoop);

  LineTiming none;
  EXPECT_EQ(none.basis(), kLoop);
  EXPECT_FALSE(none.max_lag_ms());
  none.note(loop_stamp(0, 0));
  EXPECT_FALSE(none.max_lag_ms());
}

// A lag measured in nanoseconds is said to the nanosecond: 3,774,754 ns is 3.774754 ms, the ledger's
// seven digits, not the double beside it (3.7747539999999997, what dividing the microseconds by
// 1,000 gave: the ledger wrote that text).
TEST(Timing, ALagIsSaidToTheNanosecond) {
  const std::pair<std::int64_t, std::string_view> lags[] = {
      {3'774'754, "3.774754"}, {4'510'292, "4.510292"}, {1'037'071, "1.037071"}, {65'505, "0.065505"}};
  for (const auto& [lag_ns, text] : lags) {
    LineTiming line;
    auto late = stamp_read(kWallNs - lag_ns, kWallNs, kSteadyUs);
    late.quiet_us = late.lag_us;
    line.note(late);
    char written[32];
    ASSERT_TRUE(line.max_lag_ms());
    EXPECT_EQ(std::string_view(written, json_number_text(written, *line.max_lag_ms())), text);
    ASSERT_TRUE(line.max_lag_quiet_ms());
    EXPECT_EQ(std::string_view(written, json_number_text(written, *line.max_lag_quiet_ms())), text);
  }
}

TEST(LoopReads, ALoopBusyWithOtherReadsHasOnlyShortQuietStretches) {
  // Bytes arrived at 1,000 µs and were read at 5,000: the loop read other sockets every 100 µs in
  // between (a backlog of traffic), so no stretch of the wait was quiet for longer than that.
  LoopReads reads;
  reads.record(900);
  for (std::int64_t t = 1'050; t < 5'000; t += 100) reads.record(t);
  EXPECT_EQ(reads.longest_quiet_us(1'000, 5'000), 100);
}

TEST(LoopReads, ALoopHeldUpReadsNothingForMostOfTheWait) {
  // Read at 800 and 900, then nothing until 4,600 (a pause), two reads catching up, the late read
  // at 5,000: the quiet stretch is 1,000 -> 4,600 (from the bytes' arrival to the next read).
  LoopReads reads;
  for (std::int64_t t : {800, 900, 4'600, 4'700}) reads.record(t);
  EXPECT_EQ(reads.longest_quiet_us(1'000, 5'000), 3'600);
  // No read at all since the arrival: the whole wait was quiet.
  EXPECT_EQ(reads.longest_quiet_us(4'800, 6'000), 1'200);
  LoopReads fresh;
  EXPECT_EQ(fresh.longest_quiet_us(1'000, 3'000), 2'000) << "a loop that never read was quiet throughout";
}

TEST(LoopReads, MoreReadsThanKeptMeasureOnlyBetweenTheKeptOnes) {
  // 1,000 reads 1 µs apart after a long quiet start: only the last 256 are kept, so the quiet start
  // (arrival at 0, first read at 10,000) is not known and not reported; the loop read that often.
  LoopReads reads;
  for (std::int64_t t = 10'000; t < 11'000; ++t) reads.record(t);
  EXPECT_EQ(reads.longest_quiet_us(0, 11'000), 1);
}

TEST(LoopReads, AgreesWithReadingEveryKeptReadForAnyWait) {
  // The answer from two binary searches against the plain one: every kept read after the arrival,
  // the stretches between them, the one after the newest and (when the first read after the
  // arrival is known) the one before it. Random times and waits, past the ring's size.
  std::mt19937_64 rng(43);
  LoopReads reads;
  std::vector<std::int64_t> all;
  std::int64_t t = 1000;
  const auto plain = [&](std::int64_t from, std::int64_t to) {
    const std::size_t oldest = all.size() > LoopReads::kKept ? all.size() - LoopReads::kKept : 0;
    std::size_t first = oldest;
    while (first < all.size() && all[first] <= from) ++first;
    if (first == all.size()) return std::max<std::int64_t>(to - from, 0);
    std::int64_t longest = to - all.back();
    for (std::size_t i = first + 1; i < all.size(); ++i) longest = std::max(longest, all[i] - all[i - 1]);
    if (first > oldest || all.size() <= LoopReads::kKept) longest = std::max(longest, all[first] - from);
    return std::max<std::int64_t>(longest, 0);
  };
  for (int step = 0; step < 3000; ++step) {
    // Mostly short steps, now and then a pause.
    t += rng() % 10 == 0 ? static_cast<std::int64_t>(rng() % 5000) : static_cast<std::int64_t>(rng() % 30);
    reads.record(t);
    all.push_back(t);
    for (int q = 0; q < 3; ++q) {
      const std::int64_t from = t - static_cast<std::int64_t>(rng() % 20000);
      const std::int64_t to = t + static_cast<std::int64_t>(rng() % 100);
      ASSERT_EQ(reads.longest_quiet_us(from, to), plain(from, to)) << "step " << step << " from " << from;
    }
  }
}

TEST(Timing, TheLineKeepsTheQuietStretchOfItsLatestRead) {
  LineTiming line;
  auto late = stamp_read(kWallNs - 4'000'000, kWallNs, kSteadyUs);
  late.quiet_us = 3'600;
  line.note(stamp_read(kWallNs - 100'000, kWallNs, kSteadyUs));
  EXPECT_FALSE(line.max_lag_quiet_ms()) << "a read on time is not measured";
  line.note(late);
  line.note(stamp_read(kWallNs - 200'000, kWallNs, kSteadyUs));
  ASSERT_TRUE(line.max_lag_quiet_ms());
  EXPECT_DOUBLE_EQ(*line.max_lag_quiet_ms(), 3.6);
}

TEST(FirstReads, ReadsAtOnceUntilTwoFirstReadsInARowFoundNothing) {
  FirstReads f;
  EXPECT_FALSE(f.wait()) << "a new loop asks at once";
  f.read_at_once(false);
  EXPECT_FALSE(f.wait()) << "one connection whose request was late does not flip it";
  f.read_at_once(true);
  f.read_at_once(false);
  EXPECT_FALSE(f.wait());
  f.read_at_once(false);
  EXPECT_TRUE(f.wait()) << "two in vain in a row: the next connections wait for their first edge";
}

TEST(FirstReads, AWaitedReadTellsByWhenItsBytesCameWhetherAReadAtOnceWouldHaveFoundThem) {
  FirstReads f;
  f.read_at_once(false);
  f.read_at_once(false);
  ASSERT_TRUE(f.wait());
  const std::int64_t accepted = 1'000'000;
  f.waited(accepted + 40, accepted);  // came after the accept: waiting was right
  f.waited(accepted + 40, accepted);
  EXPECT_TRUE(f.wait());
  f.waited(accepted - 5, accepted);  // already there: at once would have found it
  EXPECT_TRUE(f.wait()) << "the score saturates at three: one such read does not flip it";
  f.waited(accepted, accepted);  // there at the accept itself
  EXPECT_FALSE(f.wait()) << "two in a row: back to reading at once";
}

}  // namespace
}  // namespace mpo::proxy
