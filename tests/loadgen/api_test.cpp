// The bodies the load generator sends in each API (loadgen/api.hpp).
#include "loadgen/api.hpp"

#include <gtest/gtest.h>

namespace mpo::loadgen {
namespace {

ServingRequest request() {
  ServingRequest r;
  r.id = "r1";
  r.messages = {{"system", "Be brief."}, {"user", "Say \"hi\""}};
  r.max_output_tokens = 7;
  return r;
}

TEST(SweepApi, ChatIsFaksBodyKeysSorted) {
  EXPECT_EQ(
      request_body(request(), "m", false),
      R"({"max_tokens":7,"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say \"hi\""}],)"
      R"("model":"m","stream":true,"stream_options":{"include_usage":true},"temperature":0})");
  EXPECT_EQ(request_body(request(), "m", true, Api::kChat).substr(0, 19), R"({"ignore_eos":true,)");
}

TEST(SweepApi, CompletionsJoinTheMessagesIntoOnePrompt) {
  EXPECT_EQ(request_body(request(), "m", false, Api::kCompletions),
            R"({"max_tokens":7,"model":"m","prompt":"Be brief.\nSay \"hi\"","stream":true,)"
            R"("stream_options":{"include_usage":true},"temperature":0})");
}

TEST(SweepApi, ResponsesSendTheMessagesAsInput) {
  EXPECT_EQ(request_body(request(), "m", false, Api::kResponses),
            R"({"input":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say \"hi\""}],)"
            R"("max_output_tokens":7,"model":"m","stream":true,"temperature":0})");
}

TEST(SweepApi, MessagesTakeTheSystemPromptApart) {
  EXPECT_EQ(request_body(request(), "m", false, Api::kMessages),
            R"({"max_tokens":7,"messages":[{"role":"user","content":"Say \"hi\""}],"model":"m","stream":true,)"
            R"("system":"Be brief.","temperature":0})");
  ServingRequest no_system = request();
  no_system.messages.erase(no_system.messages.begin());
  EXPECT_EQ(request_body(no_system, "m", false, Api::kMessages).find("system"), std::string::npos);
}

TEST(SweepApi, NamesPathsAndOperations) {
  EXPECT_EQ(parse_api("responses"), Api::kResponses);
  EXPECT_FALSE(parse_api("chat/completions"));
  EXPECT_EQ(api_path(Api::kMessages), "/messages");
  EXPECT_EQ(api_operation(Api::kCompletions), "text_completion");
  EXPECT_EQ(api_operation(Api::kMessages), "messages");
}

}  // namespace
}  // namespace mpo::loadgen
