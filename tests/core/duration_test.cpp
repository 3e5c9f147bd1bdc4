#include "core/duration.hpp"

#include <gtest/gtest.h>

namespace mpo {
namespace {

TEST(Duration, UnitsAndBareSeconds) {
  EXPECT_EQ(*parse_duration_s("1s"), 1.0);
  EXPECT_EQ(*parse_duration_s("500ms"), 0.5);
  EXPECT_EQ(*parse_duration_s("250us"), 250e-6);
  EXPECT_EQ(*parse_duration_s("2m"), 120.0);
  EXPECT_EQ(*parse_duration_s("1h"), 3600.0);
  EXPECT_EQ(*parse_duration_s("1.5"), 1.5);
  EXPECT_EQ(*parse_duration_s("0"), 0.0);
}

TEST(Duration, RejectsWhatIsNotADuration) {
  for (const char* t : {"", "s", "-1s", "1d", "1 s", "fast", "1e3s", "nan"}) {
    auto d = parse_duration_s(t);
    ASSERT_FALSE(d.ok()) << t;
    EXPECT_EQ(d.error().code, "duration.syntax");
  }
}

}  // namespace
}  // namespace mpo
