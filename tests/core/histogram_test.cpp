// A histogram's buckets (core/histogram.hpp): a value goes in the first bucket whose upper bound it
// does not exceed (Prometheus' le), the last one past every bound: checked on bounds of every size,
// values on and around each bound, NaN and the infinities, for both kinds of histogram.
#include "core/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace mpo {
namespace {

TEST(Histogram, AValueGoesWhereLowerBoundPutsItForBoundsOfEverySize) {
  std::mt19937_64 random(43);
  std::uniform_real_distribution<double> spread(-1.0, 120.0);
  for (std::size_t n = 0; n <= 21; ++n) {
    std::vector<double> bounds;
    for (std::size_t i = 0; i < n; ++i) bounds.push_back(0.5 * static_cast<double>(i * i) + 0.25);
    std::vector<double> values = {std::nan(""), std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(), 0.0};
    for (const double b : bounds) {
      for (const double v : {b, std::nextafter(b, -1e9), std::nextafter(b, 1e9)}) values.push_back(v);
    }
    for (int i = 0; i < 500; ++i) values.push_back(spread(random));
    Histogram h(bounds);
    AtomicHistogram a(bounds);
    std::vector<std::uint64_t> expected(n + 1, 0);
    for (const double v : values) {
      h.observe(v);
      a.observe(v);
      ++expected[static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin())];
    }
    EXPECT_EQ(h.counts(), expected) << n << " bounds";
    Histogram merged(bounds);
    a.add_to(merged);
    EXPECT_EQ(merged.counts(), expected) << n << " bounds";
    EXPECT_EQ(h.count(), values.size());
  }
}

}  // namespace
}  // namespace mpo
