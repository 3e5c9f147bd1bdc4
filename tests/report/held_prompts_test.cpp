// First tokens held behind longer prompts (report/held_prompts.hpp). Invented windows (the edge
// cases of the rule); the real engine's are RealLlamaCppVerdicts.AShortPromptThatComesWhileALongOne
// IsReadWaitsForIt (tests/integration) and the golden report-llamacpp-mixed-prompts-md.
#include "report/held_prompts.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace mpo::report {
namespace {

// A request starting at `start` ms with its first token `ttft` ms later, its prompt of `tokens` read
// by the engine in the last `prompt_ms` of that.
PromptWindow w(double start, double ttft, double prompt_ms, std::int64_t tokens) {
  return PromptWindow{static_cast<std::int64_t>(start * 1000), ttft, prompt_ms, tokens};
}

// Three long prompts (1,500 tokens) read in [0, 750), [2000, 2750), [4000, 4750); a short one (30
// tokens) comes 100 ms into each and waits for it; three short ones come when nothing else runs.
std::vector<PromptWindow> short_behind_long() {
  std::vector<PromptWindow> v;
  for (double at : {0.0, 2000.0, 4000.0}) {
    v.push_back(w(at, 750, 740, 1500));
    v.push_back(w(at + 100, 680, 30, 30));  // waited 650 ms before its prompt was read in 30
  }
  for (double at : {6000.0, 7000.0, 8000.0}) v.push_back(w(at, 40, 25, 30));
  return v;
}

TEST(HeldPrompts, ShortPromptsThatComeWhileALongOneIsReadAreTheirBandsTail) {
  const auto found = held_prompts(short_behind_long(), "llama.cpp timings.prompt_ms");
  ASSERT_EQ(found.size(), 1u);
  const auto& h = found[0];
  EXPECT_EQ(h.from_tokens, 0);
  EXPECT_EQ(h.to_tokens, 64);
  EXPECT_EQ(h.longer_from_tokens, 1024);  // the longer prompts' band, not the next one up
  EXPECT_EQ(h.held, 3u);
  EXPECT_EQ(h.unheld, 3u);
  EXPECT_DOUBLE_EQ(h.held_ttft_p50_ms, 680);
  EXPECT_DOUBLE_EQ(h.unheld_ttft_p50_ms, 40);
  EXPECT_DOUBLE_EQ(h.held_prompt_p50_ms, 30);  // the wait came before their reading began
  EXPECT_DOUBLE_EQ(h.unheld_prompt_p50_ms, 25);
  EXPECT_EQ(h.slowest, 1u);  // a tenth of six, one at least
  EXPECT_EQ(h.slowest_held, 1u);
  const auto sentence = held_prompts_sentence(h);
  EXPECT_EQ(sentence.find("first tokens behind longer prompts: 3 of 6 prompts of 0-63 tokens waited while prompts "
                          "of 1024 tokens or more were being read (llama.cpp timings.prompt_ms"),
            0u)
      << sentence;
  EXPECT_NE(sentence.find("TTFT p50 680.0 ms against 40.0 ms for the 3 that met none"), std::string::npos) << sentence;
  EXPECT_NE(held_prompts_json(found).find(R"("held":3,"unheld":3)"), std::string::npos) << held_prompts_json(found);
}

TEST(HeldPrompts, AWindowCoveringLessThanHalfOfTheWaitDoesNotHoldIt) {
  auto v = short_behind_long();
  // The third short request comes 600 ms into the long prompt: 150 of its 680 ms were covered.
  v[5] = w(4600, 680, 30, 30);
  const auto found = held_prompts(v, "x");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].held, 2u);
  EXPECT_EQ(found[0].unheld, 4u);
}

TEST(HeldPrompts, NothingIsClaimedWithoutLongerPromptsEnoughRequestsOrADifference) {
  // Short prompts only: nothing longer to hold them.
  std::vector<PromptWindow> alone;
  for (int i = 0; i < 8; ++i) alone.push_back(w(i * 100.0, i < 3 ? 500 : 40, 30, 30));
  EXPECT_TRUE(held_prompts(alone, "x").empty());
  // One held: too few.
  auto one = short_behind_long();
  one.erase(one.begin() + 3, one.begin() + 6);
  EXPECT_TRUE(held_prompts(one, "x").empty());
  // Two unheld to compare with: too few.
  auto few = short_behind_long();
  few.pop_back();
  EXPECT_TRUE(held_prompts(few, "x").empty());
  // Held, but their first tokens came no later than the others'.
  auto fast = short_behind_long();
  for (std::size_t i : {1u, 3u, 5u}) fast[i].first_token_ms = fast[i].prompt_ms = 45;
  fast[1].started_at_us = 700'000;  // [700, 745) inside [0, 750)
  fast[3].started_at_us = 2'700'000;
  fast[5].started_at_us = 4'700'000;
  EXPECT_TRUE(held_prompts(fast, "x").empty());
  EXPECT_TRUE(held_prompts({}, "x").empty());
}

TEST(HeldPrompts, WindowsComeFromTheRowsThatCarryTheEnginesPromptTime) {
  std::deque<Row> storage;
  RowList rows;
  auto add = [&](std::optional<double> ttft, std::optional<float> prompt_ms, std::optional<std::int32_t> prompt,
                 bool ok = true) -> Row& {
    Row r;
    r.outcome_index = ok ? RowNames::kOk : RowNames::index("http_error");
    r.started_at_us = 1000;
    r.ttft_ms = ttft;
    r.engine_prompt_ms = prompt_ms;
    r.prompt_tokens = prompt;
    storage.push_back(r);
    rows.push_back(&storage.back());
    return storage.back();
  };
  add(100.0, 60.0f, 30);
  add(100.0, std::nullopt, 30);                      // no engine time
  add(100.0, 60.0f, std::nullopt);                   // no prompt length
  add(100.0, 60.0f, 30, false);                      // not ok
  Row& not_streamed = add(std::nullopt, 60.0f, 30);  // its first token: e2e less the engine's decode
  not_streamed.e2e_ms = std::optional<double>(500);
  not_streamed.engine_predicted_ms = std::optional<float>(380.0f);
  const auto windows = prompt_windows_of(rows);
  ASSERT_EQ(windows.size(), 2u);
  EXPECT_DOUBLE_EQ(windows[0].first_token_ms, 100);
  EXPECT_DOUBLE_EQ(windows[0].prompt_ms, 60);
  EXPECT_EQ(windows[0].prompt_tokens, 30);
  EXPECT_DOUBLE_EQ(windows[1].first_token_ms, 120);
}

}  // namespace
}  // namespace mpo::report
