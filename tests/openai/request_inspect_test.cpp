// inspect_request (openai/request_inspect.cpp, simdjson On-Demand) against the reading of a whole DOM
// parse (fuzz/request_reading.hpp): the same wherever the DOM accepts the body. The bodies are
// invented, shaped as the OpenAI, Responses and Anthropic SDKs send them; the edge cases say so.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../fuzz/request_reading.hpp"
#include "openai/chunk.hpp"

namespace mpo::openai {
namespace {

using reading::inspect_request_by_dom;

// A long agent request: a system prompt, thirty tool rounds (calls, escaped arguments, results with
// tabs, newlines and non-ASCII text), then the members the proxy reads, after all of that.
std::string agent_request() {
  std::string body =
      R"({"messages":[{"role":"system","content":"You are a coding agent. Read files \u2014 then act."})";
  for (int i = 0; i < 30; ++i) {
    const std::string n = std::to_string(i);
    body += R"(,{"role":"user","content":"step )" + n + R"(: read the next file, caf\u00e9 \"quoted\""})";
    body += R"(,{"role":"assistant","content":null,"tool_calls":[{"id":"call_)" + n +
            R"(","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"/src/x)" + n +
            R"(.py\"}"}}]})";
    body += R"(,{"role":"tool","tool_call_id":"call_)" + n + R"(","content":"def f():\n\treturn 1.5e3 # é"})";
  }
  body += R"(],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object",)"
          R"("properties":{"path":{"type":"string"},"model":{"type":"string"}}}}}],)"
          R"("temperature":0.2,"max_tokens":512,"model":"qwen3-coder","stream":true,)"
          R"("stream_options":{"include_usage":true},"user":"agent-7","metadata":{"user_id":"u-42"}})";
  return body;
}

std::vector<std::string> bodies() {
  return {
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}})",
      R"({"model":"gpt-x","input":"hello","previous_response_id":"resp_1","stream":true,"safety_identifier":"s-1"})",
      R"({"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"hi"}],"metadata":{"user_id":"a"},"stream":false})",
      R"({"model":"m","prompt":"once upon","max_tokens":8,"stream":false})",
      agent_request(),
      // Edge cases (invented): keys given twice, escaped keys, members of the wrong type, nested
      // members of the same names, empty values, whitespace, a non-object root.
      R"({"model":"a","stream":true,"user":"u1","model":"b","stream":false,"user":"u2","stream_options":{"include_usage":true},"stream_options":{"include_usage":false}})",
      R"({"mod\u0065l":"escaped","str\u0065am":true,"stream_options":{"include\u005fusage":true}})",
      R"({"model":7,"stream":"yes","stream_options":[true],"user":"","metadata":{"user_id":3},"safety_identifier":null})",
      R"({"model":"","stream":false,"metadata":{"user_id":"x","user_id":"y"},"stream_options":{"include_usage":1,"include_usage":true}})",
      R"({"messages":[{"model":"inner","stream":true,"user":"inner"}],"metadata":{"nested":{"user_id":"deep"}}})",
      " \n\t{ \"model\" : \"spaced\" , \"stream\" : true } \r\n",
      R"({"model":"\ud83d\ude00 emoji","user":"\u0000nul"})",
      // Output limits (invented edge cases): each API's key, both chat keys, not integers, negative,
      // past int64, given twice.
      R"({"max_tokens":100,"max_completion_tokens":50})",
      R"({"max_completion_tokens":null,"max_tokens":7})",
      R"({"max_output_tokens":300,"input":"x"})",
      R"({"max_tokens":1.5,"max_output_tokens":9})",
      R"({"max_tokens":-1})",
      R"({"max_tokens":18446744073709551615})",
      R"({"max_tokens":"64"})",
      R"({"max_tokens":0,"max_tokens":5})",
      R"({"max_tokens":1e3})",
      "{}",
      "[]",
      R"("just a string")",
      "null",
  };
}

TEST(InspectRequest, ReadsWhatADomParseReads) {
  for (const auto& body : bodies()) {
    const auto by_dom = inspect_request_by_dom("/v1/chat/completions", body);
    EXPECT_EQ(inspect_request("/v1/chat/completions", body), by_dom) << body.substr(0, 120);
  }
}

// The proxy reads a body where it lies when its string has room past its end: the same reading as
// the copy's, whatever bytes lie in that room (a longer body's, left there: a truncated body followed
// by its own closing brace must not read as whole), and the copy where there is no room.
TEST(InspectRequest, ABodyReadWhereItLiesReadsAsItsCopy) {
  for (const auto& body : bodies()) {
    std::string kept(body.size() + kRequestBodyPadding + 64, '}');  // what an earlier body left
    kept.assign(body);
    ASSERT_GE(kept.capacity(), body.size() + kRequestBodyPadding);
    EXPECT_EQ(inspect_request_in_place("/v1/chat/completions", kept), inspect_request("/v1/chat/completions", body))
        << body.substr(0, 120);
    std::string tight;
    tight.reserve(body.size());
    tight.assign(body);
    EXPECT_EQ(inspect_request_in_place("/v1/chat/completions", tight), inspect_request("/v1/chat/completions", body));
  }
  std::string truncated(200, '}');
  truncated.assign(R"({"model":"m","max_tokens":5)");
  EXPECT_FALSE(inspect_request_in_place("/v1/chat/completions", truncated).json);
  truncated.assign(R"({"model":"m","max_tokens":5})");
  EXPECT_TRUE(inspect_request_in_place("/v1/chat/completions", truncated).json);
}

