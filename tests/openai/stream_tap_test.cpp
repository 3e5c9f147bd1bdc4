#include "openai/stream_tap.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "support/fixtures.hpp"

namespace mpo::openai {
namespace {

const char* kStream =
    "data: "
    "{\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"
    "\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n"
    "data: [DONE]\n\n";

TEST(StreamTap, FirstContentNotRolePreludeAndGapsBetweenContentEvents) {
  StreamTap tap(true);
  const std::string s = kStream;
  const auto e1 = s.find("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"");
  const auto e2 = s.find("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"");
  tap.feed(s.substr(0, e1), 1000);        // role-only prelude at t=1 ms
  tap.feed(s.substr(e1, e2 - e1), 5000);  // first content at t=5 ms
  tap.feed(s.substr(e2), 9000);           // second at 9 ms, usage, [DONE]
  tap.finish(true);
  EXPECT_EQ(tap.first_content_us(), 5000);
  EXPECT_EQ(tap.content_events(), 2);
  ASSERT_EQ(tap.gaps_ms().size(), 1u);
  EXPECT_DOUBLE_EQ(tap.gaps_ms()[0], 4.0);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_EQ(tap.prompt_tokens(), 4);
  EXPECT_EQ(tap.finish_reason(), "length");
  EXPECT_EQ(tap.id(), "c1");
  EXPECT_TRUE(tap.saw_done());
  EXPECT_FALSE(tap.malformed());
}

// A request for two choices through llama.cpp b10309 (real capture): the choices' chunks come
// interleaved and each choice ends with a usage chunk of its own. The tap counts both choices,
// adds their output tokens (the prompt once), and measures each gap within its own choice.
TEST(StreamTap, TwoChoicesAreCountedTogetherAndTimedApart) {
  const std::string body = test::capture_body("llamacpp/llamacpp_b10309_chat_stream_n2.http");
  StreamTap tap(true);
  std::int64_t t = 0;
  std::size_t from = 0;
  // One event a millisecond apart: choice 1's events at 2, 5, 7, 9 ms (after its role), choice 0's
  // at 4, 6, 8, 11: each choice's gaps are 2-3 ms, the stream's 1-2.
  for (std::size_t at; (at = body.find("\n\n", from)) != std::string::npos; from = at + 2) {
    tap.feed(std::string_view(body).substr(from, at + 2 - from), (++t) * 1000);
  }
  tap.finish(true);
  EXPECT_EQ(tap.choices(), 2);
  EXPECT_EQ(tap.content_events(), 8);
  EXPECT_EQ(tap.completion_tokens(), 8);  // 4 a choice, in two usage chunks
  EXPECT_EQ(tap.prompt_tokens(), tap.usage()->prompt_tokens);
  EXPECT_EQ(tap.usage()->total_tokens, *tap.usage()->prompt_tokens + 8);
  ASSERT_EQ(tap.gaps_ms().size(), 6u);  // three a choice
  for (double g : tap.gaps_ms()) EXPECT_GE(g, 2.0) << "a gap across choices";
}

// Feeds a capture's events one a millisecond (the first at 1 ms).
void feed_by_event(StreamTap& tap, const std::string& body) {
  std::int64_t t = 0;
  std::size_t from = 0;
  for (std::size_t at; (at = body.find("\n\n", from)) != std::string::npos; from = at + 2) {
    tap.feed(std::string_view(body).substr(from, at + 2 - from), (++t) * 1000);
  }
  tap.finish(true);
}

// llama.cpp b10309 answering a forced tool call (real captures; the template in
// tests/fixtures/llamacpp/): the call's head (id, type, name) comes with its first argument piece,
// each later piece alone, the finish in a chunk of its own. 34 tokens made 13 events: the engine
// held back the tokens before the function's name. The first event is a tool call, so the line will
// date no first token (ledger `first_output`); the tokens are the engine's own count.
TEST(StreamTap, ALlamaCppToolCallIsCountedFromTheEngineAndItsFirstEventNamed) {
  for (const char* name : {"llamacpp/llamacpp_b10309_chat_stream_tool_call.http",
                           "llamacpp/llamacpp_b10309_chat_stream_tool_call_usage.http"}) {
    StreamTap tap(true);
    feed_by_event(tap, test::capture_body(name));
    EXPECT_TRUE(tap.saw_done()) << name;
    EXPECT_FALSE(tap.malformed()) << name;
    EXPECT_EQ(tap.finish_reason(), "tool_calls") << name;
    EXPECT_EQ(tap.first_output(), ChunkKind::kToolCalls) << name;
    EXPECT_EQ(tap.first_content_us(), 2000) << name;  // the event after the role's
    EXPECT_EQ(tap.content_events(), 13) << name;
    EXPECT_EQ(tap.completion_tokens(), 34) << name;
    EXPECT_EQ(tap.prompt_tokens(), 156) << name;
  }
  // With the usage asked for, the count is the usage's; without it, llama.cpp's timings on the
  // finishing chunk.
  StreamTap without(true);
  feed_by_event(without, test::capture_body("llamacpp/llamacpp_b10309_chat_stream_tool_call.http"));
  EXPECT_EQ(without.token_source(), TokenSource::kServerTimings);
  // Text before the calls (a random-weight model's; llama.cpp's grammar allows it): the first event
  // is content, then two calls (index 0 and 1) follow.
  StreamTap after_text(true);
  feed_by_event(after_text, test::capture_body("llamacpp/llamacpp_b10309_chat_stream_tool_calls_after_text.http"));
  EXPECT_EQ(after_text.first_output(), ChunkKind::kContent);
  EXPECT_EQ(after_text.content_events(), 32);  // 5 content, 27 tool-call pieces
  EXPECT_EQ(after_text.completion_tokens(), 71);
  EXPECT_EQ(after_text.finish_reason(), "tool_calls");
}

// The same forced call through llama.cpp b10309's Responses API (real capture, the small model):
// the item with the function's name comes once the engine has parsed it, then one arguments delta
// an event. 35 tokens made 12 deltas; the first output is the call's, not a token dated at once.
TEST(StreamTap, ALlamaCppResponsesToolCallIsAToolCallFirstAndCountedFromTheUsage) {
  StreamTap tap(true);
  feed_by_event(tap, test::capture_body("llamacpp/llamacpp_b10309_responses_stream_tool_call.http"));
  EXPECT_FALSE(tap.malformed());
  EXPECT_EQ(tap.first_output(), ChunkKind::kToolCalls);
  EXPECT_EQ(tap.content_events(), 12);
  EXPECT_EQ(tap.completion_tokens(), 35);
  EXPECT_EQ(tap.prompt_tokens(), 156);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
}

// The completions API of llama.cpp b10309 (real capture, `n` 2): no usage-only chunk; each choice's
// finishing chunk carries that choice's usage.
TEST(StreamTap, TheCompletionsApisUsageOnEachChoicesLastChunkAddsUp) {
  const std::string body = test::capture_body("llamacpp/llamacpp_b10309_completions_stream_n2.http");
  StreamTap tap(true);
  tap.feed(body, 1000);
  tap.finish(true);
  EXPECT_EQ(tap.choices(), 2);
  EXPECT_EQ(tap.completion_tokens(), 6);  // 3 a choice
  EXPECT_EQ(tap.usage()->total_tokens, *tap.usage()->prompt_tokens + 6);
  // On a finish-only chunk the usage is the stream's statement, not vLLM's continuous count.
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
}

// vLLM's continuous usage with two choices: each chunk's usage is its choice's, and the usage-only
// chunk at the end the total, which stands. Invented in vLLM's shapes (an edge case).
TEST(StreamTap, AUsageOnlyChunkAfterChoicesUsagesIsTheTotal) {
  StreamTap tap(true);
  tap.feed(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"},\"finish_reason\":\"length\"}],"
      "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"total_tokens\":5}}\n\n"
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"},\"finish_reason\":\"length\"}],"
      "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":1,\"total_tokens\":5}}\n\n",
      1000);
  EXPECT_EQ(tap.completion_tokens(), 2);  // until the total comes, the choices' add up
  tap.feed(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n"
      "data: [DONE]\n\n",
      2000);
  tap.finish(true);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
}

// One usage chunk for all the choices (OpenAI's and vLLM's way) is taken as it is.
TEST(StreamTap, OneUsageForAllChoicesIsNotAddedTo) {
  StreamTap tap(true);
  tap.feed(
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"b\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n"
      "data: [DONE]\n\n",
      1000);
  tap.finish(true);
  EXPECT_EQ(tap.choices(), 2);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_TRUE(tap.gaps_ms().empty());  // each choice's first content: no gap
}

TEST(StreamTap, WithoutUsageCountsAreEstimatedFromContentEvents) {
  StreamTap tap(true);
  tap.feed(
      "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: "
      "{\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\n",
      1);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kEstimated);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_FALSE(tap.prompt_tokens().has_value());
}

TEST(StreamTap, GarbageInAStreamIsMalformed) {
  StreamTap tap(true);
  tap.feed("data: {not json\n\n", 1);
  tap.finish(true);
  EXPECT_TRUE(tap.malformed());
  EXPECT_EQ(tap.token_source(), TokenSource::kNone);
}

TEST(StreamTap, NonStreamedBodyIsParsedWholeAtTheEnd) {
  StreamTap tap(false);
  const std::string body =
      R"({"id":"x","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4},"timings":{"predicted_n":1,"prompt_n":3}})";
  tap.feed(body.substr(0, 10), 1);
  tap.feed(body.substr(10), 2);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.completion_tokens(), 1);
  EXPECT_FALSE(tap.first_content_us().has_value());
  EXPECT_EQ(tap.server_timings(), R"({"predicted_n":1,"prompt_n":3})");
}

