// Multi-turn conversations and Mooncake-style traces (loadgen/conversation.hpp, loadgen/trace.hpp),
// and how the APIs write a conversation's tool turns (loadgen/api.hpp).
#include "loadgen/conversation.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>

#include "core/go_json.hpp"
#include "loadgen/api.hpp"
#include "loadgen/trace.hpp"

namespace mpo::loadgen {
namespace {

namespace json = boost::json;

bool same_message(const Message& a, const Message& b) {
  return a.role == b.role && a.content == b.content && a.tool_name == b.tool_name && a.tool_call_id == b.tool_call_id;
}

// Whether `earlier`'s messages are the first messages of `later` (what a prefix cache can serve).
bool is_prefix(const ServingRequest& earlier, const ServingRequest& later) {
  if (earlier.messages.size() >= later.messages.size()) return false;
  for (std::size_t i = 0; i < earlier.messages.size(); ++i) {
    if (!same_message(earlier.messages[i], later.messages[i])) return false;
  }
  return true;
}

std::int64_t words(const std::string& s) { return s.empty() ? 0 : 1 + std::count(s.begin(), s.end(), ' '); }

// The first `n` space-separated words of `s`.
std::string first_words(const std::string& s, std::size_t n) {
  std::size_t end = 0;
  for (std::size_t i = 0; i < n && end != std::string::npos; ++i) end = s.find(' ', end == 0 ? 0 : end + 1);
  return s.substr(0, end);
}

TEST(MultiTurn, EachTurnSendsTheWholeConversationSoFar) {
  MultiTurnOptions o;
  o.sessions = 3;
  o.turns = {LengthDistribution::Kind::kConstant, 4, 0};
  o.user_tokens = {LengthDistribution::Kind::kConstant, 10, 0};
  o.answer_tokens = {LengthDistribution::Kind::kConstant, 6, 0};
  o.system_prompt_tokens = 20;
  const auto w = multi_turn_workload(o);
  ASSERT_EQ(w.size(), 12u);
  for (std::size_t s = 0; s < 3; ++s) {
    for (std::size_t t = 0; t < 4; ++t) {
      const auto& r = w[s * 4 + t];
      EXPECT_EQ(r.session_id, fmt::format("session-{:04}", s + 1));
      EXPECT_EQ(r.turn, static_cast<std::int32_t>(t + 1));
      EXPECT_EQ(r.id, fmt::format("session-{:04}/turn-{:02}", s + 1, t + 1));
      // system, then user/assistant pairs, ending with this turn's user message
      ASSERT_EQ(r.messages.size(), 1 + 2 * t + 1);
      EXPECT_EQ(r.messages.front().role, "system");
      EXPECT_EQ(r.messages.back().role, "user");
      EXPECT_EQ(words(r.messages.back().content), 10);
      EXPECT_EQ(r.max_output_tokens, 6);
      std::int64_t total = 0;
      for (const auto& m : r.messages) total += words(m.content);
      EXPECT_EQ(r.prompt_tokens_estimate, total);
      if (t > 0) {
        EXPECT_TRUE(is_prefix(w[s * 4 + t - 1], r)) << r.id;
        EXPECT_EQ(r.messages[r.messages.size() - 2].role, "assistant");
        EXPECT_EQ(words(r.messages[r.messages.size() - 2].content), 6);  // the answer's length
      }
    }
  }
  // One system prompt for every session; each session's own words after it.
  EXPECT_EQ(w[0].messages[0].content, w[4].messages[0].content);
  EXPECT_NE(w[0].messages[1].content, w[4].messages[1].content);
  EXPECT_FALSE(is_prefix(w[0], w[5]));
}

TEST(MultiTurn, SeededDistributionsAndThinkTime) {
  MultiTurnOptions o;
  o.sessions = 20;
  o.turns = {LengthDistribution::Kind::kUniform, 1, 6};
  o.think_time_ms = LengthDistribution{LengthDistribution::Kind::kConstant, 250, 0};
  const auto a = multi_turn_workload(o), b = multi_turn_workload(o);
  EXPECT_EQ(workload_digest(a), workload_digest(b));
  o.seed = 2;
  EXPECT_NE(workload_digest(a), workload_digest(multi_turn_workload(o)));
  std::set<std::int32_t> lengths;
  for (const auto& u : units_of(a)) lengths.insert(static_cast<std::int32_t>(u.end - u.begin));
  EXPECT_GT(lengths.size(), 2u);  // drawn, not constant
  for (const auto& r : a) EXPECT_DOUBLE_EQ(r.think_time_s, r.turn == 1 ? 0.0 : 0.25) << r.id;
  EXPECT_NE(describe_sessions(a).find("20 sessions of "), std::string::npos) << describe_sessions(a);
}

TEST(MultiTurn, ToolTurnsAnswerTheCallBeforeThem) {
  MultiTurnOptions o;
  o.sessions = 4;
  o.turns = {LengthDistribution::Kind::kConstant, 5, 0};
  o.tool_turn_share = 1;  // every turn after the first
  o.tool_result_tokens = {LengthDistribution::Kind::kConstant, 40, 0};
  const auto w = multi_turn_workload(o);
  for (const auto& r : w) {
    if (r.turn == 1) continue;
    const auto& call = r.messages[r.messages.size() - 2];
    const auto& result = r.messages.back();
    EXPECT_EQ(call.role, "assistant");
    EXPECT_EQ(call.tool_name, kToolName);
    EXPECT_EQ(result.role, "tool");
    EXPECT_EQ(result.tool_call_id, call.tool_call_id);
    EXPECT_EQ(words(result.content), 40);
    auto args = parse_exact_json(call.content);
    ASSERT_TRUE(args.ok()) << call.content;
    EXPECT_TRUE(args->as_object().contains("query"));
  }
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (w[i].turn > 1) {
      EXPECT_TRUE(is_prefix(w[i - 1], w[i])) << w[i].id;
    }
  }
}

TEST(MultiTurn, UnitsAreWholeSessionsOrSingleRequests) {
  std::vector<ServingRequest> rs(6);
  rs[0].id = "warm";
  rs[1].session_id = rs[2].session_id = "a";
  rs[3].session_id = "b";
  rs[4].session_id = rs[5].session_id = "c";
  const auto u = units_of(rs);
  ASSERT_EQ(u.size(), 4u);
  EXPECT_EQ(u[0].end - u[0].begin, 1u);
  EXPECT_EQ(u[1].begin, 1u);
  EXPECT_EQ(u[1].end, 3u);
  EXPECT_EQ(u[2].end - u[2].begin, 1u);
  EXPECT_EQ(u[3].begin, 4u);
  EXPECT_EQ(u[3].end, 6u);
}

TEST(MultiTurn, APointsMarkerKeepsEachSessionsTurnsAPrefixOfTheNext) {
  MultiTurnOptions o;
  o.sessions = 3;
  o.system_prompt_tokens = 8;
  auto w = multi_turn_workload(o);
  const std::size_t shared = shared_leading_words(w);
  EXPECT_EQ(shared, 0u);  // the first user messages differ from their first word
  mark_prompts(w, shared, "p003salt");
  for (std::size_t i = 1; i < w.size(); ++i) {
    if (w[i].turn > 1) {
      EXPECT_TRUE(is_prefix(w[i - 1], w[i])) << w[i].id;
    }
  }
  EXPECT_EQ(w[0].messages[1].content.rfind("p003salt ", 0), 0u) << w[0].messages[1].content;
  EXPECT_EQ(w[0].session_id, "session-0001.p003salt");
  EXPECT_EQ(w[0].messages[0].content.find("p003salt"), std::string::npos);  // the shared system prompt stays shared
}

TEST(MultiTurn, OnlySessionWorkloadsAddMembersToTheDigestedList) {
  const auto single = synthetic_workload({});
  const auto text = go_marshal(workload_json(single));
  EXPECT_EQ(text.find("session_id"), std::string::npos);
  EXPECT_EQ(text.find("tool_"), std::string::npos);
  MultiTurnOptions o;
  o.sessions = 1;
  o.tool_turn_share = 1;
  const auto multi = go_marshal(workload_json(multi_turn_workload(o)));
  EXPECT_NE(multi.find(R"("session_id":"session-0001","turn":2,"think_time_s":0)"), std::string::npos);
  EXPECT_NE(multi.find(R"("tool_name":"lookup")"), std::string::npos);
}

// A two-turn conversation whose second turn is a tool's result.
ServingRequest tool_turn() {
  MultiTurnOptions o;
  o.sessions = 1;
  o.turns = {LengthDistribution::Kind::kConstant, 2, 0};
  o.tool_turn_share = 1;
  o.system_prompt_tokens = 3;
  return multi_turn_workload(o).back();
}

TEST(MultiTurnApi, ChatSendsToolCallsAndToolMessages) {
  const auto r = tool_turn();
  auto body = parse_exact_json(request_body(r, "m", false, Api::kChat));
  ASSERT_TRUE(body.ok());
  const auto& msgs = body->as_object().at("messages").as_array();
  ASSERT_EQ(msgs.size(), 4u);
  const auto& call = msgs[2].as_object();
  EXPECT_TRUE(call.at("content").is_null());
  EXPECT_EQ(call.at("tool_calls").as_array()[0].at("function").at("name").as_string(), "lookup");
  const auto id = call.at("tool_calls").as_array()[0].at("id").as_string();
  EXPECT_EQ(msgs[3].at("role").as_string(), "tool");
  EXPECT_EQ(msgs[3].at("tool_call_id").as_string(), id);
  EXPECT_EQ(body->as_object().at("tools").as_array()[0].at("function").at("name").as_string(), "lookup");
}

TEST(MultiTurnApi, ResponsesSendsFunctionCallItemsAndOutputMessages) {
  auto r = tool_turn();
  r.messages.push_back({"assistant", "an earlier answer", {}, {}});
  r.messages.push_back({"user", "and then", {}, {}});
  auto body = parse_exact_json(request_body(r, "m", false, Api::kResponses));
  ASSERT_TRUE(body.ok());
  const auto& items = body->as_object().at("input").as_array();
  ASSERT_EQ(items.size(), 6u);
  EXPECT_EQ(items[2].at("type").as_string(), "function_call");
  EXPECT_EQ(items[2].at("name").as_string(), "lookup");
  EXPECT_EQ(items[3].at("type").as_string(), "function_call_output");
  EXPECT_EQ(items[3].at("call_id").as_string(), items[2].at("call_id").as_string());
  // llama.cpp b10309 refuses an assistant item whose content is a plain string.
  EXPECT_EQ(items[4].at("type").as_string(), "message");
  EXPECT_EQ(items[4].at("content").as_array()[0].at("type").as_string(), "output_text");
  EXPECT_EQ(body->as_object().at("tools").as_array()[0].at("name").as_string(), "lookup");
}

TEST(MultiTurnApi, MessagesSendsToolUseAndToolResultBlocks) {
  const auto r = tool_turn();
  auto body = parse_exact_json(request_body(r, "m", false, Api::kMessages));
  ASSERT_TRUE(body.ok());
  const auto& msgs = body->as_object().at("messages").as_array();
  ASSERT_EQ(msgs.size(), 3u);  // the system prompt is `system`
  const auto& use = msgs[1].at("content").as_array()[0].as_object();
  EXPECT_EQ(use.at("type").as_string(), "tool_use");
  EXPECT_TRUE(use.at("input").as_object().contains("query"));
  const auto& result = msgs[2].at("content").as_array()[0].as_object();
  EXPECT_EQ(msgs[2].at("role").as_string(), "user");
  EXPECT_EQ(result.at("type").as_string(), "tool_result");
  EXPECT_EQ(result.at("tool_use_id").as_string(), use.at("id").as_string());
  EXPECT_EQ(body->as_object().at("tools").as_array()[0].at("input_schema").at("type").as_string(), "object");
}

TEST(MultiTurnApi, AWorkloadWithoutToolTurnsDeclaresNoTools) {
  MultiTurnOptions o;
  o.sessions = 1;
  for (Api api : {Api::kChat, Api::kResponses, Api::kMessages}) {
    EXPECT_EQ(request_body(multi_turn_workload(o).back(), "m", false, api).find("tools"), std::string::npos);
  }
}

// `sweep --require-tool-calls`: the engine is asked for the call the next turn answers, and every
// turn declares the tool, so each turn's prompt stays the next one's prefix.
TEST(MultiTurnApi, RequiredToolCallsAreAskedOfTheTurnBeforeEachToolTurnInEachApisShape) {
  MultiTurnOptions o;
  o.sessions = 6;
  o.turns = {LengthDistribution::Kind::kConstant, 5, 0};
  o.tool_turn_share = 0.5;
  o.require_tool_calls = true;
  const auto w = multi_turn_workload(o);
  std::size_t asked = 0;
  for (std::size_t i = 0; i < w.size(); ++i) {
    const bool next_is_tool_turn = i + 1 < w.size() && w[i + 1].turn > 1 && w[i + 1].messages.back().role == "tool";
    EXPECT_EQ(w[i].requires_tool_call, next_is_tool_turn) << w[i].id;
    asked += w[i].requires_tool_call ? 1 : 0;
    for (Api api : {Api::kChat, Api::kResponses, Api::kMessages}) {
      auto body = parse_exact_json(request_body(w[i], "m", false, api));
      ASSERT_TRUE(body.ok());
      const auto& b = body->as_object();
      EXPECT_EQ(b.at("tools").as_array().size(), 1u) << w[i].id;
      if (!next_is_tool_turn) {
        EXPECT_FALSE(b.contains("tool_choice")) << w[i].id;
      } else if (api == Api::kMessages) {
        EXPECT_EQ(b.at("tool_choice").at("type").as_string(), "any");
      } else {
        EXPECT_EQ(b.at("tool_choice").as_string(), "required");
      }
    }
  }
  EXPECT_GT(asked, 3u);
  EXPECT_LT(asked, w.size() - o.sessions);  // drawn: not every turn
  // The workload says so (its digest changes), and without the flag it is the same as before.
  const auto listed = workload_json(w);
  const auto& entries = listed.as_array();
  EXPECT_EQ(entries[0].at("tools").as_array()[0].as_string(), "lookup");
  std::size_t required = 0;
  for (const auto& e : entries) required += e.as_object().contains("tool_choice") ? 1 : 0;
  EXPECT_EQ(required, asked);
  o.require_tool_calls = false;
  const auto plain = multi_turn_workload(o);
  EXPECT_NE(workload_digest(plain), workload_digest(w));
  const auto plain_listed = workload_json(plain);
  for (const auto& e : plain_listed.as_array()) {
    EXPECT_FALSE(e.as_object().contains("tools"));
    EXPECT_FALSE(e.as_object().contains("tool_choice"));
  }
  EXPECT_EQ(request_body(plain.front(), "m", false, Api::kChat).find("tools"), std::string::npos);
}

// Written for these tests in the format of kvcache-ai/Mooncake's traces (FAST'25 release
// mooncake_trace.jsonl; also documented by AIPerf's trace replay guide), with block size 4 so the
// prompts stay small: requests 1 and 2 share blocks 7 and 8, request 3 shares block 7 only.
constexpr const char* kInventedTrace =
    "{\"timestamp\": 0, \"input_length\": 7, \"output_length\": 3, \"hash_ids\": [7, 8]}\n"
    "\n"
    "{\"timestamp\": 250, \"input_length\": 12, \"output_length\": 5, \"hash_ids\": [7, 9, 10]}\n"
    "{\"timestamp\": 100, \"input_length\": 8, \"output_length\": 4, \"hash_ids\": [7, 8]}\n"
    "{\"timestamp\": 250.5, \"input_length\": 5, \"output_length\": 2}\n";

TEST(Trace, EqualHashIdsGiveEqualTextAndArrivalsKeepTheirTimes) {
  auto t = parse_mooncake_trace(kInventedTrace, TraceOptions{4, 1});
  ASSERT_TRUE(t.ok()) << t.error().message;
  ASSERT_EQ(t->requests.size(), 4u);
  const auto& r = t->requests;
  // In time order: 0, 100, 250, 250.5 ms.
  EXPECT_DOUBLE_EQ(*r[0].arrival_offset_s, 0.0);
  EXPECT_DOUBLE_EQ(*r[1].arrival_offset_s, 0.1);
  EXPECT_DOUBLE_EQ(*r[2].arrival_offset_s, 0.25);
  EXPECT_DOUBLE_EQ(*r[3].arrival_offset_s, 0.2505);
  const auto text = [&](std::size_t i) { return r[i].messages.at(0).content; };
  EXPECT_EQ(words(text(0)), 7);  // 4 + a partial block of 3
  EXPECT_EQ(words(text(1)), 8);
  EXPECT_EQ(words(text(2)), 12);
  EXPECT_EQ(words(text(3)), 5);
  EXPECT_EQ(text(1).rfind(text(0), 0), 0u);  // blocks 7, 8 (the first 3 words of 8): a prefix of blocks 7, 8
  const std::string block7 = first_words(text(1), 4);
  EXPECT_EQ(words(block7), 4);
  EXPECT_EQ(text(2).rfind(block7 + " ", 0), 0u);           // shares block 7
  EXPECT_NE(text(2).substr(0, text(1).size()), text(1));   // and not block 8
  EXPECT_EQ(text(3).rfind(block7, 0), std::string::npos);  // no hash ids: blocks of its own
  EXPECT_EQ(r[1].max_output_tokens, 4);
  EXPECT_EQ(r[2].prompt_tokens_estimate, 12);
  EXPECT_EQ(t->blocks, 6u);         // 7, 8, 9, 10 and two of request 4's own
  EXPECT_EQ(t->block_uses, 9u);     // 2 + 2 + 3 + 2
  EXPECT_EQ(t->shared_blocks, 3u);  // 7 twice more, 8 once more
  // The same seed, the same prompts; another seed, others.
  auto again = parse_mooncake_trace(kInventedTrace, TraceOptions{4, 1});
  EXPECT_EQ(workload_digest(again->requests), workload_digest(t->requests));
  EXPECT_NE(workload_digest(parse_mooncake_trace(kInventedTrace, TraceOptions{4, 2})->requests),
            workload_digest(t->requests));
}

TEST(Trace, BadLinesAreNamed) {
  auto bad = [](std::string_view text, std::int64_t block = 512) {
    auto t = parse_mooncake_trace(text, TraceOptions{block, 1});
    return t.ok() ? std::string("accepted") : t.error().message;
  };
  EXPECT_EQ(bad("{\"timestamp\":0,\"input_length\":10,\"output_length\":1}\nnot json\n"),
            "trace line 2: not a JSON object");
  EXPECT_NE(bad("{\"timestamp\":0,\"input_length\":1000,\"output_length\":1,\"hash_ids\":[1]}")
                .find("1 hash ids for 1000 input tokens, where blocks of 512 tokens need 2 (another block size? "
                      "--trace-block-tokens)"),
            std::string::npos);
  EXPECT_NE(bad("{\"timestamp\":-1,\"input_length\":5,\"output_length\":1}").find("timestamp"), std::string::npos);
  EXPECT_NE(bad("{\"timestamp\":0,\"input_length\":0,\"output_length\":1}").find("input_length"), std::string::npos);
  EXPECT_NE(bad("{\"timestamp\":0,\"input_length\":5}").find("output_length"), std::string::npos);
  EXPECT_NE(bad("{\"timestamp\":0,\"input_length\":5,\"output_length\":1,\"hash_ids\":[\"x\"]}").find("hash_ids"),
            std::string::npos);
  EXPECT_EQ(bad("\n\n"), "the trace holds no request");
  EXPECT_EQ(bad("{\"timestamp\":0,\"input_length\":5,\"output_length\":1}", 0),
            "the trace's block size must be at least 1 token");
}

TEST(Trace, SingleTokenWordsAreDrawnFromTheListAndSeeded) {
  const auto a = single_token_words(300, 5);
  EXPECT_EQ(words(a), 300);
  EXPECT_EQ(a, single_token_words(300, 5));
  EXPECT_NE(a, single_token_words(300, 6));
  EXPECT_EQ(single_token_words(0, 5), "");
}

}  // namespace
}  // namespace mpo::loadgen
