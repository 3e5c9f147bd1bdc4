// The presentation layer (src/present): tick values people can read, log scales chosen where
// values span decades, the legend outside the plot, budgets drawn apart from the frame, hover
// values, tables with escaped and right-aligned cells, a page header that states validity.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "present/chart.hpp"
#include "present/page.hpp"
#include "support/html_page.hpp"

namespace mpo::present {
namespace {

using V = std::vector<double>;

TEST(Ticks, LinearTicksAreOneTwoOrFiveTimesAPowerOfTenAndEncloseTheRange) {
  EXPECT_EQ(ticks(0, 1275.3, Scale::kLinear, 5), (V{0, 500, 1000, 1500}));
  EXPECT_EQ(ticks(0, 1, Scale::kLinear, 5), (V{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(ticks(3, 97, Scale::kLinear, 5), (V{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(ticks(-12, 30, Scale::kLinear, 4), (V{-20, 0, 20, 40}));
  // A single value still gets an axis around it.
  const auto one = ticks(5, 5, Scale::kLinear, 5);
  EXPECT_LE(one.front(), 5);
  EXPECT_GE(one.back(), 5);
  EXPECT_GE(one.size(), 3u);
}

TEST(Ticks, ConcurrencyInPowersOfTwoGetsOneTickPerPower) {
  EXPECT_EQ(ticks(1, 16, Scale::kLog2), (V{1, 2, 4, 8, 16}));
  EXPECT_EQ(ticks(3, 40, Scale::kLog2), (V{2, 4, 8, 16, 32, 64}));
  // Many powers: every other one, still enclosing the range.
  const auto wide = ticks(1, 65536, Scale::kLog2);
  EXPECT_LE(wide.size(), 10u);
  EXPECT_EQ(wide.front(), 1);
  EXPECT_GE(wide.back(), 65536);
}

TEST(Ticks, LatencyOverDecadesGetsDecadesAndTwoAndFiveBetweenWhenFew) {
  EXPECT_EQ(ticks(5.4, 443, Scale::kLog10), (V{5, 10, 20, 50, 100, 200, 500}));
  EXPECT_EQ(ticks(0.3, 2900, Scale::kLog10), (V{0.1, 1, 10, 100, 1000, 10000}));
}

TEST(Ticks, LabelsAreShortAndPlain) {
  EXPECT_EQ(tick_label(0), "0");
  EXPECT_EQ(tick_label(0.25), "0.25");
  EXPECT_EQ(tick_label(40), "40");
  EXPECT_EQ(tick_label(1500), "1,500");
  EXPECT_EQ(tick_label(15000), "15k");
  EXPECT_EQ(tick_label(2500000), "2.5M");
  EXPECT_EQ(tick_label(-2000), "-2,000");
}

TEST(Ticks, LogScalesAreChosenWhereValuesSpanDecadesAndNeverForZeros) {
  EXPECT_EQ(scale_for({5, 10, 443}), Scale::kLog10);
  EXPECT_EQ(scale_for({100, 120, 300}), Scale::kLinear);
  EXPECT_EQ(scale_for({0, 10, 1000}), Scale::kLinear);  // a zero cannot sit on a log axis
  EXPECT_EQ(scale_for_counts({1, 2, 4, 8, 16}), Scale::kLog2);
  EXPECT_EQ(scale_for_counts({4, 6, 8}), Scale::kLinear);
  // Counts get no tick between whole numbers.
  EXPECT_EQ(ticks(1, 2, Scale::kLinear, 5, true), (V{1, 2}));
  EXPECT_EQ(ticks(0, 3, Scale::kLinear, 6, true), (V{0, 1, 2, 3}));
}

TEST(Chart, EverySeriesHasItsPointsTicksAndALegendEntryBesideThePlot) {
  Chart c("TTFT and ITL", Axis{"concurrency", Scale::kLog2}, Axis{"ms", Scale::kLog10});
  c.add({"TTFT p99", {{1, 5.7}, {2, 10.6}, {4, 12.8}, {8, 17}, {16, 160}}, Mark::kLineDots, ""});
  c.add({"ITL p99", {{1, 4.7}, {2, 5.5}, {4, 7.6}, {8, 6.5}, {16, 6.7}}, Mark::kLine, ""});
  c.hline("TTFT p99 budget", 100);
  c.vline("p99 SLA boundary", 8);
  const auto seen = test::charts_in(c.svg());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(test::chart_problems(seen), "");
  EXPECT_EQ(seen[0].series.at("TTFT p99"), 5);
  EXPECT_EQ(seen[0].x_scale, "log2");
  EXPECT_EQ(seen[0].y_scale, "log10");
  EXPECT_EQ(seen[0].x_ticks, 5);
  EXPECT_EQ(seen[0].references, (std::vector<std::string>{"TTFT p99 budget", "p99 SLA boundary"}));
  const std::string svg = c.svg();
  // The budget is dashed and labelled with its value; each point says its values on hover.
  EXPECT_NE(svg.find("stroke-dasharray=\"6 4\""), std::string::npos);
  EXPECT_NE(svg.find(">TTFT p99 budget 100</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>TTFT p99: concurrency = 16, ms = 160</title>"), std::string::npos);
}

TEST(Chart, ValuesALogAxisCannotShowAreLeftOutAndSaid) {
  Chart c("e2e", Axis{"s"}, Axis{"ms", Scale::kLog10});
  c.add({"requests", {{0, 0}, {1, 10}, {2, 1000}}, Mark::kDots, ""});
  const std::string svg = c.svg();
  EXPECT_EQ(test::charts_in(svg)[0].series.at("requests"), 2);
  EXPECT_NE(svg.find("1 points at or below zero are not drawn on the log scale."), std::string::npos);
}

TEST(Chart, ThousandsOfPointsAreThinnedEvenlyAndTheNoteSaysSo) {
  std::vector<Point> many;
  for (int i = 0; i < 10000; ++i) many.push_back({static_cast<double>(i), static_cast<double>(i % 97)});
  Chart c("many", Axis{"i"}, Axis{"v"});
  c.add({"requests", many, Mark::kDots, ""});
  const std::string svg = c.svg();
  EXPECT_EQ(test::charts_in(svg)[0].series.at("requests"), 2000);
  EXPECT_NE(svg.find("2000 of 10000 points drawn"), std::string::npos);
}

TEST(Chart, AnEmptyChartSaysSoAndStillHasAxes) {
  Chart c("nothing", Axis{"x"}, Axis{"y"});
  c.add({"none", {}, Mark::kLine, ""});
  EXPECT_TRUE(c.empty());
  const std::string svg = c.svg();
  EXPECT_NE(svg.find("no data to draw"), std::string::npos);
  EXPECT_GE(test::charts_in(svg)[0].x_ticks, 3);
}

TEST(Table, CellsAreEscapedAndNumbersRightAligned) {
  Table t({"model", "p99 ms", "share"});
  t.row({"<m&m>", "12.5", "40%"});
  t.row({"b"}, "worse");  // short rows are padded
  const std::string html = t.html("x");
  EXPECT_NE(html.find("<td>&lt;m&amp;m&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">12.5</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"num\">40%</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"worse\"><td>b</td><td></td><td></td></tr>"), std::string::npos);
  EXPECT_EQ(test::table_headers(html), std::vector<std::string>{"model|p99 ms|share"});
}

TEST(Page, TheHeaderSaysWhatWasMeasuredAndWhetherItHoldsForClaims) {
  Header h;
  h.title = "Serving sweep: <m>";
  h.measured = "6 points";
  h.verdict = Verdict{false, "not valid for claims", {"capacity_exceeded at 16"}};
  h.facts = {{"generated", "2026-12-02T00:00:00Z"}};
  Page p(h);
  p.section("Points", "<p>a</p>").section("Track ours", "<p>b</p>").section("Points", "<p>c</p>");
  const std::string html = p.html();
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(html.find("<title>Serving sweep: &lt;m&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"verdict invalid\">not valid for claims</div>"), std::string::npos);
  EXPECT_NE(html.find("<li>capacity_exceeded at 16</li>"), std::string::npos);
  // Contents with unique anchors, one section each.
  EXPECT_NE(html.find("<a href=\"#points\">Points</a><a href=\"#track-ours\">Track ours</a><a href=\"#points-2\">"),
            std::string::npos);
  EXPECT_NE(html.find("<section id=\"points-2\"><h2>Points</h2><p>c</p></section>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // nothing fetched: offline
}

}  // namespace
}  // namespace mpo::present