TEST(StreamTap, LlamaCppTimingsAreATokenSourceWhenThereIsNoUsage) {
  StreamTap tap(false);
  tap.feed(R"({"choices":[{"message":{"content":"hi"}}],"timings":{"predicted_n":7,"prompt_n":3}})", 1);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kServerTimings);
  EXPECT_EQ(tap.completion_tokens(), 7);
  EXPECT_EQ(tap.prompt_tokens(), 3);
}

// Issue 37: two sends of one 258-token prompt without include_usage were recorded as 1 prompt
// token. llama.cpp's timings split the prompt into prompt_n computed and cache_n cached (the
// capture's usage says 10 = 1 + 9); the prompt is their sum, the cached part cache_n.
TEST(StreamTap, LlamaCppTimingsWithoutUsageCountTheCachedPartOfThePrompt) {
  StreamTap tap(true);
  tap.feed("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", 1);
  tap.feed(
      "data: {\"choices\":[{\"finish_reason\":\"length\",\"delta\":{}}],\"timings\":{\"cache_n\":257,"
      "\"prompt_n\":1,\"prompt_ms\":0.3,\"predicted_n\":4,\"predicted_ms\":1.1}}\n\ndata: [DONE]\n\n",
      2);
  tap.finish(true);
  EXPECT_EQ(tap.prompt_tokens(), 258);
  EXPECT_EQ(tap.cached_prompt_tokens(), 257);
  // With usage, usage says it (llama.cpp's usage already adds them up).
  StreamTap with_usage(false);
  with_usage.feed(
      R"({"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":10,"completion_tokens":6,)"
      R"("prompt_tokens_details":{"cached_tokens":9}},"timings":{"cache_n":9,"prompt_n":1,"predicted_n":6}})",
      1);
  with_usage.finish(true);
  EXPECT_EQ(with_usage.prompt_tokens(), 10);
  EXPECT_EQ(with_usage.cached_prompt_tokens(), 9);
}

}  // namespace
}  // namespace mpo::openai

