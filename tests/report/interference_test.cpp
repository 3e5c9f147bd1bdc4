// Decode held up by other requests' prompts (report/interference.hpp). Invented rows, times in ms
// from 0 (the edge cases of the rule); the real engine's case is
// RealLlamaCppVerdicts.AMixOfShortAndLongPromptsIsJudgedBandByBand (tests/integration).
#include "report/interference.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace mpo::report {
namespace {

struct Rows {
  std::deque<Row> storage;
  RowList list;
  // A streamed request from `start` to `end` ms, its first token at `ttft`, `tokens` out, its median
  // gap `itl_p50`; `prompt_ms`: the engine's prefill time (the window before its first token).
  Row& add(double start, double ttft, double end, int tokens, double itl_p50, std::optional<float> prompt_ms = {}) {
    Row r;
    r.outcome_index = RowNames::kOk;
    r.stream = true;
    r.started_at_us = static_cast<std::int64_t>(start * 1000);
    r.ended_at_us = std::optional<std::int64_t>(static_cast<std::int64_t>(end * 1000));
    r.ttft_ms = std::optional<double>(ttft);
    r.tpot_ms = std::optional<double>((end - start - ttft) / (tokens - 1));
    r.completion_tokens = std::optional<std::int32_t>(tokens);
    r.itl_p50_ms = std::optional<float>(static_cast<float>(itl_p50));
    r.engine_prompt_ms = prompt_ms;
    storage.push_back(r);
    list.push_back(&storage.back());
    return storage.back();
  }
};

TEST(DecodeInterference, ADecodeHeldUpWithinAnotherPromptsWindowLosesTheTimeBeyondItsOwnPace) {
  Rows rows;
  // A long prompt read from 0 to 1000 ms (its first token at 1000), 4 tokens after it.
  rows.add(0, 1000, 1030, 4, 10, 1000.0f);
  // A short request decoding from 20 to 1220 ms: 61 tokens at its own median gap of 4 ms would take
  // 240 ms; it took 1200, 980 of them inside the long prompt's window.
  rows.add(0, 20, 1220, 61, 4, 15.0f);
  // Three decoding after it, alone.
  for (double start : {2000.0, 3000.0, 4000.0}) rows.add(start, 20, start + 260, 61, 4, 15.0f);
  const PrefillOverlap overlap(rows.list);
  EXPECT_EQ(overlap.prefill_windows(), 5u);
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[1]), 980);  // [20, 1000)
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[2]), 0);
  const auto d = decode_interference(rows.list, overlap);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->decoding, 5u);
  EXPECT_EQ(d->overlapped, 1u);
  // min(covered 980, beyond its pace 1200 - 60 x 4 = 960)
  EXPECT_DOUBLE_EQ(d->lost_ms, 960);
  EXPECT_DOUBLE_EQ(d->e2e_ms, 1030 + 1220 + 3 * 260);
  EXPECT_NEAR(d->share(), 960.0 / 3030, 1e-12);
  EXPECT_DOUBLE_EQ(*d->others_tpot_p50_ms, 4);
}

// A decode wholly inside another prompt's window has the slowed gap for its own median (the real
// llama-server: six-token answers beside 1,750-token prompts, 147.7 ms a gap against 1.9 ms
// alone, counted as 0.2 s lost where they lost most of their time): its pace is then that of the
// decodes outside the windows.
TEST(DecodeInterference, ADecodeWhollyInsideAPromptsWindowIsPacedByTheDecodesOutsideThem) {
  Rows rows;
  rows.add(0, 1000, 1030, 4, 10, 1000.0f);  // a long prompt read from 0 to 1000 ms
  // 31 tokens from 20 to 620 ms, every gap 20 ms: beside the prompt throughout.
  rows.add(0, 20, 620, 31, 20, 15.0f);
  for (double start : {2000.0, 3000.0, 4000.0}) rows.add(start, 20, start + 260, 61, 4, 15.0f);  // alone
  const PrefillOverlap overlap(rows.list);
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[1]), 600);
  const auto d = decode_interference(rows.list, overlap);
  ASSERT_TRUE(d.has_value());  // at its own 20 ms pace it lost nothing, and nothing was said
  EXPECT_EQ(d->overlapped, 1u);
  // The decodes outside the windows: 4, 4, 4 and the long request's own 10 ms: 4 ms a gap.
  // min(covered 600, 600 - 30 x 4 = 480)
  EXPECT_DOUBLE_EQ(d->lost_ms, 480);
}

