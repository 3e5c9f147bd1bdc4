#include "core/time.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>

#include "core/clock.hpp"

namespace mpo {
namespace {

TEST(Rfc3339, FormatsMicrosecondsInUtc) {
  EXPECT_EQ(format_rfc3339_us(0), "1970-01-01T00:00:00.000000Z");
  EXPECT_EQ(format_rfc3339_us(1'767'225'600'123'456), "2026-01-01T00:00:00.123456Z");
  EXPECT_EQ(format_rfc3339_us(951'782'400'000'001), "2000-02-29T00:00:00.000001Z");
  EXPECT_EQ(format_rfc3339_us(-1), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_rfc3339_us(253'402'300'799'999'999), "9999-12-31T23:59:59.999999Z");
  EXPECT_EQ(format_rfc3339_us(253'402'300'800'000'000), "10000-01-01T00:00:00.000000Z");  // past 4 digits
}

TEST(Rfc3339, EveryInstantReadsAsTheCLibrarysCalendarSaysWhicheverDayCameBefore) {
  // A thread keeps the last date's and the last second's text (issue 43): instants in the same
  // second, the same day, the next, back to an earlier one and far apart must each read as gmtime_r
  // says, to the microsecond.
  std::mt19937_64 random(43);
  std::int64_t us = 1'767'225'600'000'000;  // 2026-01-01
  for (int i = 0; i < 20'000; ++i) {
    switch (i % 5) {
      case 4: us += static_cast<std::int64_t>(random() % 300'000); break;        // microseconds on: one second, mostly
      case 0: us += static_cast<std::int64_t>(random() % 1'000'000'000); break;  // minutes on
      case 1: us += static_cast<std::int64_t>(random() % 200'000'000'000); break;  // a day or two on
      case 2: us -= static_cast<std::int64_t>(random() % 100'000'000'000); break;  // back
      default:
        us = static_cast<std::int64_t>(random() % 9'467'280'000'000'000ULL) - 2'208'988'800'000'000;
        break;  // 1900-2200
    }
    const std::time_t seconds = static_cast<std::time_t>(us >= 0 ? us / 1'000'000 : (us - 999'999) / 1'000'000);
    const auto micros = static_cast<int>(us - static_cast<std::int64_t>(seconds) * 1'000'000);
    std::tm tm{};
    ASSERT_NE(gmtime_r(&seconds, &tm), nullptr);
    char expected[64];
    const std::size_t n = std::strftime(expected, sizeof expected, "%Y-%m-%dT%H:%M:%S", &tm);
    std::snprintf(expected + n, sizeof expected - n, ".%06dZ", micros);
    ASSERT_EQ(format_rfc3339_us(us), expected) << us;
  }
}

TEST(Rfc3339, ParsesZuluOffsetsAndFractions) {
  EXPECT_EQ(*parse_rfc3339("2026-08-27T10:00:00Z"), 1'787'824'800'000'000);
  EXPECT_EQ(*parse_rfc3339("2026-08-27T12:00:00+02:00"), 1'787'824'800'000'000);
  EXPECT_EQ(*parse_rfc3339("2026-08-27T09:30:00.5-00:30"), 1'787'824'800'500'000);
  EXPECT_EQ(*parse_rfc3339("2026-08-27t10:00:00.123456789z"), 1'787'824'800'123'456);
}

TEST(Rfc3339, RoundTripsEveryFormattedValue) {
  for (std::int64_t us : {0LL, 1LL, 999'999LL, 1'787'824'800'123'456LL, 4'102'444'799'999'999LL}) {
    EXPECT_EQ(*parse_rfc3339(format_rfc3339_us(us)), us);
  }
}

// The canonical form (ours, 27 characters, Z) is read by a fast path; the same instant written
// with a +00:00 offset goes through the general parser. They must agree on every day of a span
// with leap years, century rules and year ends, and the fast path must not accept what the
// general parser rejects.
TEST(Rfc3339, TheCanonicalFormAgreesWithTheGeneralParser) {
  for (std::int64_t us = -86'400'000'000LL * 800; us < 86'400'000'000LL * 60'000; us += 86'399'999'999LL + 7) {
    const std::string canonical = format_rfc3339_us(us);
    ASSERT_EQ(canonical.size(), 27u);
    const std::string offset = canonical.substr(0, 26) + "+00:00";
    ASSERT_EQ(*parse_rfc3339(canonical), us) << canonical;
    ASSERT_EQ(*parse_rfc3339(offset), us) << offset;
  }
  for (const char* bad :
       {"2026-02-29T00:00:00.000000Z", "2026-08-27T10:60:00.000000Z", "2026-08-27T1a:00:00.000000Z",
        "0000-01-01T00:00:00.000000Z", "2026-08-27T10:00:00.00000aZ", "2026-00-27T10:00:00.000000Z"}) {
    EXPECT_FALSE(parse_rfc3339(bad).ok()) << bad;
  }
  EXPECT_EQ(*parse_rfc3339("2026-08-27T10:00:60.000000Z"),
            *parse_rfc3339("2026-08-27T10:00:59.000000Z"));  // leap second
}

TEST(Rfc3339, RejectsMalformedAndOutOfRangeWithAMessage) {
  for (const char* bad :
       {"", "2026-08-27", "2026-08-27T10:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-08-27T24:00:00Z",
        "2026-08-27T10:00:00.Z", "2026-08-27T10:00:00+0200", "2026-08-27T10:00:00Zjunk"}) {
    auto r = parse_rfc3339(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_FALSE(r.error().message.empty());
  }
}

// Documents are dated from SOURCE_DATE_EPOCH where it holds whole seconds (reproducible outputs:
// the golden tests), and from the clock where it is unset or anything else.
TEST(DocumentTime, SourceDateEpochDatesDocumentsAndAnythingElseIsIgnored) {
  ASSERT_EQ(setenv("SOURCE_DATE_EPOCH", "1767225600", 1), 0);
  EXPECT_EQ(document_time_us(), 1'767'225'600'000'000);
  EXPECT_EQ(format_rfc3339_us(document_time_us()), "2026-01-01T00:00:00.000000Z");
  const std::int64_t before = SystemClock::instance().wall_us();
  for (const char* ignored : {"", "12x", "-5", "1.5", "99999999999999999999"}) {
    ASSERT_EQ(setenv("SOURCE_DATE_EPOCH", ignored, 1), 0);
    EXPECT_GE(document_time_us(), before) << "'" << ignored << "'";
  }
  ASSERT_EQ(unsetenv("SOURCE_DATE_EPOCH"), 0);
  EXPECT_GE(document_time_us(), before);
}

TEST(ClocksReadTogether, EachClockLiesBetweenReadsOfItTakenBeforeAndAfter) {
  using namespace std::chrono;
  for (int i = 0; i < 1000; ++i) {
    const auto steady_before = steady_clock::now();
    const auto wall_before = system_clock::now();
    const ClockReading r = read_clocks_together();
    const auto wall_after = system_clock::now();
    const auto steady_after = steady_clock::now();
    ASSERT_LE(steady_before, r.steady);
    ASSERT_LE(r.steady, steady_after);
    ASSERT_LE(wall_before, r.wall);
    ASSERT_LE(r.wall, wall_after);
    ASSERT_EQ(r.wall_us(), duration_cast<microseconds>(r.wall.time_since_epoch()).count());
    ASSERT_EQ(r.wall_ns() / 1000, r.wall_us());
    ASSERT_EQ(r.steady_us(), duration_cast<microseconds>(r.steady.time_since_epoch()).count());
  }
}

}  // namespace
}  // namespace mpo
