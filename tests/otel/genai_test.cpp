// The GenAI semantic conventions applied to ledger lines: the span's name, kind and attributes,
// and the four gen_ai.client.* histograms on the Prometheus page and in OTLP snapshots.
#include "otel/genai.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "promtext/text_writer.hpp"
#include "support/observation.hpp"

namespace mpo::otel {
namespace {

ledger::Observation streamed_chat() {
  ledger::Observation o = test::streamed_chat_line("obs-1", 1'700'000'000'000'000, 300);
  o.model = "llama";
  o.response_model = "llama-3";
  o.response_id = "chatcmpl-1";
  o.finish_reason = "length";
  o.ttft_ms = 50;
  o.itl_ms = {20, 30, 200};
  o.prompt_tokens = 100;
  o.completion_tokens = 4;
  return o;
}

const AttributeValue* find(const Attributes& a, std::string_view key) {
  auto it = std::find_if(a.begin(), a.end(), [&](const Attribute& x) { return x.key == key; });
  return it == a.end() ? nullptr : &it->value;
}

TEST(GenAiSpan, CarriesTheConventionsAttributesAndOurs) {
  IdGenerator ids(3);
  const auto trace =
      trace_for_request(std::string_view("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), ids);
  const auto s = span_from_observation(streamed_chat(), trace, "k=v", {"", "127.0.0.1", 8000, 50});
  EXPECT_EQ(s.name, "chat llama");
  EXPECT_EQ(s.kind, SpanKind::kClient);
  EXPECT_EQ(s.trace_id, trace.trace_id);
  EXPECT_EQ(s.span_id, trace.span_id);
  EXPECT_EQ(s.parent_span_id, trace.parent_id);
  EXPECT_EQ(s.trace_state, "k=v");
  EXPECT_EQ(s.start_unix_ns, 1'700'000'000'000'000'000);
  EXPECT_EQ(s.end_unix_ns, 1'700'000'000'300'000'000);
  EXPECT_EQ(s.status, StatusCode::kUnset);
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.operation.name")), "chat");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.provider.name")), "openai");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.request.model")), "llama");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.response.model")), "llama-3");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.response.id")), "chatcmpl-1");
  EXPECT_EQ(std::get<std::vector<std::string>>(*find(s.attributes, "gen_ai.response.finish_reasons")),
            std::vector<std::string>{"length"});
  EXPECT_EQ(std::get<std::int64_t>(*find(s.attributes, "gen_ai.usage.input_tokens")), 100);
  EXPECT_EQ(std::get<std::int64_t>(*find(s.attributes, "gen_ai.usage.output_tokens")), 4);
  EXPECT_DOUBLE_EQ(std::get<double>(*find(s.attributes, "gen_ai.response.time_to_first_chunk")), 0.05);
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "server.address")), "127.0.0.1");
  EXPECT_EQ(std::get<std::int64_t>(*find(s.attributes, "server.port")), 8000);
  EXPECT_EQ(find(s.attributes, "error.type"), nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(*find(s.attributes, "modelperfobs.ttft_ms")), 50);
  EXPECT_DOUBLE_EQ(std::get<double>(*find(s.attributes, "modelperfobs.tpot_ms")), (300.0 - 50.0) / 3);
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "modelperfobs.observation_id")), "obs-1");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "modelperfobs.token_source")), "usage");
  EXPECT_EQ(find(s.attributes, "modelperfobs.first_output"), nullptr);  // the line names none
  // No prompt or completion text, ever: no attribute that could carry it.
  for (const auto& a : s.attributes) {
    for (const char* content : {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                                "gen_ai.prompt", "gen_ai.completion"}) {
      EXPECT_FALSE(a.key.starts_with(content)) << a.key;
    }
  }
}

TEST(GenAiSpan, AnErrorIsMarkedWithItsType) {
  IdGenerator ids(3);
  auto o = streamed_chat();
  o.outcome = "http_error";
  o.http_status = 503;
  o.error_message = "overloaded";
  auto s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {});
  EXPECT_EQ(s.status, StatusCode::kError);
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "error.type")), "503");
  EXPECT_EQ(s.status_message, "overloaded");
  o.outcome = "upstream_timeout";
  s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {});
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "error.type")), "upstream_timeout");
  EXPECT_FALSE(s.parent_span_id);
}

