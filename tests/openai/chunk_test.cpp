#include "openai/chunk.hpp"

#include <gtest/gtest.h>

namespace mpo::openai {
namespace {

TEST(ClassifyChunk, VllmChatStreamKinds) {
  EXPECT_EQ(
      classify_chunk(
          R"({"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]})")
          .kind,
      ChunkKind::kRoleOnly);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"index":0,"delta":{"content":" hi"}}]})").kind, ChunkKind::kContent);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"index":0,"delta":{"reasoning_content":"think"}}]})").kind,
            ChunkKind::kReasoning);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"index":0,"delta":{"reasoning":"think"}}]})").kind, ChunkKind::kReasoning);
  EXPECT_EQ(
      classify_chunk(R"({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}}]})")
          .kind,
      ChunkKind::kToolCalls);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"index":0,"delta":{"refusal":"no"}}]})").kind, ChunkKind::kRefusal);
  EXPECT_EQ(classify_chunk(R"({"choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]})").kind,
            ChunkKind::kEmpty);
  EXPECT_EQ(classify_chunk("[DONE]").kind, ChunkKind::kDone);
  EXPECT_EQ(classify_chunk("{not json").kind, ChunkKind::kUnparsable);
}

TEST(ClassifyChunk, UsageOnlyChunkAndContinuousUsage) {
  auto u = classify_chunk(
      R"({"id":"c","choices":[],"usage":{"prompt_tokens":16,"total_tokens":21,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":3}}})");
  EXPECT_EQ(u.kind, ChunkKind::kUsageOnly);
  ASSERT_TRUE(u.usage.has_value());
  EXPECT_EQ(u.usage->completion_tokens, 5);
  EXPECT_EQ(u.usage->cached_prompt_tokens, 3);
  auto c = classify_chunk(
      R"({"choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})");
  EXPECT_EQ(c.kind, ChunkKind::kContent);
  EXPECT_EQ(c.usage->completion_tokens, 2);
}

TEST(ClassifyChunk, CompletionsTextAndFinishReason) {
  auto c =
      classify_chunk(R"({"object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":"length"}]})");
  EXPECT_EQ(c.kind, ChunkKind::kContent);
  EXPECT_EQ(c.finish_reason, "length");
}

TEST(ClassifyChunk, ErrorEventsOldAndNewShape) {
  auto e = classify_chunk(R"({"error":{"message":"boom","type":"InternalServerError","code":500}})");
  EXPECT_EQ(e.kind, ChunkKind::kError);
  EXPECT_EQ(e.error_type, "InternalServerError");
  EXPECT_EQ(e.error_message, "boom");
  auto old = classify_chunk(R"({"object":"error","message":"bad","type":"BadRequestError","code":400})");
  EXPECT_EQ(old.kind, ChunkKind::kError);
  EXPECT_EQ(old.error_message, "bad");
}

TEST(ClassifyChunk, AKeyGivenTwiceIsReadFromItsFirstOccurrence) {
  // The members are found in one pass (issue 43); a key given twice counts as a lookup by key would
  // read it, its first occurrence (an invented edge case: no engine writes one).
  auto c = classify_chunk(
      R"({"id":"first","choices":[{"delta":{"content":"x"}}],"model":"m1","id":"second","choices":[],"model":"m2"})");
  EXPECT_EQ(c.kind, ChunkKind::kContent);
  EXPECT_EQ(c.id, "first");
  EXPECT_EQ(c.model, "m1");
  auto e = classify_chunk(R"({"error":null,"choices":[{"delta":{"content":"x"}}],"error":{"message":"late"}})");
  EXPECT_EQ(e.kind, ChunkKind::kContent);
  auto t = classify_chunk(R"({"timings":{"prompt_ms":1.5},"timings":{"prompt_ms":9},"choices":[]})");
  EXPECT_EQ(t.server_timings, R"({"prompt_ms":1.5})");
}

