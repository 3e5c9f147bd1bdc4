// Golden tests of the project's one exposition writer (promtext::TextWriter): what the simulator's
// vLLM page, the proxy's /metrics and the round-trip writer all write through.
#include "promtext/text_writer.hpp"

#include <gtest/gtest.h>

namespace mpo::promtext {
namespace {

TEST(TextWriter, NumbersInBothStyles) {
  EXPECT_EQ(format_number(10, NumberStyle::kPython), "10.0");  // prometheus_client's repr (vLLM's pages)
  EXPECT_EQ(format_number(0.25, NumberStyle::kPython), "0.25");
  EXPECT_EQ(format_number(1.0 / 0.0, NumberStyle::kPython), "+Inf");
  EXPECT_EQ(format_number(-1.0 / 0.0, NumberStyle::kShortest), "-Inf");
  EXPECT_EQ(format_number(0.0 / 0.0, NumberStyle::kPython), "NaN");
  EXPECT_EQ(format_number(10, NumberStyle::kShortest), "10");
  EXPECT_EQ(format_number(1.7e9, NumberStyle::kPython), "1700000000.0");
  EXPECT_EQ(format_number(1e20, NumberStyle::kPython), "1e+20");
}

TEST(TextWriter, FamiliesSamplesAndEscapes) {
  TextWriter w(Format::kText004, NumberStyle::kPython);
  w.family("req_total", MetricType::kCounter, "Requests \"seen\", a\\b\nnext line.")
      .sample("req_total", {{"model", "a\"b\\c\nd"}, {"code", "200"}}, 3)
      .family("up", MetricType::kGauge, std::nullopt)
      .sample("up", {}, 1);
  EXPECT_EQ(std::move(w).take(),
            "# HELP req_total Requests \"seen\", a\\\\b\\nnext line.\n"
            "# TYPE req_total counter\n"
            "req_total{model=\"a\\\"b\\\\c\\nd\",code=\"200\"} 3.0\n"
            "# TYPE up gauge\n"
            "up 1.0\n");
}

TEST(TextWriter, HistogramsAreCumulativeWithLeInNameOrder) {
  const double bounds[] = {0.5, 1};
  const std::uint64_t counts[] = {2, 1, 4};  // the last: above the highest bound
  TextWriter w(Format::kText004, NumberStyle::kPython);
  w.family("lat", MetricType::kHistogram, "Latency.")
      .histogram_samples("lat", {{"engine", "0"}, {"model_name", "m"}}, bounds, counts, 9.5);
  EXPECT_EQ(std::move(w).take(),
            "# HELP lat Latency.\n"
            "# TYPE lat histogram\n"
            "lat_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 2.0\n"
            "lat_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 3.0\n"
            "lat_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 7.0\n"
            "lat_count{engine=\"0\",model_name=\"m\"} 7.0\n"
            "lat_sum{engine=\"0\",model_name=\"m\"} 9.5\n");
  TextWriter bare;
  bare.histogram_samples("h", {}, bounds, counts, 1);
  EXPECT_EQ(std::move(bare).take(),
            "h_bucket{le=\"0.5\"} 2\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 7\nh_count 7\nh_sum 1\n");
}

TEST(TextWriter, OpenMetricsUnknownTypeUnitTimestampsExemplarsAndEof) {
  TextWriter w(Format::kOpenMetrics);
  Exemplar ex{{{"trace_id", "abc"}}, 0.5, 1.25};
  w.family("x", MetricType::kUntyped, "say \"hi\"").unit("x", "seconds");
  w.sample("x", Labels{{"a", "b"}}, 2, 1700000000.5, &ex);
  EXPECT_EQ(std::move(w).take(),
            "# HELP x say \\\"hi\\\"\n"
            "# TYPE x unknown\n"
            "# UNIT x seconds\n"
            "x{a=\"b\"} 2 1700000000.5 # {trace_id=\"abc\"} 0.5 1.25\n"
            "# EOF\n");
}

}  // namespace
}  // namespace mpo::promtext
