// The Responses API and Anthropic Messages readers, on real llama.cpp b10309 captures
// (tests/fixtures/llamacpp/, provenance in tests/fixtures/SOURCES.md) and, for the cases those do
// not show, on invented edge cases (named so).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai/chunk.hpp"
#include "openai/stream_tap.hpp"
#include "support/fixtures.hpp"

namespace mpo::openai {
namespace {

// The events of an SSE body, each with its blank line.
std::vector<std::string> events_of(const std::string& body) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < body.size()) {
    const auto end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    out.push_back(body.substr(at, end + 2 - at));
    at = end + 2;
  }
  return out;
}

// Feeds event i at (i + 1) ms.
StreamTap tap_events(const std::vector<std::string>& events, std::size_t count) {
  StreamTap tap(true);
  for (std::size_t i = 0; i < count && i < events.size(); ++i) {
    tap.feed(events[i], static_cast<std::int64_t>(i + 1) * 1000);
  }
  tap.finish(true);
  return tap;
}

TEST(ResponsesApi, RealStreamTtftAtTheFirstTextDeltaUsageFromResponseCompleted) {
  const auto events = events_of(test::capture_body("llamacpp/llamacpp_b10309_responses_stream.http"));
  ASSERT_EQ(events.size(), 14u);
  const StreamTap tap = tap_events(events, events.size());
  // created, in_progress, output_item.added, content_part.added, then six output_text.delta
  ASSERT_TRUE(tap.first_content_us());
  EXPECT_EQ(*tap.first_content_us(), 5000);
  EXPECT_EQ(*tap.last_content_us(), 10000);
  EXPECT_EQ(tap.content_events(), 6);
  EXPECT_EQ(tap.gaps_ms(), std::vector<double>(5, 1.0));
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.prompt_tokens(), 10);
  EXPECT_EQ(tap.completion_tokens(), 6);
  ASSERT_TRUE(tap.usage());
  EXPECT_EQ(tap.usage()->cached_prompt_tokens, 0);
  EXPECT_EQ(tap.usage()->total_tokens, 16);
  EXPECT_EQ(tap.finish_reason(), "completed");
  EXPECT_EQ(tap.model(), "real-llama");
  EXPECT_EQ(tap.id(), "resp_PZXl6h8c7FMR01E0Le2y5trgx1YvVANe");
  EXPECT_NE(tap.server_timings().find("\"predicted_n\":6"), std::string::npos);
  EXPECT_TRUE(tap.saw_terminal());
  EXPECT_TRUE(tap.requires_terminal_event());
  EXPECT_FALSE(tap.error_event());
  EXPECT_FALSE(tap.malformed());
  EXPECT_EQ(tap.unknown_events(), 0);
}

TEST(ResponsesApi, RealStreamCutBeforeResponseCompletedHasNoTerminalAndEstimatedTokens) {
  const auto events = events_of(test::capture_body("llamacpp/llamacpp_b10309_responses_stream.http"));
  const StreamTap tap = tap_events(events, events.size() - 1);
  EXPECT_TRUE(tap.requires_terminal_event());
  EXPECT_FALSE(tap.saw_terminal());
  EXPECT_EQ(tap.token_source(), TokenSource::kEstimated);
  EXPECT_EQ(tap.completion_tokens(), 6);
  EXPECT_EQ(tap.id(), "resp_PZXl6h8c7FMR01E0Le2y5trgx1YvVANe");
}

TEST(ResponsesApi, RealBodyNotStreamed) {
  const auto info = parse_response_body(test::capture_body("llamacpp/llamacpp_b10309_responses_nostream.http"));
  ASSERT_TRUE(info.usage);
  EXPECT_EQ(info.usage->prompt_tokens, 10);
  EXPECT_EQ(info.usage->completion_tokens, 6);
  EXPECT_EQ(info.usage->cached_prompt_tokens, 9);
  EXPECT_EQ(info.finish_reason, "completed");
  EXPECT_EQ(info.model, "real-llama");
  EXPECT_EQ(info.id, "resp_WwOzW4xd8ElY4LgjMqkvJDPRmLEcf4Sa");
  EXPECT_NE(info.kind, ChunkKind::kError);

  StreamTap tap(false);
  tap.feed(test::capture_body("llamacpp/llamacpp_b10309_responses_nostream.http"), 1);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.completion_tokens(), 6);
}