// The output limit each API names; chat's max_completion_tokens wins over its older max_tokens.
TEST(InspectRequest, TheOutputLimitOfEachApi) {
  EXPECT_EQ(inspect_request("/v1/chat/completions", agent_request()).max_tokens, 512);
  EXPECT_EQ(inspect_request("/v1/chat/completions", R"({"max_tokens":100,"max_completion_tokens":50})").max_tokens, 50);
  EXPECT_EQ(inspect_request("/v1/responses", R"({"max_output_tokens":300,"input":"x"})").max_tokens, 300);
  EXPECT_EQ(inspect_request("/v1/messages", R"({"max_tokens":64,"messages":[]})").max_tokens, 64);
  EXPECT_FALSE(inspect_request("/v1/chat/completions", R"({"max_tokens":-1})").max_tokens.has_value());
  EXPECT_FALSE(inspect_request("/v1/chat/completions", R"({"max_tokens":1.5})").max_tokens.has_value());
  EXPECT_FALSE(inspect_request("/v1/chat/completions", R"({"messages":[]})").max_tokens.has_value());
}

TEST(InspectRequest, ALongAgentRequestIsReadPastItsMessages) {
  const auto r = inspect_request("/v1/chat/completions", agent_request());
  EXPECT_TRUE(r.json);
  EXPECT_EQ(r.model, "qwen3-coder");  // not the tool schema's "model" property
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.usage_requested);
  EXPECT_EQ(r.user, "agent-7");
  EXPECT_EQ(r.metadata_user_id, "u-42");
}

TEST(InspectRequest, EscapedKeysAndValuesAreReadUnescaped) {
  const auto r = inspect_request("/v1/responses", R"({"mod\u0065l":"a\"b","previous_response_id":"r\/1"})");
  EXPECT_EQ(r.operation, Operation::kResponses);
  EXPECT_EQ(r.model, "a\"b");
  EXPECT_EQ(r.previous_response_id, "r/1");
}

// Every one-byte change of each body (a byte replaced by one of a few JSON-significant ones, or
// dropped): wherever the DOM still accepts the result, the readings agree; where it refuses it,
// the reading never reports members it did not walk to the end.
TEST(InspectRequest, MutatedBodiesAreReadAsTheDomReadsThem) {
  const std::string swaps = "\"{}[]:,\\ 0aetn";
  std::size_t compared = 0;
  for (const auto& body : bodies()) {
    const std::size_t stride = body.size() > 2000 ? 7 : 1;  // the agent's request: every seventh byte
    for (std::size_t i = 0; i < body.size(); i += stride) {
      std::vector<std::string> variants;
      variants.push_back(body.substr(0, i) + body.substr(i + 1));
      for (const char c : swaps) {
        std::string v = body;
        v[i] = c;
        variants.push_back(std::move(v));
      }
      for (const auto& v : variants) {
        const auto read = inspect_request("/v1/chat/completions", v);
        const auto by_dom = inspect_request_by_dom("/v1/chat/completions", v);
        if (by_dom.json) {
          ++compared;
          ASSERT_EQ(read, by_dom) << v.substr(0, 200);
        } else if (!read.json) {
          ASSERT_EQ(read, RequestInfo{.operation = read.operation}) << v.substr(0, 200);
        }
      }
    }
  }
  EXPECT_GT(compared, 1000u);
}

// What the reading does not look for (documented in openai/request_inspect.cpp): a fault inside a
// value it steps over. The DOM refuses this body; the reading still finds its model and stream (the
// engine answers such a request with its own error, which the ledger keeps).
TEST(InspectRequest, AFaultInsideAValueSteppedOverIsNotLookedFor) {
  const std::string body = R"({"model":"m","messages":[{"content":01}],"stream":true})";
  EXPECT_FALSE(inspect_request_by_dom("/v1/chat/completions", body).json);
  const auto r = inspect_request("/v1/chat/completions", body);
  EXPECT_TRUE(r.json);
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  // A fault in the structure walked is one: nothing is read.
  for (const std::string bad :
       {R"({"model":"m","stream":tru})", R"({"model":"m"} x)", R"({"model":"m"}})", R"({"model":"m"} {"stream":true})",
        R"({"model":"m",})", R"({"model":"m" "stream":true})", R"({"stream_options":{"include_usage":true,}})"}) {
    EXPECT_EQ(inspect_request("/v1/chat/completions", bad), RequestInfo{.operation = Operation::kChat}) << bad;
  }
}

}  // namespace
}  // namespace mpo::openai
