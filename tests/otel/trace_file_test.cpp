// Reading engine spans back from OTLP/JSON (the collector's file exporter). The lines below are
// invented in the collector's output shape (ids as hex, 64-bit integers as strings or numbers),
// with vLLM's attribute names; no real vLLM trace capture is in the fixtures yet.
#include "otel/trace_file.hpp"

#include <gtest/gtest.h>

#include "otel/engine_span.hpp"
#include "otel/otlp.hpp"

namespace mpo::otel {
namespace {

constexpr const char* kSyntheticLine =
    R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}}]},)"
    R"("scopeSpans":[{"scope":{"name":"vllm.llm_engine"},"spans":[)"
    R"({"traceId":"4BF92F3577B34DA6A3CE929D0E0E4736","spanId":"1111111111111111","parentSpanId":"00f067aa0ba902b7",)"
    R"("name":"llm_request","kind":2,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":1700000000500000000,)"
    R"("attributes":[{"key":"gen_ai.request.id","value":{"stringValue":"chatcmpl-1"}},)"
    R"({"key":"gen_ai.usage.prompt_tokens","value":{"intValue":"12"}},)"
    R"({"key":"gen_ai.usage.completion_tokens","value":{"intValue":5}},)"
    R"({"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":0.1}},)"
    R"({"key":"gen_ai.latency.time_in_model_prefill","value":{"doubleValue":0.05}},)"
    R"({"key":"gen_ai.latency.time_to_first_token","value":{"doubleValue":0.16}},)"
    R"({"key":"gen_ai.latency.time_in_model_decode","value":{"doubleValue":0.3}},)"
    R"({"key":"gen_ai.latency.e2e","value":{"doubleValue":0.5}}]},)"
    R"({"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"2222222222222222","name":"chat m","kind":3,)"
    R"("attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}]}]}]}]})";

TEST(TraceFile, ReadsEngineSpansAndCountsTheRest) {
  const std::string text = std::string(kSyntheticLine) + "\nnot json\n\n" + kSyntheticLine + "\n";
  const auto read = read_otlp_json_traces(text);
  EXPECT_EQ(read.lines, 3u);
  EXPECT_EQ(read.bad_lines, 1u);
  ASSERT_EQ(read.problems.size(), 1u);
  EXPECT_NE(read.problems[0].find("line 2"), std::string::npos);
  EXPECT_EQ(read.other_spans, 2u);  // the client spans
  ASSERT_EQ(read.spans.size(), 2u);
  const auto& s = read.spans[0];
  EXPECT_EQ(s.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");  // lowercased
  EXPECT_EQ(s.parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(s.service_name, "vllm");
  EXPECT_EQ(s.request_id, "chatcmpl-1");
  EXPECT_EQ(s.kind, 2);
  EXPECT_EQ(s.start_unix_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(s.end_unix_ns, 1'700'000'000'500'000'000);
  EXPECT_EQ(s.prompt_tokens, 12);
  EXPECT_EQ(s.completion_tokens, 5);
  EXPECT_DOUBLE_EQ(*s.queue_s, 0.1);
  EXPECT_DOUBLE_EQ(*s.prefill_s, 0.05);
  EXPECT_DOUBLE_EQ(*s.ttft_s, 0.16);
  EXPECT_DOUBLE_EQ(*s.decode_s, 0.3);
  EXPECT_DOUBLE_EQ(*s.e2e_s, 0.5);
  EXPECT_FALSE(s.inference_s);
}

// Issue 39: vLLM writes the deprecated gen_ai.usage.prompt_tokens / completion_tokens; the GenAI
// conventions now spell them input_tokens / output_tokens. Either is read, the same way.
TEST(TraceFile, ReadsBothSpellingsOfTheTokenCounts) {
  std::string current = kSyntheticLine;
  for (const auto& [from, to] :
       {std::pair<std::string, std::string>{"gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens"},
        {"gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens"}}) {
    current.replace(current.find(from), from.size(), to);
  }
  ASSERT_EQ(current.find("prompt_tokens"), std::string::npos);
  for (const std::string& line : {std::string(kSyntheticLine), current}) {
    const auto read = read_otlp_json_traces(line);
    ASSERT_EQ(read.spans.size(), 1u) << line;
    EXPECT_EQ(read.spans[0].prompt_tokens, 12) << line;
    EXPECT_EQ(read.spans[0].completion_tokens, 5) << line;
  }
}

TEST(TraceFile, ReadsAPrettyPrintedDocumentAndSurvivesGarbage) {
  std::string pretty = kSyntheticLine;
  for (std::size_t at = pretty.find(",\""); at != std::string::npos; at = pretty.find(",\"", at + 3)) {
    pretty.replace(at, 1, ",\n");
  }
  EXPECT_EQ(read_otlp_json_traces(pretty).spans.size(), 1u);
  EXPECT_TRUE(read_otlp_json_traces("").spans.empty());
  EXPECT_EQ(read_otlp_json_traces("{}\n[]\n{\"resourceSpans\":3}\n").bad_lines, 3u);
}

TEST(TraceFile, ReadsBackWhatTheSimulatorExports) {
  IdGenerator ids(5);
  EngineRequest r{"cmpl-9", "sim", 1'000'000'000, 1'100'000'000, 1'150'000'000, 1'400'000'000, 1'400'000'000, 8, 4};
  const Span spans[] = {engine_request_span(r, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ids)};
  const auto read = read_otlp_json_traces(encode_traces(Origin{}, spans, Encoding::kJson));
  ASSERT_EQ(read.spans.size(), 1u);
  const auto& s = read.spans[0];
  EXPECT_EQ(s.name, "llm_request");
  EXPECT_EQ(s.parent_span_id, "00f067aa0ba902b7");
  EXPECT_DOUBLE_EQ(*s.queue_s, 0.1);
  EXPECT_DOUBLE_EQ(*s.prefill_s, 0.05);
  EXPECT_DOUBLE_EQ(*s.ttft_s, 0.15);
  EXPECT_DOUBLE_EQ(*s.decode_s, 0.25);
  EXPECT_DOUBLE_EQ(*s.inference_s, 0.3);
  EXPECT_DOUBLE_EQ(*s.e2e_s, 0.4);
}

}  // namespace
}  // namespace mpo::otel