// A stream that began with a tool call: the span says so, and carries no TPOT (the engine held back
// the tokens before the function's name: REPORT.md "Tool calls first").
TEST(GenAiSpan, AToolCallFirstIsNamedAndHasNoTpot) {
  IdGenerator ids(4);
  auto o = streamed_chat();
  o.first_output = "tool_calls";
  const auto s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {});
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "modelperfobs.first_output")), "tool_calls");
  EXPECT_EQ(find(s.attributes, "modelperfobs.tpot_ms"), nullptr);
  EXPECT_DOUBLE_EQ(std::get<double>(*find(s.attributes, "gen_ai.response.time_to_first_chunk")), 0.05);
}

TEST(GenAiSpan, ProviderAndOperationByApi) {
  IdGenerator ids(3);
  auto o = streamed_chat();
  o.operation = "messages";
  auto s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {});
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.provider.name")), "anthropic");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.operation.name")), "chat");
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "modelperfobs.operation")), "messages");
  s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {"aws.bedrock", "", 0, 50});
  EXPECT_EQ(std::get<std::string>(*find(s.attributes, "gen_ai.provider.name")), "aws.bedrock");
}

std::string prometheus(const GenAiMetrics& m) {
  promtext::TextWriter w;
  m.render_prometheus(w);
  return std::move(w).take();
}

