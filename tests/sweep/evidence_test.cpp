// Server and energy evidence of a sweep point, from constructed snapshots and the real DCGM capture.
#include "sweep/evidence.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engines/signals.hpp"
#include "support/build_paths.hpp"

namespace mpo::sweep {
namespace {

using engines::Signal;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

scrape::Snapshot snap(double start_time, double finished, double waiting_capacity, double queries = 100,
                      double hits = 40) {
  scrape::Snapshot s;
  s.source = "http://127.0.0.1:1/metrics";
  s.signals.engine = engines::Engine::kVllmV1;
  s.signals.models = {"m"};
  auto put = [&](Signal sig, double v) {
    s.signals.scalars[static_cast<std::size_t>(sig)] = engines::ScalarSignal{v, "x", 1};
  };
  put(Signal::kProcessStartTime, start_time);
  put(Signal::kRequestsFinished, finished);
  put(Signal::kWaitingCapacity, waiting_capacity);
  put(Signal::kWaiting, waiting_capacity);
  put(Signal::kKvUsage, 0.25);
  put(Signal::kPrefixCacheQueries, queries);
  put(Signal::kPrefixCacheHits, hits);
  put(Signal::kPreemptions, 0);
  return s;
}

TEST(SweepEvidence, DeltasPeaksAndRequestCounts) {
  const auto before = snap(1000, 10, 0);
  const auto during = std::vector<scrape::Snapshot>{snap(1000, 12, 7)};
  const auto after = snap(1000, 18, 1, 300, 140);
  const auto o = server_evidence(nullptr, before, during, after, 8);
  EXPECT_EQ(o.at("status").as_string(), "measured");
  EXPECT_FALSE(o.at("restarted").as_bool());
  EXPECT_EQ(o.at("requests_delta").as_double(), 8);
  EXPECT_EQ(o.at("requests_sent").as_int64(), 8);
  EXPECT_EQ(o.at("waiting_capacity_max").as_double(), 7);
  EXPECT_EQ(o.at("waiting_capacity_mean").as_double(), 7);  // over the samples during the point only
  EXPECT_EQ(o.at("prefix_cache_queries_delta").as_double(), 200);
  EXPECT_EQ(o.at("prefix_cache_hits_delta").as_double(), 100);
}

TEST(SweepEvidence, RestartsAndResetsAreCaught) {
  // During the point: another process start time.
  auto o = server_evidence(nullptr, snap(1000, 10, 0), {}, snap(2000, 1, 0), 3);
  EXPECT_TRUE(o.at("restarted").as_bool());
  EXPECT_FALSE(o.contains("requests_delta"));  // no delta from a restarted server
  // Between points: the previous point's last scrape came from another process.
  const auto prev = snap(1000, 50, 0);
  o = server_evidence(&prev, snap(3000, 2, 0), {}, snap(3000, 5, 0), 3);
  EXPECT_TRUE(o.at("restarted").as_bool());
  EXPECT_NE(std::string(o.at("reset_reason").as_string()).find("previous point"), std::string::npos);
  // A counter that went down without a new start time is a reset too.
  o = server_evidence(nullptr, snap(1000, 10, 0), {}, snap(1000, 4, 0), 3);
  EXPECT_TRUE(o.at("restarted").as_bool());
  // A failed scrape: nothing is claimed.
  auto bad = snap(1000, 10, 0);
  bad.status = scrape::ScrapeStatus::kUnreachable;
  bad.error = "connection refused";
  o = server_evidence(nullptr, bad, {}, snap(1000, 12, 0), 3);
  EXPECT_EQ(o.at("status").as_string(), "not_measured");
}

TEST(SweepEvidence, PowerDrawIsIntegratedOverThePoint) {
  EXPECT_EQ(parse_power_draw("150.50\n49.50\n"), 200.0);
  EXPECT_FALSE(parse_power_draw("[N/A]\n").has_value());
  EXPECT_FALSE(parse_power_draw("").has_value());
  // 100 W for 1 s then 300 W for 1 s, sampled at 0, 1, 2 s: trapezoids give 200 + 300 = ... exactly:
  // (100+100)/2*1 + (100+300)/2*1 = 300 J over [0, 2 s].
  const std::vector<PowerSample> s = {{0, 100}, {1'000'000, 100}, {2'000'000, 300}};
  const auto e = energy_from_power(s, 0, 2'000'000, 600);
  EXPECT_EQ(e.at("status").as_string(), "measured");
  EXPECT_DOUBLE_EQ(e.at("joules").as_double(), 300.0);
  EXPECT_DOUBLE_EQ(e.at("output_tokens_per_joule").as_double(), 2.0);
  EXPECT_EQ(energy_from_power({{0, 100}}, 0, 1, 5).at("status").as_string(), "not_measured");
}

TEST(SweepEvidence, DcgmEnergyCounterFromTheRealCapture) {
  const std::string page =
      read(std::string(mpo::test::source_dir()) + "/tests/fixtures/dcgm/dcgm-exporter_datadog-fixture_t4-mixed.prom");
  const auto mj = parse_dcgm_energy_mj(page);
  ASSERT_TRUE(mj.has_value());
  EXPECT_EQ(*mj, 128996013.0);
  // The same counter 250 J later (the capture with its value raised; invented for the delta).
  std::string later = page;
  const auto at = later.find("128996013");
  later.replace(at, 9, "129246013");
  const auto e = energy_from_dcgm(mj, parse_dcgm_energy_mj(later), 500, "http://dcgm:9400/metrics");
  EXPECT_EQ(e.at("status").as_string(), "measured");
  EXPECT_DOUBLE_EQ(e.at("joules").as_double(), 250.0);
  EXPECT_DOUBLE_EQ(e.at("output_tokens_per_joule").as_double(), 2.0);
  EXPECT_EQ(energy_from_dcgm(parse_dcgm_energy_mj(later), mj, 5, "x").at("status").as_string(), "not_measured");
  EXPECT_FALSE(parse_dcgm_energy_mj("vllm:num_requests_running 1\n").has_value());
}

}  // namespace
}  // namespace mpo::sweep