// Invented edge cases: every kind of generated output, each counted as its kind, empty deltas not.
TEST(ResponsesApi, SyntheticEveryDeltaKind) {
  EXPECT_EQ(classify_chunk(R"({"type":"response.output_text.delta","delta":"a"})").kind, ChunkKind::kContent);
  EXPECT_EQ(classify_chunk(R"({"type":"response.output_text.delta","delta":""})").kind, ChunkKind::kEmpty);
  EXPECT_EQ(classify_chunk(R"({"type":"response.reasoning_text.delta","delta":"t"})").kind, ChunkKind::kReasoning);
  EXPECT_EQ(classify_chunk(R"({"type":"response.reasoning_summary_text.delta","delta":"s"})").kind,
            ChunkKind::kReasoning);
  EXPECT_EQ(classify_chunk(R"({"type":"response.function_call_arguments.delta","delta":"{"})").kind,
            ChunkKind::kToolCalls);
  EXPECT_EQ(classify_chunk(R"({"type":"response.refusal.delta","delta":"no"})").kind, ChunkKind::kRefusal);
  EXPECT_EQ(classify_chunk(R"({"type":"response.output_text.done","text":"abc"})").kind, ChunkKind::kEmpty);
}

TEST(ResponsesApi, SyntheticIncompleteFailedAndErrorEvents) {
  const auto inc = classify_chunk(
      R"({"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":7,"total_tokens":12,"output_tokens_details":{"reasoning_tokens":3}}}})");
  EXPECT_TRUE(inc.terminal);
  EXPECT_EQ(inc.finish_reason, "max_output_tokens");
  EXPECT_EQ(inc.usage->reasoning_tokens, 3);
  EXPECT_NE(inc.kind, ChunkKind::kError);

  const auto failed = classify_chunk(
      R"({"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}})");
  EXPECT_TRUE(failed.terminal);
  EXPECT_EQ(failed.kind, ChunkKind::kError);
  EXPECT_EQ(failed.error_type, "server_error");
  EXPECT_EQ(failed.error_message, "boom");
  EXPECT_EQ(failed.finish_reason, "failed");

  const auto err =
      classify_chunk(R"({"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null})");
  EXPECT_EQ(err.kind, ChunkKind::kError);
  EXPECT_EQ(err.error_type, "rate_limit_exceeded");
  EXPECT_EQ(err.error_message, "slow down");
  EXPECT_FALSE(err.terminal);
}

TEST(ResponsesApi, SyntheticUnknownEventTypesAreCountedAndIgnored) {
  StreamTap tap(true);
  tap.feed("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r1\"}}\n\n", 1000);
  tap.feed("event: response.future_thing.delta\ndata: {\"type\":\"response.future_thing.delta\",\"delta\":\"x\"}\n\n",
           2000);
  tap.feed("data: {\"type\":\"brand_new_event\"}\n\n", 2500);
  tap.feed("event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
           3000);
  tap.finish(true);
  EXPECT_EQ(tap.unknown_events(), 2);
  EXPECT_EQ(tap.first_content_us(), 3000);
  EXPECT_EQ(tap.content_events(), 1);
  EXPECT_FALSE(tap.malformed());
  EXPECT_FALSE(tap.saw_terminal());
}

TEST(MessagesApi, RealStreamTtftAtTheFirstTextDeltaUsageFromStartAndDelta) {
  const auto events = events_of(test::capture_body("llamacpp/llamacpp_b10309_messages_stream.http"));
  ASSERT_EQ(events.size(), 11u);
  const StreamTap tap = tap_events(events, events.size());
  // message_start, content_block_start, then six text deltas
  EXPECT_EQ(tap.first_content_us(), 3000);
  EXPECT_EQ(tap.last_content_us(), 8000);
  EXPECT_EQ(tap.content_events(), 6);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  // llama.cpp reused 9 of the 10 prompt tokens: input_tokens 1 + cache_read_input_tokens 9.
  EXPECT_EQ(tap.prompt_tokens(), 10);
  EXPECT_EQ(tap.usage()->cached_prompt_tokens, 9);
  EXPECT_EQ(tap.completion_tokens(), 6);
  EXPECT_EQ(tap.usage()->total_tokens, 16);
  EXPECT_EQ(tap.finish_reason(), "max_tokens");
  EXPECT_EQ(tap.model(), "real-llama");
  EXPECT_EQ(tap.id(), "chatcmpl-YmmNcDiNb9u02H44lVmE44PpZyajfjVP");
  EXPECT_TRUE(tap.saw_terminal());
  EXPECT_TRUE(tap.requires_terminal_event());
  EXPECT_FALSE(tap.malformed());
}

