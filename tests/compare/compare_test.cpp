// The shared comparison module (src/compare): the verdict rule both `report --baseline` and
// `sweep compare` give, the resampling they share, and the tables they print.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "compare/bootstrap.hpp"
#include "compare/change.hpp"
#include "compare/table.hpp"
#include "core/stats.hpp"

namespace mpo::compare {
namespace {

TEST(CompareVerdict, AnIntervalWhollyAboveZeroIsWorseForLatencyAndBetterForThroughput) {
  EXPECT_EQ(verdict_of(0.5, 2.0, false), "worse");
  EXPECT_EQ(verdict_of(0.5, 2.0, true), "better");
  EXPECT_EQ(verdict_of(-2.0, -0.5, false), "better");
  EXPECT_EQ(verdict_of(-2.0, -0.5, true), "worse");
  EXPECT_EQ(verdict_of(-0.5, 0.5, false), "no significant change");
  EXPECT_EQ(verdict_of(0.0, 0.5, false), "no significant change");  // touching zero is not a change
}

TEST(CompareVerdict, AQuantileNeedsFiveValuesBeyondIt) {
  EXPECT_FALSE(enough_for_quantile(9, 0.5));
  EXPECT_TRUE(enough_for_quantile(10, 0.5));
  EXPECT_FALSE(enough_for_quantile(499, 0.99));
  EXPECT_TRUE(enough_for_quantile(500, 0.99));
  EXPECT_TRUE(enough_for_quantile(100, 0.95));
}

TEST(CompareVerdict, BonferroniSplitsTheFamilysAlphaOverItsTests) {
  const Family f{0.05, 17};
  EXPECT_DOUBLE_EQ(f.alpha(), 0.05 / 17);
  EXPECT_NEAR(f.interval_level(), 0.99706, 1e-5);
}

TEST(CompareBootstrap, JudgeSetsThePercentileIntervalOfTheDeltas) {
  std::vector<double> deltas(1001);
  std::iota(deltas.begin(), deltas.end(), 0.0);  // 0..1000
  std::shuffle(deltas.begin(), deltas.end(), std::mt19937_64(5));
  Change c;
  judge(c, deltas, 0.1, false);
  EXPECT_DOUBLE_EQ(*c.ci_lo, 50.0);  // quantile_cont at 0.05 of 0..1000
  EXPECT_DOUBLE_EQ(*c.ci_hi, 950.0);
  EXPECT_EQ(c.verdict, "worse");
}

TEST(CompareBootstrap, ResampledQuantilesAreQuantilesOfADrawFromTheSample) {
  std::vector<double> sorted(200);
  std::iota(sorted.begin(), sorted.end(), 1.0);
  std::mt19937_64 rng(7);
  const double qs[] = {0.5, 0.9};
  const auto r = resampled_quantiles(sorted, qs, 400, rng);
  ASSERT_EQ(r.size(), 400u);
  double mean_median = 0;
  for (const auto& at : r) {
    ASSERT_EQ(at.size(), 2u);
    EXPECT_LE(at[0], at[1]);  // a resample's p50 never above its p90
    EXPECT_GE(at[0], 1.0);
    EXPECT_LE(at[1], 200.0);
    mean_median += at[0] / 400;
  }
  EXPECT_NEAR(mean_median, *quantile_cont_sorted(sorted, 0.5), 3.0);
  // A constant sample resamples to itself.
  const std::vector<double> flat(50, 4.0);
  for (const auto& at : resampled_quantiles(flat, qs, 20, rng)) EXPECT_EQ(at, (std::vector<double>{4.0, 4.0}));
}

TEST(CompareBootstrap, ReRunsAreDrawnWholeThenTheirRequests) {
  // Two runs: 3 requests and 7. A draw takes two runs with replacement, so it holds 6, 10 or 14
  // requests, each index inside the run it was drawn for.
  const std::vector<std::size_t> run_start{0, 3, 10};
  std::mt19937_64 rng(11);
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 200; ++i) {
    const auto idx = draw_requests(run_start, rng);
    sizes.push_back(idx.size());
    EXPECT_TRUE(idx.size() == 6 || idx.size() == 10 || idx.size() == 14) << idx.size();
    for (auto k : idx) EXPECT_LT(k, 10u);
  }
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes.front(), 6u);
  EXPECT_EQ(sizes.back(), 14u);
  // One run: its requests with replacement, always as many as it has.
  const std::vector<std::size_t> one{0, 5};
  EXPECT_EQ(draw_requests(one, rng).size(), 5u);
}

TEST(CompareBootstrap, NearestRankIsFaksRule) {
  EXPECT_EQ(nearest_rank({5, 1, 4, 2, 3}, 0.5), 3);   // ceil(2.5) = 3rd
  EXPECT_EQ(nearest_rank({5, 1, 4, 2, 3}, 0.99), 5);  // ceil(4.95) = 5th
  EXPECT_EQ(nearest_rank({5, 1, 4, 2, 3}, 0.0), 1);   // at least the first
}

TEST(CompareTable, ValuesAreWrittenInTheirMetricsUnit) {
  Change rate{"error_rate", 100, 100, 0.01, 0.035, 0.025, 0.005, 0.045, "worse", 0.01, true};
  Change tput{"throughput_tok_s", 60, 60, 239.94, 205.12, -34.82, -40.5, -30.1, "worse", {}, false};
  const Labels l{"n base / new", "baseline", "new", "baseline", "new", true};
  EXPECT_EQ(
      md_table({rate, tput}, l),
      "| metric | n base / new | baseline | new | change | interval | verdict |\n"
      "|---|---|---|---|---|---|---|\n"
      "| error_rate | 100 / 100 | 1.00% | 3.50% | +2.50pp | [+0.50pp, +4.50pp] | **worse**, beyond --max-regression |\n"
      "| throughput_tok_s | 60 / 60 | 239.9 | 205.1 | -34.8 | [-40.5, -30.1] | **worse** |\n");
  const std::string json = changes_json({rate}, l);
  EXPECT_NE(json.find("\"n_baseline\":100"), std::string::npos) << json;
  EXPECT_NE(json.find("\"beyond_bound\":true"), std::string::npos) << json;
  const Labels ab{"n A / B", "A", "B", "a", "b", false};
  const std::string ungated = changes_json({tput}, ab);
  EXPECT_NE(ungated.find("\"n_a\":60"), std::string::npos) << ungated;
  EXPECT_EQ(ungated.find("bound"), std::string::npos) << ungated;
  const std::string html = html_table({tput}, ab, "concurrency 2");
  EXPECT_NE(html.find("class=\"worse\""), std::string::npos) << html;
  EXPECT_EQ(html.find("**"), std::string::npos) << html;
}

}  // namespace
}  // namespace mpo::compare