namespace mpo::openai {
namespace {

using test::capture_body;

std::string without_last_event(std::string body) {
  body.pop_back();  // the blank line that ends the last event
  const auto at = body.rfind("\n\n");
  return body.substr(0, at + 2);
}

// Real llama.cpp b10309 captures of each API's stream: the terminal event is seen, and a stream
// cut before it is not terminated.
TEST(StreamTap, TheTerminalEventOfEachApisStreamIsSeenInRealCaptures) {
  for (const char* name :
       {"llamacpp/llamacpp_b10309_chat_stream.http", "llamacpp/llamacpp_b10309_responses_stream.http",
        "llamacpp/llamacpp_b10309_messages_stream.http"}) {
    const std::string body = capture_body(name);
    ASSERT_FALSE(body.empty()) << name;
    StreamTap whole(true);
    whole.feed(body, 1000);
    whole.finish(true);
    EXPECT_TRUE(whole.saw_terminal()) << name;
    EXPECT_FALSE(whole.malformed()) << name;

    StreamTap cut(true);
    cut.feed(without_last_event(body), 1000);
    cut.finish(false);
    EXPECT_FALSE(cut.saw_terminal()) << name;
  }
}

TEST(StreamTap, OnlyTheLastEventOfAResponsesStreamIsTerminal) {
  for (const char* type : {"response.completed", "response.incomplete", "response.failed"}) {
    StreamTap tap(true);
    tap.feed("event: response.in_progress\ndata: {\"type\":\"response.in_progress\"}\n\n", 1);
    EXPECT_FALSE(tap.saw_terminal());
    tap.feed(fmt::format("event: {0}\ndata: {{\"type\":\"{0}\",\"response\":{{}}}}\n\n", type), 2);
    EXPECT_TRUE(tap.saw_terminal()) << type;
  }
  StreamTap body(false);  // a non-streamed body is never "terminal" by its type
  body.feed(R"({"type":"message_stop"})", 1);
  body.finish(true);
  EXPECT_FALSE(body.saw_terminal());
}

}  // namespace
}  // namespace mpo::openai
