// Reruns of one sweep (sweep/repeat.hpp): the spread of each point across runs, where the peak fell
// in each, and how to pool them. Invented receipts (tests/sweep/receipt_fixtures.hpp); the sweep that
// writes them is Sweep.RepeatedRunsEachHaveTheirOwnPromptsAndTheirSpreadIsSaid (tests/integration).
#include "sweep/repeat.hpp"

#include <gtest/gtest.h>

#include "receipt_fixtures.hpp"
#include "sweep/evaluate.hpp"

namespace mpo::sweep {
namespace {

SweepReceipt run(std::int64_t capacity, double e2e_at_1, double e2e_at_2) {
  auto r = fixtures::base(capacity);
  fixtures::add_point(r, 1, 50, e2e_at_1);
  fixtures::add_point(r, 2, 60, e2e_at_2);
  EXPECT_TRUE(evaluate_sweep(r).ok());
  return r;
}

TEST(SweepRepeat, EachPointsSpreadAcrossRunsAndWhereThePeakFell) {
  // Throughput = c x 100 tokens / e2e: run 1 peaks at 2 (100 vs 133.3 tok/s), run 2 at 1 (125 vs 100).
  const std::vector<SweepReceipt> runs = {run(8, 1000, 1500), run(8, 800, 2000)};
  const std::string md = repeat_markdown(runs, {"s.r1.json", "s.r2.json"});
  EXPECT_NE(md.find("# Sweep repeated: 2 runs of "), std::string::npos) << md;
  EXPECT_NE(md.find("| concurrency | tok/s per run | mean | spread |"), std::string::npos) << md;
  // (125 - 100) / 112.5
  EXPECT_NE(md.find("| 1 | 100.0, 125.0 | 112.5 | 22.2% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | 133.3, 100.0 | 116.7 | 28.6% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 of 2 |"), std::string::npos) << md;
  EXPECT_NE(md.find("- **largest spread**: 28.6% of throughput at concurrency 2"), std::string::npos) << md;
  EXPECT_NE(md.find("- **the peak moved**: at concurrency 2, 1 in the runs that found one"), std::string::npos) << md;
  EXPECT_NE(md.find("sweep compare s.r1.json,s.r2.json OTHER1.json"), std::string::npos) << md;
}

// The page says the same: the table, a line of throughput per run on one chart, the findings.
TEST(SweepRepeat, ThePageHasTheTableAChartOfEachRunAndTheFindings) {
  const std::vector<SweepReceipt> runs = {run(8, 1000, 1500), run(8, 800, 2000)};
  const std::string html = repeat_html(runs, {"s.r1.json", "s.r2.json"});
  EXPECT_NE(html.find("Sweep repeated: 2 runs of "), std::string::npos);
  EXPECT_NE(html.find(">22.2%</td>"), std::string::npos) << html;
  EXPECT_NE(html.find("Output token throughput, run by run"), std::string::npos);
  EXPECT_NE(html.find("run 2"), std::string::npos);
  EXPECT_NE(html.find("the peak moved: at concurrency 2, 1"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // a page with no scripts, as every page here
}

TEST(SweepRepeat, RunsThatAgreeSayNoMove) {
  const std::vector<SweepReceipt> runs = {run(8, 1000, 1500), run(8, 1000, 1500), run(8, 1000, 1500)};
  const std::string md = repeat_markdown(runs, {"a", "b", "c"});
  EXPECT_NE(md.find("| 1 | 100.0, 100.0, 100.0 | 100.0 | 0.0% |"), std::string::npos) << md;
  EXPECT_EQ(md.find("the peak moved"), std::string::npos) << md;
  EXPECT_EQ(repeat_markdown({}, {}), "");
}

}  // namespace
}  // namespace mpo::sweep
