// Bandwidth and host-roofline receipts as pages (issue 25): the figure, its validity, the kernels
// or the thread curve drawn with the shared presentation layer.
#include "bandwidth/render_html.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "bandwidth/host_roofline.hpp"
#include "bandwidth/ncu_import.hpp"
#include "bandwidth/receipt.hpp"
#include "support/fixtures.hpp"
#include "support/html_page.hpp"

namespace mpo::bandwidth {
namespace {

TEST(BandwidthHtml, AnNsightCaptureShowsItsRatesKernelsAndVerdict) {
  auto im = import_ncu_csv(test::read_fixture("ncu/SYNTHETIC_fak_nvidia-hbm-ncu_details-longform.csv"));
  ASSERT_TRUE(im.ok()) << im.error().message;
  CaptureContext c;
  c.file = "capture.csv";
  c.device = "NVIDIA H100 80GB HBM3 (0)";
  c.capture_start_us = 1'787'824'800'000'000;
  c.capture_end_us = c.capture_start_us + 60'000'000;
  c.device_roofline_gb_s = 1250;
  const auto page = receipt_html(ncu_receipt_json(*im, c, 1'790'000'000'000'000, "t"));
  ASSERT_TRUE(page.ok()) << page.error().message;
  EXPECT_NE(page->find("<h1>GPU memory bandwidth (Nsight Compute)</h1>"), std::string::npos);
  EXPECT_NE(page->find("<div class=\"verdict valid\">valid for claims</div>"), std::string::npos);
  EXPECT_NE(page->find("<td class=\"num\">1000.0 GB/s</td>"), std::string::npos);  // total, as the importer says
  EXPECT_NE(page->find("<td class=\"num\">80.0%</td>"), std::string::npos);        // of the device roofline
  const auto charts = test::charts_in(*page);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(test::chart_problems(charts), "");
  EXPECT_EQ(charts[0].series.at("kernels"), 1);
  EXPECT_EQ(charts[0].references, std::vector<std::string>{"device roofline"});
  EXPECT_NE(page->find("Not request wall-time throughput."), std::string::npos);  // what the figure is
}

TEST(BandwidthHtml, AHostRooflineDrawsItsThreadCurveTrialsSustainableFigureAndKnee) {
  RooflineOptions o;
  o.working_set_bytes = 1 << 20;
  o.trials = 3;
  o.threads = {1, 2, 4};
  std::vector<RooflinePoint> points;
  for (auto [n, gb] : {std::pair{1, 80.0}, {2, 150.0}, {4, 155.0}}) {
    RooflinePoint p;
    p.threads = n;
    p.trial_gb_s = {gb - 1, gb, gb + 1};
    p.median_gb_s = gb;
    points.push_back(p);
  }
  const auto a = analyse_roofline(points, 0.9);
  const auto page = receipt_html(host_roofline_receipt_json(o, points, a, "test cpu", 1'790'000'000'000'000, "t"));
  ASSERT_TRUE(page.ok()) << page.error().message;
  const auto charts = test::charts_in(*page);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(test::chart_problems(charts), "");
  EXPECT_EQ(charts[0].x_scale, "log2");
  EXPECT_EQ(charts[0].series.at("median"), 3);
  EXPECT_EQ(charts[0].series.at("trials"), 9);
  EXPECT_EQ(charts[0].references, (std::vector<std::string>{"sustainable", "knee"}));
  const auto tables = test::table_headers(*page);
  EXPECT_NE(std::find(tables.begin(), tables.end(), "threads|median GB/s|trials GB/s|first touch s"), tables.end());
}

TEST(BandwidthHtml, AnotherDocumentIsRefusedByName) {
  EXPECT_FALSE(receipt_html("not json").ok());
  const auto other = receipt_html(R"({"schema":"fak.serving-sweep.v1"})");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("fak.serving-sweep.v1"), std::string::npos);
}

}  // namespace
}  // namespace mpo::bandwidth
