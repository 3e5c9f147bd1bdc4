#include "sim/vllm_metrics.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <tuple>

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

// Issue 20: token-count buckets follow max_model_len as vLLM builds them (1, 2, 5, 10, ... up to it).
}  // namespace
}  // namespace mpo::sim

#include "engines/facts.hpp"
#include "promtext/exposition.hpp"

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
  const auto signals = engines::extract_signals(*parsed);
  EXPECT_EQ(signals.engine, engines::Engine::kVllmV1);
  const auto facts = engines::derive_facts(signals, std::nullopt);
  EXPECT_EQ(engines::find_fact(facts, "kv_pool_tokens")->value("kv_pool_tokens")->value, 640.0 * 16.0);
  EXPECT_EQ(engines::find_fact(facts, "cached_prompt_fraction")->value("cached_prompt_fraction")->value, 0.0);
  EXPECT_EQ(engines::find_fact(facts, "requests")->value("requests_finished")->value, 8.0);
  EXPECT_EQ(engines::find_fact(facts, "estimated_flops")->status, engines::FactStatus::kNotEnabled);
}

// Issue 20: token-count buckets follow max_model_len as vLLM builds them (1, 2, 5, 10, ... up to it).
TEST(VllmMetrics, TokenBucketsFollowMaxModelLen) {
  for (const auto& [len, last, beyond] : {std::tuple{2048, "2000.0", "5000.0"}, std::tuple{8192, "5000.0", "10000.0"},
                                          std::tuple{32768, "20000.0", "50000.0"}}) {
    EngineConfig c;
    c.max_model_len = len;
    Engine e(c);
    const std::string text = render_vllm_metrics(e, {"m", 1, 0, 0});
    for (const char* h : {"vllm:request_prompt_tokens", "vllm:request_generation_tokens",
                          "vllm:request_params_max_tokens", "vllm:request_prefill_kv_computed_tokens"}) {
      EXPECT_NE(text.find(fmt::format("{}_bucket{{engine=\"0\",le=\"{}\"", h, last)), std::string::npos) << h << len;
      EXPECT_EQ(text.find(fmt::format("{}_bucket{{engine=\"0\",le=\"{}\"", h, beyond)), std::string::npos) << h << len;
    }
  }
}

// Speculative decoding on: the counters add up to what was served (every output token after a
// request's first is a round's own token or an accepted draft), acceptance falls with position.
TEST(VllmMetrics, SpeculativeDecodingCountersAreConsistentWithWhatWasServed) {
  EngineConfig c;
  c.num_speculative_tokens = 3;
  c.spec_acceptance = 0.6;
  Engine e(c);
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(e.add_request(test::spec_with_prompt(12, 60, i), 0).ok());
  auto run = test::run_until_idle(e);
  int generated = 0;
  for (const auto& f : run.finished) generated += f.completion_tokens;
  const auto x = mpo::test::read_exposition(render_vllm_metrics(e, {"m", run.end_s, 1.7e9, 1.7e9}));
  const double drafts = *x.find("vllm:spec_decode_num_drafts_total");
  const double accepted = *x.find("vllm:spec_decode_num_accepted_tokens_total");
  EXPECT_EQ(drafts + accepted, generated - 40);
  EXPECT_EQ(*x.find("vllm:spec_decode_num_draft_tokens_total"), 3 * drafts);
  const double p0 = *x.find("vllm:spec_decode_num_accepted_tokens_per_pos_total", {"position=\"0\""});
  const double p1 = *x.find("vllm:spec_decode_num_accepted_tokens_per_pos_total", {"position=\"1\""});
  const double p2 = *x.find("vllm:spec_decode_num_accepted_tokens_per_pos_total", {"position=\"2\""});
  EXPECT_EQ(p0 + p1 + p2, accepted);
  EXPECT_GT(p0, p1);
  EXPECT_GT(p1, p2);
  EXPECT_NEAR(p0 / drafts, 0.6, 0.08);  // position 0 is accepted with the configured probability

  // The catalog reads it back: acceptance and mean accepted length as the facts state them.
  auto parsed = promtext::parse_exposition(render_vllm_metrics(e, {"m", run.end_s, 1.7e9, 1.7e9}));
  ASSERT_TRUE(parsed.ok());
  const auto facts = engines::derive_facts(engines::extract_signals(*parsed), std::nullopt);
  const auto* spec = engines::find_fact(facts, "speculative_decoding");
  ASSERT_NE(spec, nullptr);
  EXPECT_DOUBLE_EQ(spec->value("mean_accepted_length")->value, 1 + accepted / drafts);
  EXPECT_DOUBLE_EQ(spec->value("acceptance_at_position_0")->value, p0 / drafts);

  Engine off{EngineConfig{}};  // off: vLLM registers no spec_decode series
  EXPECT_EQ(render_vllm_metrics(off, {"m", 1, 0, 0}).find("spec_decode"), std::string::npos);
}

}  // namespace
}  // namespace mpo::sim
