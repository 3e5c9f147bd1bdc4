#include "core/stats.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "support/fixtures.hpp"

namespace mpo {
namespace {

// The expected values were computed by DuckDB's quantile_cont; the Node test re-checks them
// against DuckDB, so this asserts bit-for-bit agreement with DuckDB.
TEST(QuantileCont, EqualsDuckDbOnEveryFixtureCase) {
  // Read with simdjson: its number parsing is exact (Boost.JSON 1.81's can be off by one ULP).
  simdjson::dom::parser parser;
  const simdjson::padded_string text(test::read_fixture("SYNTHETIC_quantile_cont_duckdb.json"));
  simdjson::dom::element doc = parser.parse(text);
  std::vector<double> qs;
  for (double q : doc["quantiles"].get_array()) qs.push_back(q);
  int checked = 0;
  for (simdjson::dom::element c : doc["cases"].get_array()) {
    std::vector<double> values;
    for (double v : c["values"].get_array()) values.push_back(v);
    std::vector<double> expected;
    for (double v : c["expected"].get_array()) expected.push_back(v);
    ASSERT_EQ(expected.size(), qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
      auto got = quantile_cont(values, qs[i]);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(*got, expected[i]) << "n=" << values.size() << " q=" << qs[i];
      ++checked;
    }
  }
  EXPECT_GE(checked, 40);
}

TEST(QuantileCont, IgnoresNaNAndRejectsEmptyOrBadQ) {
  EXPECT_EQ(*quantile_cont({std::nan(""), 1.0, 3.0}, 0.5), 2.0);
  EXPECT_FALSE(quantile_cont({}, 0.5).ok());
  EXPECT_FALSE(quantile_cont({std::nan("")}, 0.5).ok());
  EXPECT_FALSE(quantile_cont({1.0}, 1.5).ok());
}

TEST(Summarize, ReportsExactPercentilesOfFiniteValues) {
  auto s = summarize({5, 1, 4, 2, 3, std::numeric_limits<double>::infinity()});
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->n, 5u);
  EXPECT_EQ(s->p50, 3.0);
  EXPECT_EQ(s->p90, 4.6);
  EXPECT_EQ(s->max, 5.0);
  EXPECT_EQ(s->mean, 3.0);
  EXPECT_FALSE(summarize({}).has_value());
}

}  // namespace
}  // namespace mpo

