#include "sim/request_plan.hpp"

#include <gtest/gtest.h>

namespace mpo::sim {
namespace {

CompletionRequest chat(int prompt_tokens, std::optional<int> max_tokens, bool ignore_eos = false) {
  CompletionRequest r;
  r.endpoint = Endpoint::kChat;
  r.prompt.assign(static_cast<std::size_t>(prompt_tokens), 7);
  r.max_tokens = max_tokens;
  r.ignore_eos = ignore_eos;
  return r;
}

TEST(RequestPlan, TheSameRequestOnTheSameServerSeedPlansTheSameOutput) {
  Profile p;
  const auto a = plan_request(chat(10, 50), p, Fault::kNone, 42);
  const auto b = plan_request(chat(10, 50), p, Fault::kNone, 42);
  const auto c = plan_request(chat(10, 50), p, Fault::kNone, 43);
  EXPECT_EQ(a.spec.seed, b.spec.seed);
  EXPECT_EQ(a.spec.natural_tokens, b.spec.natural_tokens);
  EXPECT_NE(a.spec.seed, c.spec.seed);
  auto seeded = chat(10, 50);
  seeded.seed = 1;
  EXPECT_NE(plan_request(seeded, p, Fault::kNone, 42).spec.seed, a.spec.seed);  // the request's seed counts
}

// Each choice of a request for several draws its own output; the first draws what a request of
// one choice draws.
TEST(RequestPlan, EachChoiceHasItsOwnSeedAndTheFirstIsTheRequestsOwn) {
  Profile p;
  const auto one = plan_request(chat(10, 50), p, Fault::kNone, 42);
  EXPECT_EQ(plan_request(chat(10, 50), p, Fault::kNone, 42, 0).spec.seed, one.spec.seed);
  const auto second = plan_request(chat(10, 50), p, Fault::kNone, 42, 1);
  const auto third = plan_request(chat(10, 50), p, Fault::kNone, 42, 2);
  EXPECT_NE(second.spec.seed, one.spec.seed);
  EXPECT_NE(third.spec.seed, second.spec.seed);
  EXPECT_EQ(plan_request(chat(10, 50), p, Fault::kNone, 42, 1).spec.seed, second.spec.seed);
}

TEST(RequestPlan, ExpectedTokensAreMaxTokensTheNaturalLengthOrTheRoomLeft) {
  Profile p;
  p.engine.max_model_len = 100;
  const auto eos = plan_request(chat(10, 50, true), p, Fault::kNone, 1);
  EXPECT_EQ(eos.expected_tokens, 50);
  const auto natural = plan_request(chat(10, 1000), p, Fault::kNone, 1);
  EXPECT_EQ(natural.expected_tokens, std::min(natural.spec.natural_tokens, 90));
  const auto full = plan_request(chat(95, std::nullopt, true), p, Fault::kNone, 1);
  EXPECT_EQ(full.expected_tokens, 5);  // the context window's room
  EXPECT_EQ(eos.truncate_after, -1);
}

TEST(RequestPlan, FaultsCutHalfwayOrStall) {
  Profile p;
  const auto cut = plan_request(chat(10, 40, true), p, Fault::kTruncate, 1);
  EXPECT_EQ(cut.truncate_after, 20);
  EXPECT_EQ(plan_request(chat(10, 1, true), p, Fault::kTruncate, 1).truncate_after, 1);
  const auto stall = plan_request(chat(10, 40, true), p, Fault::kStall, 1);
  EXPECT_EQ(stall.spec.defer_s, p.faults.stall_s);
}

TEST(RequestPlan, ReasoningIsAShareOfChatWithoutAForcedTool) {
  Profile p;
  p.output.reasoning = true;
  p.output.reasoning_share = 0.5;
  EXPECT_EQ(plan_request(chat(10, 40, true), p, Fault::kNone, 1).reasoning_tokens, 20);
  auto tool = chat(10, 40, true);
  tool.tool_name = "lookup";
  EXPECT_EQ(plan_request(tool, p, Fault::kNone, 1).reasoning_tokens, 0);
  auto completion = chat(10, 40, true);
  completion.endpoint = Endpoint::kCompletions;
  EXPECT_EQ(plan_request(completion, p, Fault::kNone, 1).reasoning_tokens, 0);
}

}  // namespace
}  // namespace mpo::sim
