#include "sim/vllm_metrics.hpp"

#include <gtest/gtest.h>

#include "sim/engine_driver.hpp"
#include "support/metric_families.hpp"

namespace mpo::sim {
namespace {

TEST(VllmMetrics, HistogramsHoldExactlyThePerRequestValues) {
  EngineConfig c;
  Engine e(c);
  double sum_ttft = 0;
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(e.add_request(test::spec_with_prompt(20 + i, 3 + i, i), 0).ok());
  auto run = test::run_until_idle(e);
  int generated = 0;
  for (const auto& f : run.finished) {
    sum_ttft += *f.first_token_s - f.arrival_s;
    generated += f.completion_tokens;
  }
  const auto x = mpo::test::read_exposition(render_vllm_metrics(e, {"m", run.end_s, 1.7e9, 1.7e9}));
  EXPECT_EQ(x.find("vllm:time_to_first_token_seconds_count"), 12);
  EXPECT_NEAR(*x.find("vllm:time_to_first_token_seconds_sum"), sum_ttft, 1e-9);
  EXPECT_EQ(x.find("vllm:time_to_first_token_seconds_bucket", {"le=\"+Inf\""}), 12);
  EXPECT_EQ(x.find("vllm:generation_tokens_total"), generated);
  EXPECT_EQ(x.find("vllm:request_generation_tokens_sum"), generated);
  EXPECT_EQ(x.find("vllm:inter_token_latency_seconds_count"), generated - 12);
  EXPECT_EQ(x.find("vllm:request_success_total", {"finished_reason=\"length\""}), 12);
  EXPECT_EQ(x.find("vllm:num_requests_running"), 0);
  EXPECT_EQ(x.find("vllm:kv_cache_usage_perc"), 0);
  EXPECT_EQ(x.find("vllm:estimated_flops_per_gpu_total"), 0);
  EXPECT_EQ(x.find("vllm:cache_config_info", {"num_gpu_blocks=\"4096\"", "block_size=\"16\""}), 1);
}

TEST(VllmMetrics, BucketsAreCumulativeWithLeBetweenEngineAndModel) {
  Engine e(EngineConfig{});
  ASSERT_TRUE(e.add_request(test::spec_with_prompt(8, 2), 0).ok());
  test::run_until_idle(e);
  const std::string text = render_vllm_metrics(e, {"m", 1, 0, 0});
  EXPECT_NE(text.find("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"5.0\",model_name=\"m\"} 0.0\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"10.0\",model_name=\"m\"} 1.0\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:request_prompt_tokens_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 1.0\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:request_prompt_tokens histogram\n"), std::string::npos);
}

TEST(VllmMetrics, WaitingSplitsIntoCapacityAndDeferred) {
  EngineConfig c;
  c.max_num_seqs = 1;
  Engine e(c);
  ASSERT_TRUE(e.add_request(test::spec_with_prompt(8, 50, 1), 0).ok());
  ASSERT_TRUE(e.add_request(test::spec_with_prompt(8, 50, 2), 0).ok());
  RequestSpec d = test::spec_with_prompt(8, 50, 3);
  d.defer_s = 10;
  ASSERT_TRUE(e.add_request(std::move(d), 0).ok());
  e.step(0);
  const auto x = mpo::test::read_exposition(render_vllm_metrics(e, {"m", 0.1, 0, 0}));
  EXPECT_EQ(x.find("vllm:num_requests_waiting"), 2);
  EXPECT_EQ(x.find("vllm:num_requests_waiting_by_reason", {"capacity"}), 1);
  EXPECT_EQ(x.find("vllm:num_requests_waiting_by_reason", {"deferred"}), 1);
}

}  // namespace
}  // namespace mpo::sim

#include "promtext/exposition.hpp"
#include "promtext/facts.hpp"

namespace mpo::sim {
namespace {

// Golden check on the simulator's own exposition: it parses with no problem (every histogram
// cumulative, +Inf equal to _count), round-trips through the writer, and its facts agree with the
// engine's configuration and with what it served.
TEST(VllmMetrics, ExpositionParsesRoundTripsAndStatesTheConfiguration) {
  EngineConfig c;
  c.num_gpu_blocks = 640;
  c.block_size = 16;
  c.enable_prefix_caching = false;
  Engine e(c);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(e.add_request(test::spec_with_prompt(40 + i, 5, i), 0).ok());
  auto run = test::run_until_idle(e);
  const std::string text = render_vllm_metrics(e, {"m", run.end_s, 1.7e9, 1.7e9});
  auto parsed = promtext::parse_exposition(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(parsed->problems.empty());
  auto again = promtext::parse_exposition(promtext::write_exposition(*parsed));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(promtext::same_content(*parsed, *again));
  const auto signals = promtext::extract_signals(*parsed);
  EXPECT_EQ(signals.engine, promtext::Engine::kVllmV1);
  const auto facts = promtext::derive_facts(signals, std::nullopt);
  EXPECT_EQ(promtext::find_fact(facts, "kv_pool_tokens")->value("kv_pool_tokens")->value, 640.0 * 16.0);
  EXPECT_EQ(promtext::find_fact(facts, "cached_prompt_fraction")->value("cached_prompt_fraction")->value, 0.0);
  EXPECT_EQ(promtext::find_fact(facts, "requests")->value("requests_finished")->value, 8.0);
  EXPECT_EQ(promtext::find_fact(facts, "estimated_flops")->status, promtext::FactStatus::kNotEnabled);
}

}  // namespace
}  // namespace mpo::sim