namespace mpo {
namespace {

// summarize places order statistics without a full sort; its quantiles must equal the sorted ones
// bit for bit, on every size (positions collide for small n).
TEST(Summarize, EqualsQuantilesOfTheSortedValues) {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> dist(3, 1);
  std::vector<std::size_t> sizes{101, 199, 200, 1000, 4097};
  for (std::size_t n = 1; n <= 64; ++n) sizes.push_back(n);  // every collision of neighbouring positions
  for (std::size_t n : sizes) {
    std::vector<double> v(n);
    for (double& x : v) x = std::round(dist(rng) * 10) / 10;  // ties too
    auto s = summarize(v);
    ASSERT_TRUE(s.has_value());
    std::sort(v.begin(), v.end());
    EXPECT_EQ(s->min, v.front());
    EXPECT_EQ(s->max, v.back());
    EXPECT_EQ(s->p50, *quantile_cont_sorted(v, 0.50)) << n;
    EXPECT_EQ(s->p90, *quantile_cont_sorted(v, 0.90)) << n;
    EXPECT_EQ(s->p95, *quantile_cont_sorted(v, 0.95)) << n;
    EXPECT_EQ(s->p99, *quantile_cont_sorted(v, 0.99)) << n;
  }
}

// Past 4,096 values the order statistics come from a histogram of the values' top bits; it must
// give the sorted array's values bit for bit on every shape: spread, narrow (integers, one value
// in most places), negative and mixed signs, and huge ranges.
TEST(Summarize, LargeSetsOfEveryShapeEqualTheSortedValues) {
  std::mt19937_64 rng(23);
  std::lognormal_distribution<double> spread(4, 1.2);
  std::uniform_int_distribution<int> small(0, 31), coin(0, 9);
  std::normal_distribution<double> signed_values(0, 1e6);
  std::vector<std::pair<const char*, std::function<double()>>> shapes{
      {"lognormal latency", [&] { return spread(rng); }},
      {"small integers", [&] { return static_cast<double>(small(rng)); }},
      {"mostly one value", [&] { return coin(rng) == 0 ? spread(rng) : 42.0; }},
      {"constant", [] { return 7.5; }},
      {"both signs", [&] { return signed_values(rng); }},
      {"decades apart", [&] { return std::pow(10.0, static_cast<double>(small(rng)) - 10) * spread(rng); }},
  };
  for (const auto& [name, draw] : shapes) {
    for (std::size_t n : {4096u, 4097u, 10'001u, 250'000u}) {
      std::vector<double> v(n);
      for (double& x : v) x = draw();
      std::vector<double> sorted = v;
      std::sort(sorted.begin(), sorted.end());
      const auto s = summarize_in_place(v);
      ASSERT_TRUE(s.has_value());
      EXPECT_EQ(s->min, sorted.front()) << name << " " << n;
      EXPECT_EQ(s->max, sorted.back()) << name << " " << n;
      EXPECT_EQ(s->p50, *quantile_cont_sorted(sorted, 0.50)) << name << " " << n;
      EXPECT_EQ(s->p90, *quantile_cont_sorted(sorted, 0.90)) << name << " " << n;
      EXPECT_EQ(s->p95, *quantile_cont_sorted(sorted, 0.95)) << name << " " << n;
      EXPECT_EQ(s->p99, *quantile_cont_sorted(sorted, 0.99)) << name << " " << n;
    }
  }
}

// In place, on memory with NaN and infinities among the values: the summary of the finite ones,
// their mean summed in their order.
TEST(Summarize, InPlaceSkipsNonFiniteValuesAndMatchesTheCopy) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0, 100);
  std::vector<double> finite, mixed;
  for (int i = 0; i < 997; ++i) {
    const double x = u(rng);
    finite.push_back(x);
    mixed.push_back(x);
    if (i % 7 == 0) mixed.push_back(std::numeric_limits<double>::quiet_NaN());
    if (i % 11 == 0)
      mixed.push_back(i % 2 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  }
  const auto a = summarize(finite);
  const auto b = summarize_in_place(mixed);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->n, b->n);
  EXPECT_EQ(a->mean, b->mean);
  EXPECT_EQ(a->min, b->min);
  EXPECT_EQ(a->max, b->max);
  EXPECT_EQ(a->p50, b->p50);
  EXPECT_EQ(a->p90, b->p90);
  EXPECT_EQ(a->p95, b->p95);
  EXPECT_EQ(a->p99, b->p99);
  std::vector<double> none{std::numeric_limits<double>::quiet_NaN()};
  EXPECT_FALSE(summarize_in_place(none).has_value());
}

}  // namespace
// A 95% interval's multiplier: the table's rows, the wider row between two, the normal's 1.96 far out.
TEST(StudentT, TheQuantileIsTheTablesAndWidensBetweenRows) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(2), 4.303);
  EXPECT_DOUBLE_EQ(student_t_975(10), 2.228);
  EXPECT_DOUBLE_EQ(student_t_975(11), 2.228);  // between 10 (2.228) and 12 (2.179): the wider
  EXPECT_DOUBLE_EQ(student_t_975(83), 2.000);
  EXPECT_DOUBLE_EQ(student_t_975(100000), 1.962);
  EXPECT_TRUE(std::isinf(student_t_975(0)));
  for (std::size_t df = 1; df < 2000; ++df) EXPECT_GE(student_t_975(df), student_t_975(df + 1)) << df;
}

}  // namespace mpo