TEST(GenAiMetrics, PrometheusSpellingWithTheConventionsBuckets) {
  GenAiMetrics m({"", "127.0.0.1", 8000, 50}, 0);
  m.record(streamed_chat());
  const auto text = prometheus(m);
  const std::string labels =
      R"(gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="llama",)"
      R"(gen_ai_response_model="llama-3",)";
  const std::string server = R"(server_address="127.0.0.1",server_port="8000")";
  EXPECT_NE(text.find("# TYPE gen_ai_client_operation_duration_seconds histogram"), std::string::npos) << text;
  // 0.3 s: in the 0.32 bucket, not the 0.16 one.
  EXPECT_NE(text.find("gen_ai_client_operation_duration_seconds_bucket{" + labels + "le=\"0.16\"," + server + "} 0"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_operation_duration_seconds_bucket{" + labels + "le=\"0.32\"," + server + "} 1"),
            std::string::npos)
      << text;
  // Tokens by type, powers of 4: 100 input tokens fall in le=256.
  EXPECT_NE(text.find(R"(gen_ai_client_token_usage_bucket{gen_ai_operation_name="chat",gen_ai_provider_name="openai",)"
                      R"(gen_ai_request_model="llama",gen_ai_response_model="llama-3",gen_ai_token_type="input",)"
                      R"(le="256",)" +
                      server + "} 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_token_usage_count{" + labels.substr(0, labels.size()) +
                      "gen_ai_token_type=\"output\"," + server + "} 1"),
            std::string::npos)
      << text;
  // One first chunk, three output chunks after it.
  EXPECT_NE(text.find("gen_ai_client_operation_time_to_first_chunk_seconds_count{" + labels + server + "} 1"),
            std::string::npos);
  EXPECT_NE(text.find("gen_ai_client_operation_time_per_output_chunk_seconds_count{" + labels + server + "} 3"),
            std::string::npos);
}

TEST(GenAiMetrics, NonStreamedRequestsHaveNoChunkMetricsAndErrorsAType) {
  GenAiMetrics m({}, 0);
  auto o = streamed_chat();
  o.stream = false;
  o.itl_ms.clear();
  o.outcome = "http_error";
  o.http_status = 429;
  o.prompt_tokens.reset();
  o.completion_tokens.reset();
  m.record(o);
  const auto text = prometheus(m);
  EXPECT_EQ(text.find("time_to_first_chunk_seconds_count"), std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_token_usage_count"), std::string::npos);  // unknown counts: not reported
  EXPECT_NE(text.find(R"(gen_ai_client_operation_duration_seconds_count{error_type="429",)"), std::string::npos)
      << text;
}

TEST(GenAiMetrics, ModelNamesPastTheCapAreFolded) {
  GenAiMetrics m({"", "", 0, 2}, 0);
  for (const char* model : {"a", "b", "c", "d", "a"}) {
    auto o = streamed_chat();
    o.model = model;
    o.response_model.reset();
    m.record(o);
  }
  const auto text = prometheus(m);
  EXPECT_NE(text.find(R"(gen_ai_request_model="a")"), std::string::npos);
  EXPECT_NE(text.find(R"(gen_ai_request_model="b")"), std::string::npos);
  EXPECT_EQ(text.find(R"(gen_ai_request_model="c")"), std::string::npos);
  EXPECT_NE(text.find(R"(gen_ai_request_model="_other")"), std::string::npos);
  EXPECT_EQ(m.models_folded(), 2u);
}

TEST(GenAiMetrics, InterleavedModelsEachKeepTheirOwnCounts) {
  // Three models in turn, more than the series each family remembers: every request still lands
  // in its own model's series, and its input and output token counts in theirs.
  GenAiMetrics m({}, 0);
  for (const char* model : {"a", "b", "a", "c", "b", "a", "c", "a"}) {
    auto o = streamed_chat();
    o.model = model;
    o.response_model.reset();
    m.record(o);
  }
  const auto text = prometheus(m);
  for (const auto& [model, n] : {std::pair{"a", 4}, std::pair{"b", 2}, std::pair{"c", 2}}) {
    const std::string labels =
        fmt::format(R"(gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="{}")", model);
    EXPECT_NE(text.find(fmt::format("gen_ai_client_operation_duration_seconds_count{{{}}} {}", labels, n)),
              std::string::npos)
        << model << "\n"
        << text;
    for (const char* type : {"input", "output"}) {
      EXPECT_NE(
          text.find(fmt::format(R"(gen_ai_client_token_usage_count{{{},gen_ai_token_type="{}"}} {})", labels, type, n)),
          std::string::npos)
          << model << " " << type << "\n"
          << text;
    }
  }
}

TEST(GenAiMetrics, NonGenAiRequestsAreNotCounted) {
  GenAiMetrics m({}, 0);
  auto o = streamed_chat();
  o.operation = "models";
  m.record(o);
  EXPECT_TRUE(m.snapshot(1).empty());
}

TEST(GenAiMetrics, SnapshotIsCumulativeFromTheStart) {
  GenAiMetrics m({}, 5);
  m.record(streamed_chat());
  m.record(streamed_chat());
  const auto snap = m.snapshot(9);
  ASSERT_EQ(snap.size(), 4u);
  EXPECT_EQ(snap[0].name, "gen_ai.client.operation.duration");
  EXPECT_EQ(snap[0].unit, "s");
  ASSERT_EQ(snap[0].points.size(), 1u);
  EXPECT_EQ(snap[0].points[0].count, 2u);
  EXPECT_EQ(snap[0].points[0].start_unix_ns, 5);
  EXPECT_EQ(snap[0].points[0].time_unix_ns, 9);
  EXPECT_EQ(snap[1].name, "gen_ai.client.token.usage");
  EXPECT_EQ(snap[1].unit, "{token}");
  EXPECT_EQ(snap[1].points.size(), 2u);  // input and output
  EXPECT_EQ(snap[3].name, "gen_ai.client.operation.time_per_output_chunk");
  EXPECT_EQ(snap[3].points[0].count, 6u);
}

// OTEL_SEMCONV_STABILITY_OPT_IN as the conventions define it: a comma-separated list, the GenAI
// value among others (http, database, ...), `/dup` for both generations.
TEST(GenAiConventionsOptIn, ReadFromTheEnvironmentsList) {
  EXPECT_EQ(genai_conventions(std::nullopt), GenAiConventions::kV1_41);
  EXPECT_EQ(genai_conventions(""), GenAiConventions::kV1_41);
  EXPECT_EQ(genai_conventions("http"), GenAiConventions::kV1_41);
  EXPECT_EQ(genai_conventions("gen_ai_latest_experimental"), GenAiConventions::kLatest);
  EXPECT_EQ(genai_conventions("http/dup, GEN_AI_LATEST_EXPERIMENTAL"), GenAiConventions::kLatest);
  EXPECT_EQ(genai_conventions("gen_ai_latest_experimental/dup"), GenAiConventions::kBoth);
  EXPECT_EQ(genai_conventions("database,gen_ai_latest_experimental,gen_ai_latest_experimental/dup"),
            GenAiConventions::kBoth);
  EXPECT_EQ(genai_conventions("gen_ai_latest"), GenAiConventions::kV1_41);  // not the value
}

GenAiOptions latest(GenAiConventions c = GenAiConventions::kLatest) {
  GenAiOptions o;
  o.conventions = c;
  return o;
}

const Metric* metric(const std::vector<Metric>& snap, std::string_view name) {
  auto it = std::find_if(snap.begin(), snap.end(), [&](const Metric& m) { return m.name == name; });
  return it == snap.end() ? nullptr : &*it;
}

std::vector<std::string> names(const std::vector<Metric>& snap) {
  std::vector<std::string> out;
  for (const auto& m : snap) out.push_back(m.name);
  return out;
}

// open-telemetry/semantic-conventions-genai's non-normative/migration.md: the inference metrics
// renamed, gen_ai.client.token.usage replaced by counters and per-operation histograms.
TEST(GenAiMetrics, LatestConventionsRenameTheInferenceMetricsAndCountUsage) {
  GenAiMetrics m(latest(), 5);
  auto o = streamed_chat();
  o.cached_prompt_tokens = 64;
  o.reasoning_tokens = 2;
  m.record(o);
  m.record(streamed_chat());
  const auto snap = m.snapshot(9);
  EXPECT_EQ(names(snap),
            (std::vector<std::string>{
                "gen_ai.client.inference.duration", "gen_ai.client.inference.time_to_first_chunk",
                "gen_ai.client.inference.time_per_output_chunk", "gen_ai.client.inference.operation.input_tokens",
                "gen_ai.client.inference.operation.output_tokens", "gen_ai.client.inference.usage.input_tokens",
                "gen_ai.client.inference.usage.output_tokens", "gen_ai.client.inference.usage.cache_read.input_tokens",
                "gen_ai.client.inference.usage.reasoning.output_tokens"}));
  const auto* input = metric(snap, "gen_ai.client.inference.usage.input_tokens");
  ASSERT_TRUE(input->is_counter);
  ASSERT_EQ(input->sum_points.size(), 1u);
  EXPECT_EQ(input->unit, "{token}");
  EXPECT_EQ(input->sum_points[0].value, 200);
  EXPECT_EQ(input->sum_points[0].start_unix_ns, 5);
  EXPECT_EQ(std::get<std::string>(*find(input->sum_points[0].attributes, "gen_ai.token.modality")), "unknown");
  EXPECT_EQ(find(input->sum_points[0].attributes, "gen_ai.token.type"), nullptr);
  EXPECT_EQ(metric(snap, "gen_ai.client.inference.usage.cache_read.input_tokens")->sum_points[0].value, 64);
  EXPECT_EQ(metric(snap, "gen_ai.client.inference.usage.reasoning.output_tokens")->sum_points[0].value, 2);
  const auto* per_call = metric(snap, "gen_ai.client.inference.operation.output_tokens");
  ASSERT_FALSE(per_call->is_counter);
  EXPECT_EQ(per_call->points[0].count, 2u);
  EXPECT_EQ(per_call->points[0].sum, 8);
  EXPECT_EQ(find(per_call->points[0].attributes, "gen_ai.token.modality"), nullptr);  // never by modality
  EXPECT_EQ(metric(snap, "gen_ai.client.inference.time_per_output_chunk")->points[0].count, 6u);

  const auto text = prometheus(m);
  EXPECT_NE(text.find("# TYPE gen_ai_client_inference_usage_input_tokens_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(gen_ai_client_inference_usage_cache_read_input_tokens_total{gen_ai_operation_name="chat",)"
                      R"(gen_ai_provider_name="openai",gen_ai_request_model="llama",gen_ai_response_model="llama-3",)"
                      R"(gen_ai_token_modality="unknown"} 64)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gen_ai_client_inference_duration_seconds_count{"), std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_token_usage"), std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_operation_time_to_first_chunk"), std::string::npos);
  EXPECT_EQ(text.find("gen_ai_client_operation_duration_seconds_count"), std::string::npos);
}

TEST(GenAiMetrics, LatestConventionsRecordAFailedCallsUnknownCountsAsZero) {
  GenAiMetrics m(latest(), 0);
  auto failed = streamed_chat();
  failed.outcome = "upstream_timeout";
  failed.prompt_tokens.reset();
  failed.completion_tokens.reset();
  m.record(failed);
  auto ok_without_usage = streamed_chat();
  ok_without_usage.prompt_tokens.reset();
  ok_without_usage.completion_tokens.reset();
  m.record(ok_without_usage);  // a successful call whose counts cannot be obtained: not reported
  const auto snap = m.snapshot(1);
  const auto* input = metric(snap, "gen_ai.client.inference.operation.input_tokens");
  ASSERT_NE(input, nullptr);
  ASSERT_EQ(input->points.size(), 1u);
  EXPECT_EQ(input->points[0].count, 1u);
  EXPECT_EQ(input->points[0].sum, 0);
  EXPECT_EQ(std::get<std::string>(*find(input->points[0].attributes, "error.type")), "upstream_timeout");
  const auto* usage = metric(snap, "gen_ai.client.inference.usage.input_tokens");
  ASSERT_EQ(usage->sum_points.size(), 1u);
  EXPECT_EQ(usage->sum_points[0].value, 0);
  EXPECT_EQ(find(usage->sum_points[0].attributes, "error.type"), nullptr);         // counters carry none
  EXPECT_EQ(metric(snap, "gen_ai.client.inference.duration")->points.size(), 2u);  // with and without error.type
}

TEST(GenAiMetrics, LatestConventionsGiveEmbeddingsTheirOwnMetricsAndRerankTheOperationDuration) {
  GenAiMetrics m(latest(), 0);
  auto embed = streamed_chat();
  embed.operation = "embeddings";
  embed.stream = false;
  embed.completion_tokens.reset();
  m.record(embed);
  auto rerank = embed;
  rerank.operation = "rerank";
  m.record(rerank);
  const auto snap = m.snapshot(1);
  EXPECT_EQ(names(snap),
            (std::vector<std::string>{"gen_ai.client.operation.duration", "gen_ai.client.embeddings.duration",
                                      "gen_ai.client.embeddings.operation.input_tokens"}));
  EXPECT_EQ(std::get<std::string>(*find(snap[0].points[0].attributes, "gen_ai.operation.name")), "rerank");
  EXPECT_EQ(metric(snap, "gen_ai.client.embeddings.operation.input_tokens")->points[0].sum, 100);
}

TEST(GenAiMetrics, BothGenerationsUnderDupCountEveryRequestOnce) {
  GenAiMetrics m(latest(GenAiConventions::kBoth), 0);
  m.record(streamed_chat());
  auto rerank = streamed_chat();
  rerank.operation = "rerank";
  m.record(rerank);
  const auto snap = m.snapshot(1);
  std::uint64_t operation_count = 0;
  for (const auto& p : metric(snap, "gen_ai.client.operation.duration")->points) operation_count += p.count;
  EXPECT_EQ(operation_count, 2u);  // v1.41.0: both; the latest adds no second rerank point
  EXPECT_EQ(metric(snap, "gen_ai.client.inference.duration")->points[0].count, 1u);
  EXPECT_NE(metric(snap, "gen_ai.client.token.usage"), nullptr);
  EXPECT_NE(metric(snap, "gen_ai.client.inference.usage.output_tokens"), nullptr);
}

TEST(GenAiSpan, CacheReadTokensAreTheConventionsAttribute) {
  auto o = streamed_chat();
  o.cached_prompt_tokens = 64;
  IdGenerator ids(3);
  const auto s = span_from_observation(o, trace_for_request(std::nullopt, ids), "", {});
  EXPECT_EQ(std::get<std::int64_t>(*find(s.attributes, "gen_ai.usage.cache_read.input_tokens")), 64);
}

}  // namespace
}  // namespace mpo::otel
