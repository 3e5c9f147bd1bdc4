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

TEST(BucketFinder, FindsWhatLowerBoundFindsFromTheTiniestValueToTheLargest) {
  // The bucket is found from the value's binary exponent and a step or two (issue 43): the bounds
  // the proxy and the simulator use, bounds many to an octave and bounds of either sign, against
  // values spread over 10^-12 to 10^12, each bound and power of two and their neighbours, subnormal
  // ones, the largest double, zero, negatives, NaN and the infinities.
  std::vector<std::vector<double>> bound_sets = {
      {std::begin(vllm_buckets::kItlBuckets), std::end(vllm_buckets::kItlBuckets)},
      {std::begin(vllm_buckets::kTtftBuckets), std::end(vllm_buckets::kTtftBuckets)},
      {std::begin(vllm_buckets::kLatencyBuckets), std::end(vllm_buckets::kLatencyBuckets)},
      {std::begin(vllm_buckets::kIterationBuckets), std::end(vllm_buckets::kIterationBuckets)},
      vllm_buckets::token_buckets(1'000'000),
      {-5, -0.5, 0, 1e-300, 3e-10, 1, 1e12},
      {},
  };
  std::vector<double> dense;  // forty bounds between 1 and 2: the walk from the octave's first
  for (int i = 0; i < 40; ++i) dense.push_back(1.0 + i / 40.0);
  bound_sets.push_back(dense);
  std::mt19937_64 random(43);
  std::uniform_real_distribution<double> exponent(-12, 12);
  for (const auto& bounds : bound_sets) {
    std::vector<double> values = {0.0,
                                  -0.0,
                                  -1.0,
                                  std::nan(""),
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::denorm_min(),
                                  std::numeric_limits<double>::min(),
                                  std::numeric_limits<double>::max()};
    for (const double b : bounds) {
      for (const double v : {b, std::nextafter(b, -1e308), std::nextafter(b, 1e308)}) values.push_back(v);
    }
    for (int k = -40; k <= 40; ++k) {
      const double p = std::ldexp(1.0, k);
      for (const double v : {p, std::nextafter(p, 0.0), std::nextafter(p, 1e308)}) values.push_back(v);
    }
    for (int i = 0; i < 20'000; ++i) values.push_back(std::pow(10.0, exponent(random)));
    const BucketFinder finder(bounds);
    for (const double v : values) {
      const auto expected =
          static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
      ASSERT_EQ(finder.index(bounds, v), expected) << v << " among " << bounds.size() << " bounds";
    }
  }
}

}  // namespace
}  // namespace mpo
