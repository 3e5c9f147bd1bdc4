#include "sim/scenario.hpp"

#include <gtest/gtest.h>

#include "sim/engine_driver.hpp"

namespace mpo::sim {
namespace {

TEST(Scenario, SaturationCutsCapacityAndKeepsBackgroundLoadInFlight) {
  Profile p;
  Engine e(p.engine);
  ScenarioController sc(p, 1);
  sc.set(Scenario::kSaturation, 0, e);
  EXPECT_EQ(e.max_num_seqs(), p.saturation.max_num_seqs);
  EXPECT_GT(e.reserved_blocks(), 0);
  EXPECT_EQ(sc.background_in_flight(), p.saturation.background_requests);
  double now = 0;
  for (int i = 0; i < 400; ++i) {
    auto r = e.step(now);
    now = r.end_s;
    for (const auto& f : r.finished) sc.on_finished(f);
    sc.tick(now, e);
  }
  EXPECT_GT(e.num_waiting(), 20);
  EXPECT_GT(e.kv_cache_usage(), 0.9);
  EXPECT_GT(e.stats().preemptions, 0u);
  auto aborted = sc.set(Scenario::kNormal, now, e);
  EXPECT_FALSE(aborted.empty());
  EXPECT_EQ(e.num_active(), 0u);
  EXPECT_EQ(e.max_num_seqs(), p.engine.max_num_seqs);
  EXPECT_EQ(e.kv_cache_usage(), 0.0);
}

TEST(Scenario, RampGrowsTheBackgroundPopulationOverItsDuration) {
  Profile p;
  p.ramp.duration_s = 10;
  p.ramp.background_requests = 50;
  Engine e(p.engine);
  ScenarioController sc(p, 1);
  sc.set(Scenario::kRamp, 0, e);
  EXPECT_EQ(sc.background_in_flight(), 0);
  sc.tick(5, e);
  EXPECT_EQ(sc.background_in_flight(), 25);
  sc.tick(20, e);
  EXPECT_EQ(sc.background_in_flight(), 50);
}

TEST(Scenario, FaultsAreDrawnInTheConfiguredSharesOnlyUnderFaults) {
  Profile p;
  Engine e(p.engine);
  ScenarioController sc(p, 1);
  EXPECT_EQ(sc.draw_fault(), Fault::kNone);
  sc.set(Scenario::kFaults, 0, e);
  int counts[4] = {};
  for (int i = 0; i < 10000; ++i) ++counts[static_cast<int>(sc.draw_fault())];
  EXPECT_NEAR(counts[static_cast<int>(Fault::kError)], 1000, 150);
  EXPECT_NEAR(counts[static_cast<int>(Fault::kTruncate)], 1000, 150);
  EXPECT_NEAR(counts[static_cast<int>(Fault::kStall)], 1000, 150);
}

TEST(Scenario, NamesRoundTripAndUnknownIsAnError) {
  for (auto s : {Scenario::kNormal, Scenario::kRamp, Scenario::kSaturation, Scenario::kFaults}) {
    EXPECT_EQ(*parse_scenario(to_string(s)), s);
  }
  EXPECT_FALSE(parse_scenario("meltdown").ok());
}

}  // namespace
}  // namespace mpo::sim
