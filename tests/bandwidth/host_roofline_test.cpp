#include "bandwidth/host_roofline.hpp"

#include <gtest/gtest.h>

#include "bandwidth/receipt.hpp"

namespace mpo::bandwidth {
namespace {

RooflinePoint point(int threads, double median_gb_s) {
  RooflinePoint p;
  p.threads = threads;
  p.trial_gb_s = {median_gb_s, median_gb_s};
  p.median_gb_s = median_gb_s;
  return p;
}

TEST(HostRoofline, MedianSustainableAndKnee) {
  EXPECT_EQ(median({3, 1, 2}), 2.0);
  EXPECT_EQ(median({4, 1, 2, 3}), 2.5);
  // Adjacent minima: min(5,9)=5, min(9,10)=9, min(10,4)=4 -> sustainable 9.
  const std::vector<RooflinePoint> pts = {point(1, 5), point(2, 9), point(4, 10), point(8, 4)};
  RooflineAnalysis a = analyse_roofline(pts, 0.9);
  EXPECT_EQ(*a.sustainable_gb_s, 9.0);
  EXPECT_FALSE(a.knee_threads.has_value());  // the last point falls below 0.9 x 9
  a = analyse_roofline({point(1, 5), point(2, 9), point(4, 10)}, 0.9);
  EXPECT_EQ(*a.knee_threads, 2);
  EXPECT_FALSE(analyse_roofline({point(1, 5)}, 0.9).sustainable_gb_s.has_value());
}

TEST(HostRoofline, AMeasuredReceiptVerifies) {
  RooflineOptions o;
  o.working_set_bytes = 1 << 20;
  o.trials = 3;
  o.target_trial_s = 0.01;
  o.threads = {1, 2};
  ASSERT_TRUE(check_roofline_options(o).ok());
  const auto points = measure_host_roofline(o, [](const std::string&) {});
  ASSERT_EQ(points.size(), 2u);
  for (const auto& p : points) {
    EXPECT_EQ(p.trial_gb_s.size(), 3u);
    EXPECT_GT(p.median_gb_s, 0.0);
  }
  const auto a = analyse_roofline(points, o.knee_threshold);
  ASSERT_TRUE(a.sustainable_gb_s.has_value());
  const std::string receipt = host_roofline_receipt_json(o, points, a, "test cpu", 1'790'000'000'000'000, "t");
  auto v = verify_receipt(receipt);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->kind, "host-roofline");
  std::string tampered = receipt;
  const auto at = tampered.find("\"median_gb_s\":");
  tampered.insert(at + 14, "1");
  EXPECT_FALSE(verify_receipt(tampered).ok());
}

TEST(HostRoofline, OptionLimits) {
  RooflineOptions o;
  o.trials = 2;
  EXPECT_FALSE(check_roofline_options(o).ok());
  o = RooflineOptions{};
  o.working_set_bytes = 1024;
  EXPECT_FALSE(check_roofline_options(o).ok());
  o = RooflineOptions{};
  o.knee_threshold = 0;
  EXPECT_FALSE(check_roofline_options(o).ok());
}

}  // namespace
}  // namespace mpo::bandwidth
