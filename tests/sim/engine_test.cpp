#include "sim/engine.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "sim/engine_driver.hpp"

namespace mpo::sim {
namespace {

using test::run_until_idle;
using test::spec_with_prompt;

EngineConfig small_config() {
  EngineConfig c;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 512;
  c.num_gpu_blocks = 64;
  c.block_size = 16;
  c.max_model_len = 1024;
  return c;
}

TEST(Engine, QueueingStartsExactlyWhenSlotsRunOut) {
  Engine e(small_config());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.add_request(spec_with_prompt(16, 8, i), 0).ok());
  e.step(0);
  EXPECT_EQ(e.num_running(), 4);
  EXPECT_EQ(e.num_waiting(), 0);
  ASSERT_TRUE(e.add_request(spec_with_prompt(16, 8, 99), 0).ok());
  e.step(0.1);
  EXPECT_EQ(e.num_running(), 4);  // the fifth waits for a slot
  EXPECT_EQ(e.num_waiting(), 1);
  EXPECT_EQ(e.num_waiting_deferred(0.1), 0);  // ... for capacity, not deferred
}

TEST(Engine, QueueingStartsExactlyWhenKvBlocksRunOut) {
  EngineConfig c = small_config();
  c.max_num_seqs = 100;
  c.num_gpu_blocks = 64;  // 1024 tokens: room for max_model_len, not for much more
  Engine e(c);
  // Each request's prompt takes 15 full blocks + 1 partial = 16 blocks: four fill the pool.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(e.add_request(spec_with_prompt(250, 4, i), 0).ok());
  e.step(0);  // budget 512: request 0 (250) + request 1 (250) + 12 of request 2
  e.step(1);
  e.step(2);
  EXPECT_EQ(e.num_running(), 4);
  EXPECT_EQ(e.num_waiting(), 1);
  EXPECT_EQ(e.num_free_blocks(), 0);
}

TEST(Engine, PreemptsAndCountsUnderKvPressureThenFinishesEveryRequest) {
  EngineConfig c = small_config();
  c.max_num_seqs = 8;
  c.num_gpu_blocks = 64;
  Engine e(c);
  // 8 requests x (32 prompt + 200 output) = 8 x 15 blocks >> 64 blocks.
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(e.add_request(spec_with_prompt(32, 200, i), 0).ok());
  auto run = run_until_idle(e);
  EXPECT_GT(e.stats().preemptions, 0u);
  ASSERT_EQ(run.finished.size(), 8u);
  int preempted = 0;
  for (const auto& f : run.finished) {
    EXPECT_EQ(f.completion_tokens, 200);
    EXPECT_EQ(f.reason, FinishReason::kLength);
    EXPECT_EQ(run.emitted[f.id], 200);  // no token lost or repeated across recomputation
    preempted += f.preemptions;
  }
  EXPECT_EQ(static_cast<std::uint64_t>(preempted), e.stats().preemptions);
  EXPECT_EQ(e.num_free_blocks(), c.num_gpu_blocks);
}

TEST(Engine, RepeatedPromptHitsThePrefixCacheAndResetDropsHitsToZero) {
  Engine e(small_config());
  auto once = [&](std::uint32_t salt) {
    RequestSpec s = spec_with_prompt(64, 2, salt);
    EXPECT_TRUE(e.add_request(std::move(s), 0).ok());
    return run_until_idle(e).finished.at(0);
  };
  const auto first = once(7);
  EXPECT_EQ(first.cached_prompt_tokens, 0);
  const auto second = once(7);
  // 64 tokens = 4 full blocks; the last must be computed to sample from: 3 blocks hit.
  EXPECT_EQ(second.cached_prompt_tokens, 48);
  EXPECT_EQ(e.stats().prefix_cache_queries, 128u);
  EXPECT_EQ(e.stats().prefix_cache_hits, 48u);
  EXPECT_GT(e.reset_prefix_cache(), 0);
  const auto third = once(7);
  EXPECT_EQ(third.cached_prompt_tokens, 0);
  EXPECT_EQ(e.stats().prefix_cache_hits, 48u);
  EXPECT_EQ(e.stats().prompt_tokens_cached, 48u);
  EXPECT_EQ(e.stats().prompt_tokens_computed, 64u * 3 - 48);
}

TEST(Engine, ConservesTokensAndBlocks) {
  EngineConfig c = small_config();
  c.num_gpu_blocks = 128;
  Engine e(c);
  std::uint64_t sum_prompt = 0;
  for (int i = 0; i < 40; ++i) {
    RequestSpec s = spec_with_prompt(10 + i * 7, 5 + (i * 13) % 50, i);
    s.ignore_eos = (i % 2) == 0;
    s.natural_tokens = 3 + i % 11;
    sum_prompt += s.prompt.size();
    ASSERT_TRUE(e.add_request(std::move(s), i * 0.01).ok());
  }
  auto run = run_until_idle(e);
  ASSERT_EQ(run.finished.size(), 40u);
  const auto generated =
      std::accumulate(run.finished.begin(), run.finished.end(), std::uint64_t{0},
                      [](std::uint64_t a, const FinishedRequest& f) { return a + f.completion_tokens; });
  EXPECT_EQ(e.stats().generation_tokens, generated);
  EXPECT_EQ(e.stats().prompt_tokens, sum_prompt);
  EXPECT_EQ(e.stats().time_to_first_token.count(), 40u);
  EXPECT_EQ(e.stats().inter_token_latency.count(), generated - 40);
  EXPECT_EQ(e.stats().request_generation_tokens.sum(), static_cast<double>(generated));
  EXPECT_EQ(e.num_free_blocks(), c.num_gpu_blocks);
  EXPECT_EQ(e.kv_cache_usage(), 0.0);
  EXPECT_EQ(e.num_active(), 0u);
}

TEST(Engine, ChunkedPrefillSpreadsALongPromptOverSteps) {
  EngineConfig c = small_config();
  c.max_model_len = 2048;
  c.num_gpu_blocks = 256;
  Engine e(c);
  ASSERT_TRUE(e.add_request(spec_with_prompt(1200, 1), 0).ok());
  auto run = run_until_idle(e);
  ASSERT_EQ(run.steps.size(), 3u);  // 512 + 512 + 176 tokens; the token comes with the last
  EXPECT_EQ(run.steps[0].prefill_tokens, 512);
  EXPECT_EQ(run.steps[2].prefill_tokens, 176);
  EXPECT_EQ(run.finished.at(0).completion_tokens, 1);
}

TEST(Engine, StepTimeFollowsTheLinearCostModel) {
  EngineConfig c = small_config();
  c.step_base_s = 0.02;
  c.step_per_prefill_token_s = 0.001;
  c.step_per_decode_seq_s = 0.005;
  Engine e(c);
  ASSERT_TRUE(e.add_request(spec_with_prompt(10, 3, 1), 0).ok());
  ASSERT_TRUE(e.add_request(spec_with_prompt(20, 3, 2), 0).ok());
  auto s1 = e.step(0);
  EXPECT_DOUBLE_EQ(s1.end_s, 0.02 + 0.001 * 30);
  auto s2 = e.step(s1.end_s);
  EXPECT_EQ(s2.decode_seqs, 2);
  EXPECT_DOUBLE_EQ(s2.end_s - s1.end_s, 0.02 + 0.005 * 2);
}

TEST(Engine, NaturalEndGivesStopAndMaxTokensGivesLength) {
  Engine e(small_config());
  RequestSpec natural = spec_with_prompt(8, 50, 1);
  natural.ignore_eos = false;
  natural.natural_tokens = 7;
  RequestSpec capped = spec_with_prompt(8, 5, 2);
  capped.ignore_eos = false;
  capped.natural_tokens = 7;
  const auto a = *e.add_request(std::move(natural), 0);
  const auto b = *e.add_request(std::move(capped), 0);
  auto run = run_until_idle(e);
  for (const auto& f : run.finished) {
    if (f.id == a) {
      EXPECT_EQ(f.reason, FinishReason::kStop);
      EXPECT_EQ(f.completion_tokens, 7);
    }
    if (f.id == b) {
      EXPECT_EQ(f.reason, FinishReason::kLength);
      EXPECT_EQ(f.completion_tokens, 5);
    }
  }
}

TEST(Engine, StopStringEndsTheRequestAndIsNotEmitted) {
  Engine e(small_config());
  RequestSpec probe = spec_with_prompt(8, 40, 3);
  const auto pid = *e.add_request(probe, 0);
  auto full = run_until_idle(e);
  const std::string text = full.text[pid];
  ASSERT_GT(text.size(), 30u);
  // Stop at a word from the middle of the text (which spans a token boundary).
  const std::size_t mid = text.find(' ', text.size() / 2);
  const std::string stop = text.substr(mid, 4);
  RequestSpec with_stop = probe;
  with_stop.stop = {stop};
  const auto id = *e.add_request(with_stop, full.end_s);
  auto run = run_until_idle(e, full.end_s);
  EXPECT_EQ(run.text[id], text.substr(0, text.find(stop)));
  EXPECT_EQ(run.finished.at(0).reason, FinishReason::kStop);
}

TEST(Engine, SameSeedSameOutput) {
  auto once = [] {
    Engine e(small_config());
    const auto id = *e.add_request(spec_with_prompt(12, 20, 5), 0);
    return run_until_idle(e).text[id];
  };
  EXPECT_EQ(once(), once());
}

TEST(Engine, AbortFreesSlotsAndBlocksAndCountsAbort) {
  Engine e(small_config());
  const auto id = *e.add_request(spec_with_prompt(40, 100, 1), 0);
  e.step(0);
  EXPECT_LT(e.num_free_blocks(), 64);
  auto f = e.abort(id, 0.5);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->reason, FinishReason::kAbort);
  EXPECT_EQ(e.num_free_blocks(), 64);
  EXPECT_EQ(e.num_running(), 0);
  EXPECT_EQ(e.stats().finished[static_cast<int>(FinishReason::kAbort)], 1u);
  EXPECT_FALSE(e.abort(id, 0.6).has_value());
}