// Text, then two tool calls (llama.cpp b10309's shape: llamacpp_b10309_chat_stream_tool_calls_after_text.http,
// 71 tokens in 32 events): the engine held back each call's first tokens until its name, so the
// stream has two long gaps (~13 tokens each) at an even decode. Another request's prompt read during
// the first of them does not make that gap a loss: the decode is measured against the stream's own
// median gap over all its tokens, and all of its tokens were counted.
TEST(DecodeInterference, GapsHeldBackBeforeToolCallsInsideAStreamAreNotLostToAnotherPrompt) {
  Rows rows;
  // 71 tokens at 5 ms from its first at 20 ms: 370 ms; gaps of 5 ms but two of 65 ms (the calls').
  rows.add(0, 20, 370, 71, 5, 10.0f);
  rows.add(100, 65, 200, 8, 5, 65.0f);  // a prompt read from 100 to 165 ms, inside the first held gap
  for (double start : {1000.0, 2000.0}) rows.add(start, 20, start + 370, 71, 5, 10.0f);  // alone
  const PrefillOverlap overlap(rows.list);
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[0]), 65);
  EXPECT_TRUE(decoded_behind_prompts(rows.storage[0], overlap));      // a sixth of its decode, beside it
  EXPECT_FALSE(decode_interference(rows.list, overlap).has_value());  // and nothing lost to it
}

TEST(DecodeInterference, TwoPromptsReadAtOnceCountOnceAndARequestsOwnPromptNotAtAll) {
  Rows rows;
  rows.add(0, 500, 510, 2, 10, 500.0f);    // [0, 500)
  rows.add(100, 500, 700, 2, 10, 400.0f);  // [200, 600)
  // Decoding from 50 to 850 ms: the two windows cover [50, 600) once, 550 ms.
  Row& r = rows.add(0, 50, 850, 41, 5, 40.0f);
  const PrefillOverlap overlap(rows.list);
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(r), 550);
  // The long requests' own decodes: the second's window covers [500, 510) of the first's (its own
  // [0, 500) not at all), and nothing covers the second's [600, 700).
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[0]), 10);
  EXPECT_DOUBLE_EQ(*overlap.covered_ms(rows.storage[1]), 0);
}

TEST(DecodeInterference, NothingIsClaimedWithoutTheEnginesPrefillTimesOrALoss) {
  Rows none;  // no prompt_ms: no windows
  none.add(0, 1000, 1030, 4, 10);
  none.add(0, 20, 1220, 61, 4);
  EXPECT_FALSE(decode_interference(none.list, PrefillOverlap(none.list)).has_value());
  Rows paced;  // overlapped, but at its own pace throughout: nothing lost
  paced.add(0, 1000, 1030, 4, 10, 1000.0f);
  paced.add(0, 20, 260, 61, 4, 15.0f);
  EXPECT_FALSE(decode_interference(paced.list, PrefillOverlap(paced.list)).has_value());
  Rows bursts;  // a median gap of 0 (a speculating engine's tokens in bursts) is no pace: not judged
  bursts.add(0, 1000, 1030, 4, 10, 1000.0f);
  Row& b = bursts.add(0, 20, 1220, 61, 0.01, 15.0f);
  EXPECT_FALSE(PrefillOverlap(bursts.list).covered_ms(b).has_value());
  EXPECT_FALSE(decode_interference(bursts.list, PrefillOverlap(bursts.list)).has_value());
  Rows unpaced;  // a line without its median gap is not judged
  unpaced.add(0, 1000, 1030, 4, 10, 1000.0f);
  Row& r = unpaced.add(0, 20, 1220, 61, 4, 15.0f);
  r.itl_p50_ms = std::optional<float>();
  EXPECT_FALSE(PrefillOverlap(unpaced.list).covered_ms(r).has_value());
}

}  // namespace
}  // namespace mpo::report
