#include "otel/genai.hpp"

#include <algorithm>

#include "promtext/text_writer.hpp"

namespace mpo::otel {
namespace {

// The conventions' ExplicitBucketBoundaries (OpenTelemetry semantic conventions, GenAI client
// metrics): seconds for the three durations, powers of 4 for tokens.
constexpr double kSecondsBuckets[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                      1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
constexpr double kTokenBuckets[] = {1,     4,     16,     64,      256,     1024,     4096,
                                    16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

struct MetricName {
  const char* otel;
  const char* prometheus;
  const char* unit;
  const char* help;
};
constexpr MetricName kDuration{"gen_ai.client.operation.duration", "gen_ai_client_operation_duration_seconds", "s",
                               "GenAI operation duration."};
constexpr MetricName kTokens{"gen_ai.client.token.usage", "gen_ai_client_token_usage", "{token}",
                             "Number of input and output tokens used."};
constexpr MetricName kTtfc{"gen_ai.client.operation.time_to_first_chunk",
                           "gen_ai_client_operation_time_to_first_chunk_seconds", "s",
                           "Time to receive the first chunk of generated content in the response stream."};
constexpr MetricName kTpoc{"gen_ai.client.operation.time_per_output_chunk",
                           "gen_ai_client_operation_time_per_output_chunk_seconds", "s",
                           "Time per output chunk, recorded for each content chunk after the first one."};

void add(Attributes& a, std::string key, AttributeValue v) { a.push_back({std::move(key), std::move(v)}); }
void add_if(Attributes& a, std::string key, const std::optional<std::string>& v) {
  if (v && !v->empty()) add(a, std::move(key), *v);
}
void add_if(Attributes& a, std::string key, const std::optional<double>& v) {
  if (v) add(a, std::move(key), *v);
}
void add_if(Attributes& a, std::string key, const std::optional<std::int64_t>& v) {
  if (v) add(a, std::move(key), *v);
}

}  // namespace

std::string_view genai_operation(std::string_view op) {
  if (op == "responses" || op == "messages") return "chat";
  return op;
}

bool is_genai_operation(std::string_view op) {
  return op == "chat" || op == "text_completion" || op == "responses" || op == "messages" || op == "embeddings" ||
         op == "rerank" || op == "score";
}

std::string_view genai_provider(const ledger::Observation& o, const GenAiOptions& opts) {
  if (!opts.provider.empty()) return opts.provider;
  return o.operation == "messages" ? "anthropic" : "openai";
}

std::string genai_error_type(const ledger::Observation& o) {
  if (o.outcome == "ok") return "";
  if (o.outcome == "http_error" && o.http_status) return std::to_string(*o.http_status);
  return o.outcome;
}

Span span_from_observation(const ledger::Observation& o, const RequestTrace& trace, std::string_view trace_state,
                           const GenAiOptions& opts) {
  Span s;
  s.trace_id = trace.trace_id;
  s.span_id = trace.span_id;
  s.parent_span_id = trace.parent_id;
  s.trace_state = std::string(trace_state);
  const std::string operation(genai_operation(o.operation));
  s.name = o.model ? operation + " " + *o.model : operation;
  s.kind = SpanKind::kClient;
  s.start_unix_ns = o.started_at_us * 1000;
  s.end_unix_ns = o.ended_at_us * 1000;

  auto& a = s.attributes;
  add(a, "gen_ai.operation.name", operation);
  add(a, "gen_ai.provider.name", std::string(genai_provider(o, opts)));
  add_if(a, "gen_ai.request.model", o.model);
  add_if(a, "gen_ai.response.model", o.response_model);
  add_if(a, "gen_ai.response.id", o.response_id);
  if (o.finish_reason) add(a, "gen_ai.response.finish_reasons", std::vector<std::string>{*o.finish_reason});
  add_if(a, "gen_ai.usage.input_tokens", o.prompt_tokens);
  add_if(a, "gen_ai.usage.output_tokens", o.completion_tokens);
  if (o.stream && o.ttft_ms) add(a, "gen_ai.response.time_to_first_chunk", *o.ttft_ms / 1000.0);
  if (!opts.server_address.empty()) {
    add(a, "server.address", opts.server_address);
    add(a, "server.port", static_cast<std::int64_t>(opts.server_port));
  }
  add(a, "http.request.method", o.method);
  if (o.http_status) add(a, "http.response.status_code", static_cast<std::int64_t>(*o.http_status));
  if (const auto error = genai_error_type(o); !error.empty()) {
    add(a, "error.type", error);
    s.status = StatusCode::kError;
    s.status_message = o.error_message.value_or(o.outcome);
  }
  // Our own figures, under our prefix.
  add(a, "modelperfobs.observation_id", o.observation_id);
  add(a, "modelperfobs.operation", o.operation);
  add(a, "modelperfobs.outcome", o.outcome);
  add(a, "modelperfobs.stream", o.stream);
  add(a, "modelperfobs.token_source", o.token_source);
  add_if(a, "modelperfobs.ttfb_ms", o.ttfb_ms);
  add_if(a, "modelperfobs.ttft_ms", o.ttft_ms);
  add_if(a, "modelperfobs.e2e_ms", o.e2e_ms);
  add_if(a, "modelperfobs.tpot_ms", ledger::tpot_ms(o));
  if (!o.itl_ms.empty()) {
    std::vector<double> sorted = o.itl_ms;
    std::sort(sorted.begin(), sorted.end());
    add(a, "modelperfobs.itl_count", static_cast<std::int64_t>(sorted.size()));
    add(a, "modelperfobs.itl_p50_ms", sorted[(sorted.size() - 1) / 2]);
    add(a, "modelperfobs.itl_max_ms", sorted.back());
  }
  add_if(a, "modelperfobs.cached_prompt_tokens", o.cached_prompt_tokens);
  add_if(a, "modelperfobs.reasoning_tokens", o.reasoning_tokens);
  add_if(a, "modelperfobs.timing_basis", o.timing_basis);
  add(a, "modelperfobs.in_flight_at_start", o.in_flight_at_start);
  return s;
}

GenAiMetrics::GenAiMetrics(GenAiOptions opts, std::int64_t start_unix_ns)
    : opts_(std::move(opts)), start_unix_ns_(start_unix_ns), models_(opts_.max_models, opts_.max_model_bytes) {}

std::string_view GenAiMetrics::model_label(const std::optional<std::string>& model) {
  if (!model || model->empty()) return "";
  return models_.label(*model);
}

Histogram& GenAiMetrics::at(Series& s, const KeyView& k, std::span<const double> bounds) {
  auto it = s.find(k);
  if (it == s.end()) {
    Key key{std::string(k.operation),      std::string(k.provider),   std::string(k.request_model),
            std::string(k.response_model), std::string(k.error_type), std::string(k.token_type)};
    it = s.emplace(std::move(key), Histogram(bounds)).first;
  }
  return it->second;
}

void GenAiMetrics::record(const ledger::Observation& o) {
  if (!is_genai_operation(o.operation)) return;
  const std::string_view provider = genai_provider(o, opts_);
  const std::string error = genai_error_type(o);  // "" (no allocation) for the usual ok
  KeyView k{genai_operation(o.operation), provider, model_label(o.model), model_label(o.response_model), error, ""};
  if (o.e2e_ms) at(duration_, k, kSecondsBuckets).observe(*o.e2e_ms / 1000.0);
  if (o.stream && o.ttft_ms) at(ttfc_, k, kSecondsBuckets).observe(*o.ttft_ms / 1000.0);
  if (o.stream && !o.itl_ms.empty()) {
    auto& h = at(tpoc_, k, kSecondsBuckets);
    for (double gap : o.itl_ms) h.observe(gap / 1000.0);
  }
  // Token usage only where the count is known (the conventions: MUST NOT report otherwise).
  k.error_type = "";
  if (o.prompt_tokens) {
    k.token_type = "input";
    at(tokens_, k, kTokenBuckets).observe(static_cast<double>(*o.prompt_tokens));
  }
  if (o.completion_tokens) {
    k.token_type = "output";
    at(tokens_, k, kTokenBuckets).observe(static_cast<double>(*o.completion_tokens));
  }
}

Attributes GenAiMetrics::attributes_of(const Key& k) const {
  Attributes a;
  add(a, "gen_ai.operation.name", k.operation);
  add(a, "gen_ai.provider.name", k.provider);
  if (!k.request_model.empty()) add(a, "gen_ai.request.model", k.request_model);
  if (!k.response_model.empty()) add(a, "gen_ai.response.model", k.response_model);
  if (!opts_.server_address.empty()) {
    add(a, "server.address", opts_.server_address);
    add(a, "server.port", static_cast<std::int64_t>(opts_.server_port));
  }
  if (!k.error_type.empty()) add(a, "error.type", k.error_type);
  if (!k.token_type.empty()) add(a, "gen_ai.token.type", k.token_type);
  return a;
}

void GenAiMetrics::render_family(promtext::TextWriter& w, std::string_view name, std::string_view help,
                                 const Series& s) const {
  w.family(name, promtext::MetricType::kHistogram, help);
  const std::string port = std::to_string(opts_.server_port);
  for (const auto& [k, h] : s) {
    // Label names in Prometheus spelling, sorted by name (`le` is placed among them).
    std::vector<promtext::LabelView> labels;
    if (!k.error_type.empty()) labels.emplace_back("error_type", k.error_type);
    labels.emplace_back("gen_ai_operation_name", k.operation);
    labels.emplace_back("gen_ai_provider_name", k.provider);
    if (!k.request_model.empty()) labels.emplace_back("gen_ai_request_model", k.request_model);
    if (!k.response_model.empty()) labels.emplace_back("gen_ai_response_model", k.response_model);
    if (!k.token_type.empty()) labels.emplace_back("gen_ai_token_type", k.token_type);
    if (!opts_.server_address.empty()) {
      labels.emplace_back("server_address", opts_.server_address);
      labels.emplace_back("server_port", port);
    }
    w.histogram_samples(name, labels, h.bounds(), h.counts(), h.sum());
  }
}

void GenAiMetrics::render_prometheus(promtext::TextWriter& w) const {
  render_family(w, kDuration.prometheus, kDuration.help, duration_);
  render_family(w, kTokens.prometheus, kTokens.help, tokens_);
  render_family(w, kTtfc.prometheus, kTtfc.help, ttfc_);
  render_family(w, kTpoc.prometheus, kTpoc.help, tpoc_);
  w.family("modelperfobs_genai_models_folded_total", promtext::MetricType::kCounter,
           "Requests whose model name was recorded as _other in the gen_ai_* series (over --max-model-labels).")
      .sample("modelperfobs_genai_models_folded_total", {}, static_cast<double>(models_.folded()));
}

std::vector<HistogramMetric> GenAiMetrics::snapshot(std::int64_t now_unix_ns) const {
  std::vector<HistogramMetric> out;
  for (const auto& [name, series] : {std::pair{&kDuration, &duration_}, std::pair{&kTokens, &tokens_},
                                     std::pair{&kTtfc, &ttfc_}, std::pair{&kTpoc, &tpoc_}}) {
    if (series->empty()) continue;
    HistogramMetric m{name->otel, name->help, name->unit, {}};
    for (const auto& [k, h] : *series) {
      m.points.push_back(
          HistogramPoint{attributes_of(k), start_unix_ns_, now_unix_ns, h.count(), h.sum(), h.counts(), h.bounds()});
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace mpo::otel