TEST(Engine, DeferredRequestsWaitWithReasonDeferredThenRun) {
  Engine e(small_config());
  RequestSpec s = spec_with_prompt(8, 2, 1);
  s.defer_s = 1.0;
  ASSERT_TRUE(e.add_request(std::move(s), 0).ok());
  EXPECT_FALSE(e.has_work(0.5));
  EXPECT_EQ(e.num_waiting_deferred(0.5), 1);
  EXPECT_EQ(e.next_deferred_ready_s(), 1.0);
  auto run = run_until_idle(e, 0.5);
  ASSERT_EQ(run.finished.size(), 1u);
  EXPECT_GE(*run.finished[0].scheduled_s, 1.0);
}

TEST(Engine, RejectsPromptsThatCannotFitTheContext) {
  Engine e(small_config());
  auto r = e.add_request(spec_with_prompt(1024, 1), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("maximum context length is 1024"), std::string::npos);
  EXPECT_FALSE(e.add_request(RequestSpec{}, 0).ok());
}

TEST(Engine, ReservedBlocksCutCapacityAndRaiseUsage) {
  EngineConfig c = small_config();
  c.num_gpu_blocks = 128;
  Engine e(c);
  e.set_reserved_blocks(40);
  EXPECT_EQ(e.reserved_blocks(), 40);
  EXPECT_NEAR(e.kv_cache_usage(), 40.0 / 128, 1e-12);
  e.set_reserved_blocks(1000);  // clamped: one max_model_len request must still fit
  EXPECT_EQ(e.reserved_blocks(), 128 - 1024 / 16);
  e.set_reserved_blocks(0);
  EXPECT_EQ(e.kv_cache_usage(), 0.0);
}

}  // namespace
}  // namespace mpo::sim
