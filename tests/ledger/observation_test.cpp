#include "ledger/observation.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "support/observation.hpp"

namespace mpo::ledger {
namespace {

Observation streamed() {
  Observation o = test::streamed_chat_line("id-1", 1'787'824'800'000'000, 250);
  o.ttft_ms = 50;
  o.completion_tokens = 5;
  o.itl_ms = {40, 50, 60, 50};
  o.content_events = 5;
  return o;
}

TEST(Observation, DerivedFieldsFollowTheContract) {
  const Observation o = streamed();
  EXPECT_DOUBLE_EQ(*tpot_ms(o), 50.0);                       // (250 - 50) / (5 - 1)
  EXPECT_DOUBLE_EQ(*output_tokens_per_second(o), 25.0);      // 5 / 0.2 s
  EXPECT_DOUBLE_EQ(*e2e_output_tokens_per_second(o), 20.0);  // 5 / 0.25 s
  Observation one = o;
  one.completion_tokens = 1;
  EXPECT_FALSE(tpot_ms(one).has_value());
  Observation whole = o;
  whole.stream = false;
  EXPECT_FALSE(tpot_ms(whole).has_value());
  EXPECT_FALSE(output_tokens_per_second(whole).has_value());
  EXPECT_TRUE(e2e_output_tokens_per_second(whole).has_value());
}

// An engine holds a tool call's first tokens until it has parsed the function's name (llama.cpp
// b10309: ~17 tokens of a Llama-3.1-style call, tests/fixtures/llamacpp/): a stream whose first event
// is a tool call dates no first token, so nothing per token after it is derived; its e2e rate stands.
TEST(Observation, AStreamThatBeginsWithAToolCallHasNoTpot) {
  Observation o = streamed();
  o.first_output = "content";
  EXPECT_TRUE(tpot_ms(o).has_value());
  o.first_output = "tool_calls";
  EXPECT_FALSE(tpot_ms(o).has_value());
  EXPECT_FALSE(output_tokens_per_second(o).has_value());
  EXPECT_TRUE(e2e_output_tokens_per_second(o).has_value());
  const auto line = boost::json::parse(render_observation(o)).as_object();
  EXPECT_EQ(line.at("first_output"), "tool_calls");
  EXPECT_TRUE(line.at("tpot_ms").is_null());
  EXPECT_EQ(line.at("ttft_ms").to_number<double>(), 50.0);  // what the client saw stays
}

// A request of `n` choices decodes them side by side: TPOT is each choice's pace, the output rates
// count every choice's tokens.
TEST(Observation, TpotOfSeveralChoicesIsEachChoicesPace) {
  Observation o = streamed();
  o.choices = 2;
  o.completion_tokens = 10;                              // 5 a choice
  EXPECT_DOUBLE_EQ(*tpot_ms(o), 50.0);                   // (250 - 50) / (10 / 2 - 1)
  EXPECT_DOUBLE_EQ(*output_tokens_per_second(o), 50.0);  // 10 / 0.2 s
  o.completion_tokens = 3;                               // 1.5 a choice: no pace after the first token
  EXPECT_FALSE(tpot_ms(o).has_value());
}

TEST(Observation, LineHasEveryFieldInContractOrderWithNullForUnknown) {
  const std::string line = render_observation(streamed());
  ASSERT_EQ(line.back(), '\n');
  const auto v = boost::json::parse(line).as_object();
  const char* order[] = {"schema",
                         "observation_id",
                         "started_at",
                         "ended_at",
                         "proxy_instance",
                         "backend",
                         "method",
                         "path",
                         "operation",
                         "model",
                         "response_model",
                         "response_id",
                         "upstream_request_id",
                         "trace_id",
                         "span_id",
                         "session_id",
                         "session_source",
                         "turn",
                         "stream",
                         "usage_requested",
                         "usage_injected",
                         "max_tokens",
                         "http_status",
                         "outcome",
                         "error_type",
                         "error_message",
                         "finish_reason",
                         "choices",
                         "ttfb_ms",
                         "ttft_ms",
                         "e2e_ms",
                         "tpot_ms",
                         "itl_p50_ms",
                         "itl_p95_ms",
                         "itl_max_ms",
                         "content_events",
                         "first_output",
                         "prompt_tokens",
                         "completion_tokens",
                         "total_tokens",
                         "cached_prompt_tokens",
                         "reasoning_tokens",
                         "token_source",
                         "output_tokens_per_second",
                         "e2e_output_tokens_per_second",
                         "request_bytes",
                         "response_bytes",
                         "in_flight_at_start",
                         "upstream_retries",
                         "timing_basis",
                         "proxy_lag_ms",
                         "proxy_lag_at_ms",
                         "proxy_lag_quiet_ms",
                         "server_timings"};
  std::size_t i = 0;
  for (const auto& kv : v) {
    ASSERT_LT(i, std::size(order));
    EXPECT_EQ(kv.key(), order[i]) << i;
    ++i;
  }
  EXPECT_EQ(i, std::size(order));
  EXPECT_TRUE(v.at("prompt_tokens").is_null());  // unknown is null, never 0
  EXPECT_TRUE(v.at("model").is_null());
  EXPECT_EQ(v.at("started_at"), "2026-08-27T10:00:00.000000Z");
  EXPECT_EQ(v.at("itl_p50_ms").to_number<double>(), 50.0);
  EXPECT_EQ(v.at("itl_max_ms").to_number<double>(), 60.0);
}

TEST(Observation, FullItlListAndRawServerTimings) {
  Observation o = streamed();
  o.itl_full = true;
  o.server_timings = R"({"predicted_n":5})";
  const auto v = boost::json::parse(render_observation(o)).as_object();
  EXPECT_EQ(v.at("itl_ms").as_array().size(), 4u);
  EXPECT_EQ(v.at("server_timings").as_object().at("predicted_n"), 5);
}

// Derived figures are written to a millionth of their unit: an interpolated quantile of microsecond
// gaps reads 18.41305, not 18.413050000000002, and a rate keeps six decimals.
TEST(Observation, DerivedFiguresAreWrittenToAMillionth) {
  Observation o = streamed();
  o.ttft_ms = 23.054;
  o.e2e_ms = 78.203;
  o.completion_tokens = 4;
  o.itl_ms = {18.227, 18.433, 18.001, 18.3};  // p95: 18.3 * 0.15 + 18.433 * 0.85 = 18.413050000000002
  const std::string line = render_observation(o);
  EXPECT_NE(line.find(R"("itl_p95_ms":18.41305,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("tpot_ms":18.383,)"), std::string::npos) << line;  // (78.203 - 23.054) / 3
  // 4 / 0.055149 s = 72.530780249868...; 4 / 0.078203 s = 51.148932905387...
  EXPECT_NE(line.find(R"("output_tokens_per_second":72.53078,)"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("e2e_output_tokens_per_second":51.148933,)"), std::string::npos) << line;
}

TEST(Observation, GapLineNamesTheCount) {
  const auto v = boost::json::parse(render_gap(0, 7)).as_object();
  EXPECT_EQ(v.at("schema"), "modelperfobs.ledger-gap.v1");
  EXPECT_EQ(v.at("dropped_lines"), 7);
}

}  // namespace
}  // namespace mpo::ledger