TEST(ClassifyChunk, WithoutTheIdWantedTheReadingIsTheSameButForTheId) {
  // A stream's reader keeps its first id and asks for no more (issue 43).
  const std::string chunk =
      R"({"id":"chatcmpl-01a23ec6-2349-711c-9c7f-50b4747fc6cf","object":"chat.completion.chunk","model":"m",)"
      R"("choices":[{"index":0,"delta":{"content":" on"},"finish_reason":"length"}],"usage":{"prompt_tokens":3}})";
  PayloadInfo with = classify_chunk(chunk);
  const PayloadInfo without = classify_chunk(chunk, IdWanted::kNo);
  EXPECT_EQ(with.id, "chatcmpl-01a23ec6-2349-711c-9c7f-50b4747fc6cf");
  EXPECT_EQ(without.id, "");
  with.id.clear();
  EXPECT_EQ(without, with);
  EXPECT_EQ(classify_chunk("[DONE]", IdWanted::kNo).kind, ChunkKind::kDone);
}

TEST(ClassifyChunk, AChoicesOrUsagesKeyGivenTwiceIsReadFromItsFirstOccurrence) {
  // A choice's, its delta's and usage's members are found in one pass each too (issue 43).
  auto c = classify_chunk(
      R"({"choices":[{"delta":{"content":"","role":"assistant","content":"x"},"finish_reason":"stop","finish_reason":"length"}]})");
  EXPECT_EQ(c.kind, ChunkKind::kRoleOnly);
  EXPECT_EQ(c.finish_reason, "stop");
  auto d = classify_chunk(R"({"choices":[{"delta":{"content":"x"},"delta":{"role":"assistant"}}]})");
  EXPECT_EQ(d.kind, ChunkKind::kContent);
  auto u = classify_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens":9,"completion_tokens_details":{"reasoning_tokens":2},"completion_tokens_details":{"reasoning_tokens":7}}})");
  ASSERT_TRUE(u.usage);
  EXPECT_EQ(u.usage->prompt_tokens, 3);
  EXPECT_EQ(u.usage->completion_tokens, 4);
  EXPECT_EQ(u.usage->reasoning_tokens, 2);
  EXPECT_FALSE(u.usage->total_tokens);
}

TEST(ParseResponseBody, NonStreamedChatWithUsageAndLlamaCppTimings) {
  auto r = parse_response_body(
      R"({"id":"chatcmpl-1","object":"chat.completion","model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10},"timings":{"prompt_n":8,"predicted_ms":40.5}})");
  EXPECT_EQ(r.kind, ChunkKind::kContent);
  EXPECT_EQ(r.model, "qwen");
  EXPECT_EQ(r.id, "chatcmpl-1");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.usage->total_tokens, 10);
  EXPECT_EQ(r.server_timings, R"({"prompt_n":8,"predicted_ms":40.5})");
}

TEST(InspectRequest, ReadsOperationModelStreamAndUsage) {
  auto r =
      inspect_request("/v1/chat/completions", R"({"model":"m","stream":true,"stream_options":{"include_usage":true}})");
  EXPECT_EQ(r.operation, Operation::kChat);
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.usage_requested);
  EXPECT_EQ(inspect_request("/base/v1/completions?x=1", "").operation, Operation::kTextCompletion);
  EXPECT_EQ(inspect_request("/v1/embeddings", "garbage").json, false);
  EXPECT_EQ(operation_for_path("/v1/models/"), Operation::kModels);
  EXPECT_EQ(operation_for_path("/metrics"), Operation::kOther);
}

TEST(InspectRequest, AKeyGivenTwiceIsReadFromItsFirstOccurrence) {
  // The members are found in one pass (issue 43); an invented edge case, as for chunks.
  auto r = inspect_request("/v1/chat/completions",
                           R"({"model":"a","stream":true,"user":"u1","model":"b","stream":false,"user":"u2",)"
                           R"("stream_options":{"include_usage":true},"stream_options":{"include_usage":false}})");
  EXPECT_EQ(r.model, "a");
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.user, "u1");
  EXPECT_TRUE(r.usage_requested);
}

}  // namespace
}  // namespace mpo::openai