TEST(MessagesApi, RealStreamCutAfterMessageStartKeepsPromptTokensOnly) {
  const auto events = events_of(test::capture_body("llamacpp/llamacpp_b10309_messages_stream.http"));
  const StreamTap tap = tap_events(events, 5);  // start, block start, three deltas
  EXPECT_FALSE(tap.saw_terminal());
  EXPECT_EQ(tap.prompt_tokens(), 10);
  // message_start's output_tokens (0) is a placeholder, not a count: three events were seen.
  EXPECT_EQ(tap.token_source(), TokenSource::kEstimated);
  EXPECT_EQ(tap.completion_tokens(), 3);
}

TEST(MessagesApi, RealBodyNotStreamed) {
  const auto info = parse_response_body(test::capture_body("llamacpp/llamacpp_b10309_messages_nostream.http"));
  ASSERT_TRUE(info.usage);
  EXPECT_EQ(info.usage->prompt_tokens, 10);
  EXPECT_EQ(info.usage->cached_prompt_tokens, 9);
  EXPECT_EQ(info.usage->completion_tokens, 6);
  EXPECT_EQ(info.usage->total_tokens, 16);
  EXPECT_EQ(info.finish_reason, "max_tokens");
  EXPECT_EQ(info.model, "real-llama");
  EXPECT_EQ(info.id, "chatcmpl-tNUaDWpvYFy6cHc30Jtpv8dNAVBvbbRW");
}

TEST(MessagesApi, SyntheticThinkingToolInputPingAndErrors) {
  EXPECT_EQ(
      classify_chunk(R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}})")
          .kind,
      ChunkKind::kReasoning);
  EXPECT_EQ(classify_chunk(
                R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a"}})")
                .kind,
            ChunkKind::kToolCalls);
  EXPECT_EQ(classify_chunk(
                R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}})")
                .kind,
            ChunkKind::kEmpty);
  EXPECT_EQ(
      classify_chunk(R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"x"}})")
          .kind,
      ChunkKind::kEmpty);
  const auto ping = classify_chunk(R"({"type": "ping"})");
  EXPECT_EQ(ping.kind, ChunkKind::kEmpty);
  EXPECT_FALSE(ping.unknown_event);

  const auto err = classify_chunk(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})");
  EXPECT_EQ(err.kind, ChunkKind::kError);
  EXPECT_EQ(err.error_type, "overloaded_error");
  EXPECT_EQ(err.error_message, "Overloaded");
  // The same shape is Anthropic's error body, not streamed.
  EXPECT_EQ(
      parse_response_body(R"({"type":"error","error":{"type":"invalid_request_error","message":"bad"}})").error_type,
      "invalid_request_error");
}

// Invented: Anthropic's own API states the prompt in three parts and the output cumulatively; the
// counts of message_delta replace those of message_start.
TEST(MessagesApi, SyntheticCacheCreationCountsAsPromptAndLaterUsageWins) {
  StreamTap tap(true);
  tap.feed(
      "event: message_start\ndata: "
      "{\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude\",\"usage\":{\"input_tokens\":3,"
      "\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":50,\"output_tokens\":1}}}\n\n",
      1000);
  tap.feed(
      "event: content_block_delta\ndata: "
      "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
      2000);
  tap.feed(
      "event: message_delta\ndata: "
      "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":15}}\n\n",
      3000);
  tap.feed("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", 4000);
  tap.finish(true);
  EXPECT_EQ(tap.prompt_tokens(), 153);
  EXPECT_EQ(tap.usage()->cached_prompt_tokens, 50);
  EXPECT_EQ(tap.completion_tokens(), 15);
  EXPECT_EQ(tap.usage()->total_tokens, 168);
  EXPECT_EQ(tap.finish_reason(), "end_turn");
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
}

TEST(Operations, EveryApiByItsPath) {
  EXPECT_EQ(operation_for_path("/v1/chat/completions"), Operation::kChat);
  EXPECT_EQ(operation_for_path("/v1/completions"), Operation::kTextCompletion);
  EXPECT_EQ(operation_for_path("/v1/responses"), Operation::kResponses);
  EXPECT_EQ(operation_for_path("/v1/messages"), Operation::kMessages);
  EXPECT_EQ(operation_for_path("/anthropic/v1/messages?beta=true"), Operation::kMessages);
  EXPECT_EQ(operation_for_path("/v1/embeddings"), Operation::kEmbeddings);
  EXPECT_EQ(operation_for_path("/v1/rerank"), Operation::kRerank);
  EXPECT_EQ(operation_for_path("/score"), Operation::kScore);
  EXPECT_EQ(to_string(Operation::kMessages), "messages");
}

}  // namespace
}  // namespace mpo::openai
