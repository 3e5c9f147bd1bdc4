// The implementation of otel/genai.hpp. The OpenTelemetry GenAI semantic conventions applied to a
// ledger line: the request's span (kind CLIENT, `{gen_ai.operation.name} {gen_ai.request.model}`)
// and the client metrics with the bucket boundaries the conventions recommend, for OTLP and for the
// proxy's Prometheus page.
#include "otel/genai.hpp"

#include <algorithm>
#include <cctype>

#include "core/text.hpp"
#include "promtext/text_writer.hpp"

namespace mpo::otel {
namespace {

// The conventions' ExplicitBucketBoundaries (OpenTelemetry semantic conventions, GenAI client
// metrics): seconds for the three durations, powers of 4 for tokens.
constexpr double kSecondsBuckets[] = {0.01, 0.02, 0.04, 0.08,  0.16,  0.32,  0.64,
                                      1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
constexpr double kTokenBuckets[] = {1,     4,     16,     64,      256,     1024,     4096,
                                    16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};

enum class Kind { kSeconds, kTokens, kCounter };
struct MetricName {
  const char* otel;
  const char* prometheus;
  const char* unit;
  const char* help;
  Kind kind;
  const char* extra;  // the attribute Key::extra is written as ("" none)
};
using F = GenAiMetrics::Family;
// Names, units and descriptions: semantic-conventions v1.41.0 docs/gen-ai/gen-ai-metrics.md for
// the first four; open-telemetry/semantic-conventions-genai docs/gen-ai/client-inference.md,
// gen-ai-token-metrics.md and client-embeddings.md for the rest (its non-normative/migration.md
// maps one set onto the other).
constexpr MetricName kFamilies[F::kFamilyCount] = {
    // clang-format off
    {"gen_ai.client.operation.duration", "gen_ai_client_operation_duration_seconds", "s", "GenAI operation duration.", Kind::kSeconds, ""},
    {"gen_ai.client.token.usage", "gen_ai_client_token_usage", "{token}", "Number of input and output tokens used.", Kind::kTokens, "gen_ai.token.type"},
    {"gen_ai.client.operation.time_to_first_chunk", "gen_ai_client_operation_time_to_first_chunk_seconds", "s", "Time to receive the first chunk of generated content in the response stream.", Kind::kSeconds, ""},
    {"gen_ai.client.operation.time_per_output_chunk", "gen_ai_client_operation_time_per_output_chunk_seconds", "s", "Time per output chunk, recorded for each content chunk after the first one.", Kind::kSeconds, ""},
    {"gen_ai.client.inference.duration", "gen_ai_client_inference_duration_seconds", "s", "GenAI client inference operation duration.", Kind::kSeconds, ""},
    {"gen_ai.client.inference.time_to_first_chunk", "gen_ai_client_inference_time_to_first_chunk_seconds", "s", "Time to receive the first chunk of generated content in the response stream.", Kind::kSeconds, ""},
    {"gen_ai.client.inference.time_per_output_chunk", "gen_ai_client_inference_time_per_output_chunk_seconds", "s", "Time per output chunk, recorded for each content chunk after the first one.", Kind::kSeconds, ""},
    {"gen_ai.client.inference.operation.input_tokens", "gen_ai_client_inference_operation_input_tokens", "{token}", "The number of input (prompt) tokens used per inference operation.", Kind::kTokens, ""},
    {"gen_ai.client.inference.operation.output_tokens", "gen_ai_client_inference_operation_output_tokens", "{token}", "The number of output (completion) tokens used per inference operation.", Kind::kTokens, ""},
    {"gen_ai.client.inference.usage.input_tokens", "gen_ai_client_inference_usage_input_tokens_total", "{token}", "The number of input (prompt) tokens used, including cached tokens.", Kind::kCounter, "gen_ai.token.modality"},
    {"gen_ai.client.inference.usage.output_tokens", "gen_ai_client_inference_usage_output_tokens_total", "{token}", "The number of output (completion) tokens used, including reasoning tokens.", Kind::kCounter, "gen_ai.token.modality"},
    {"gen_ai.client.inference.usage.cache_read.input_tokens", "gen_ai_client_inference_usage_cache_read_input_tokens_total", "{token}", "The number of input tokens served from the provider's cache.", Kind::kCounter, "gen_ai.token.modality"},
    {"gen_ai.client.inference.usage.reasoning.output_tokens", "gen_ai_client_inference_usage_reasoning_output_tokens_total", "{token}", "The number of output tokens spent on reasoning.", Kind::kCounter, "gen_ai.token.modality"},
    {"gen_ai.client.embeddings.duration", "gen_ai_client_embeddings_duration_seconds", "s", "GenAI client embeddings operation duration.", Kind::kSeconds, ""},
    {"gen_ai.client.embeddings.operation.input_tokens", "gen_ai_client_embeddings_operation_input_tokens", "{token}", "The number of input tokens used per embeddings operation.", Kind::kTokens, ""},
    // clang-format on
};

// The proxy cannot tell a provider's text tokens from its image or audio ones: the conventions'
// value for that (gen-ai-token-metrics.md, gen_ai.token.modality).
constexpr std::string_view kUnknownModality = "unknown";

bool has(GenAiConventions set, GenAiConventions c) {
  return (static_cast<unsigned>(set) & static_cast<unsigned>(c)) != 0;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

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

GenAiConventions genai_conventions(std::optional<std::string_view> opt_in) {
  if (!opt_in) return GenAiConventions::kV1_41;
  auto result = GenAiConventions::kV1_41;
  const std::string text = lower(*opt_in);
  std::string_view rest = text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = trim_blanks(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item == "gen_ai_latest_experimental/dup") return GenAiConventions::kBoth;
    if (item == "gen_ai_latest_experimental") result = GenAiConventions::kLatest;
  }
  return result;
}

std::string_view to_string(GenAiConventions c) {
  switch (c) {
    case GenAiConventions::kV1_41: return "v1.41.0";
    case GenAiConventions::kLatest: return "gen_ai_latest_experimental";
    case GenAiConventions::kBoth: return "gen_ai_latest_experimental/dup";
  }
  return "v1.41.0";
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
  add_if(a, "gen_ai.usage.cache_read.input_tokens", o.cached_prompt_tokens);
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
  if (o.first_output) add(a, "modelperfobs.first_output", std::string(*o.first_output));
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

namespace {

// The value of `k` in `map`, made by `make` when the key is new.
template <class Map, class KeyView, class Make>
typename Map::mapped_type& find_or_add(Map& map, const KeyView& k, Make&& make) {
  auto it = map.find(k);
  if (it == map.end()) {
    typename Map::key_type key{std::string(k.operation),      std::string(k.provider),   std::string(k.request_model),
                               std::string(k.response_model), std::string(k.error_type), std::string(k.extra)};
    it = map.emplace(std::move(key), make()).first;
  }
  return it->second;
}

}  // namespace

void GenAiMetrics::use_key(const KeyView& k) {
  Key& last = recent_.key;
  if (recent_.valid && last.operation == k.operation && last.provider == k.provider &&
      last.request_model == k.request_model && last.response_model == k.response_model &&
      last.error_type == k.error_type) {
    return;
  }
  last.operation = k.operation;
  last.provider = k.provider;
  last.request_model = k.request_model;
  last.response_model = k.response_model;
  last.error_type = k.error_type;
  recent_.valid = true;
  for (auto& family : recent_.series) family[0] = family[1] = nullptr;
  for (auto& count : recent_.counts) count = nullptr;
}

Histogram& GenAiMetrics::series(Family f, const KeyView& k, unsigned slot) {
  Histogram*& found = recent_.series[f][slot];
  if (found == nullptr) {
    found = &find_or_add(histograms_[f], k, [f] {
      return Histogram(kFamilies[f].kind == Kind::kSeconds ? std::span<const double>(kSecondsBuckets)
                                                           : std::span<const double>(kTokenBuckets));
    });
  }
  return *found;
}

void GenAiMetrics::increase(Family f, const KeyView& k, std::int64_t value) {
  std::int64_t*& found = recent_.counts[f];
  if (found == nullptr) found = &find_or_add(counters_[f], k, [] { return std::int64_t{0}; });
  *found += value;
}

void GenAiMetrics::record(const ledger::Observation& o) {
  if (!is_genai_operation(o.operation)) return;
  const std::string_view provider = genai_provider(o, opts_);
  const std::string error = genai_error_type(o);  // "" (no allocation) for the usual ok
  const std::string_view operation = genai_operation(o.operation);
  const KeyView k{operation, provider, model_label(o.model), model_label(o.response_model), error, ""};
  use_key(k);
  const bool streamed_chunks = o.stream && !o.itl_ms.empty();
  const auto chunks = [&](Family ttfc, Family tpoc) {
    if (o.stream && o.ttft_ms) observe(ttfc, k, *o.ttft_ms / 1000.0);
    if (streamed_chunks) {  // one series lookup for all of a response's gaps
      Histogram& gaps = series(tpoc, k);
      for (double gap : o.itl_ms) gaps.observe(gap / 1000.0);
    }
  };
  if (has(opts_.conventions, GenAiConventions::kV1_41)) {
    if (o.e2e_ms) observe(kOperationDuration, k, *o.e2e_ms / 1000.0);
    chunks(kOperationTtfc, kOperationTpoc);
    // Token usage only where the count is known (v1.41.0: MUST NOT report otherwise).
    KeyView t = k;
    t.error_type = "";
    t.extra = "input";
    if (o.prompt_tokens) observe(kTokenUsage, t, static_cast<double>(*o.prompt_tokens));
    t.extra = "output";
    if (o.completion_tokens) observe(kTokenUsage, t, static_cast<double>(*o.completion_tokens), 1);
  }
  if (!has(opts_.conventions, GenAiConventions::kLatest)) return;
  // The latest conventions: a count the provider did not give is 0 for a failed operation (the
  // response never came) and not reported for a successful one (it cannot be obtained).
  const bool failed = o.outcome != "ok";
  const auto tokens = [&](const std::optional<std::int64_t>& n) -> std::optional<std::int64_t> {
    if (n) return n;
    if (failed) return 0;
    return std::nullopt;
  };
  if (operation == "embeddings") {
    if (o.e2e_ms) observe(kEmbeddingsDuration, k, *o.e2e_ms / 1000.0);
    if (const auto n = tokens(o.prompt_tokens)) observe(kEmbeddingsInputTokens, k, static_cast<double>(*n));
    return;
  }
  if (operation != "chat" && operation != "text_completion") {
    // rerank and score: other GenAI client operations keep gen_ai.client.operation.duration.
    if (o.e2e_ms && !has(opts_.conventions, GenAiConventions::kV1_41))
      observe(kOperationDuration, k, *o.e2e_ms / 1000.0);
    return;
  }
  if (o.e2e_ms) observe(kInferenceDuration, k, *o.e2e_ms / 1000.0);
  chunks(kInferenceTtfc, kInferenceTpoc);
  const auto input = tokens(o.prompt_tokens);
  const auto output = tokens(o.completion_tokens);
  if (input) observe(kInferenceInputTokens, k, static_cast<double>(*input));
  if (output) observe(kInferenceOutputTokens, k, static_cast<double>(*output));
  // The usage counters carry no error.type (gen-ai-token-metrics.md).
  KeyView u = k;
  u.error_type = "";
  u.extra = kUnknownModality;
  if (input) increase(kUsageInputTokens, u, *input);
  if (output) increase(kUsageOutputTokens, u, *output);
  if (o.cached_prompt_tokens) increase(kUsageCacheReadTokens, u, *o.cached_prompt_tokens);
  if (o.reasoning_tokens) increase(kUsageReasoningTokens, u, *o.reasoning_tokens);
}

Attributes GenAiMetrics::attributes_of(Family f, const Key& k) const {
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
  if (!k.extra.empty()) add(a, kFamilies[f].extra, k.extra);
  return a;
}

bool GenAiMetrics::active(Family f) const {
  if (f == kOperationDuration) return true;
  return has(opts_.conventions, f < kInferenceDuration ? GenAiConventions::kV1_41 : GenAiConventions::kLatest);
}

void GenAiMetrics::render_family(promtext::TextWriter& w, Family f) const {
  const MetricName& name = kFamilies[f];
  const bool counter = name.kind == Kind::kCounter;
  if (!active(f) && (counter ? counters_[f].empty() : histograms_[f].empty())) return;
  w.family(name.prometheus, counter ? promtext::MetricType::kCounter : promtext::MetricType::kHistogram, name.help);
  const std::string port = std::to_string(opts_.server_port);
  std::string extra_label = name.extra;
  std::replace(extra_label.begin(), extra_label.end(), '.', '_');
  // Label names in Prometheus spelling, sorted by name (`le` is placed among them).
  const auto labels_of = [&](const Key& k) {
    std::vector<promtext::LabelView> labels;
    if (!k.error_type.empty()) labels.emplace_back("error_type", k.error_type);
    labels.emplace_back("gen_ai_operation_name", k.operation);
    labels.emplace_back("gen_ai_provider_name", k.provider);
    if (!k.request_model.empty()) labels.emplace_back("gen_ai_request_model", k.request_model);
    if (!k.response_model.empty()) labels.emplace_back("gen_ai_response_model", k.response_model);
    if (!k.extra.empty()) labels.emplace_back(extra_label, k.extra);
    if (!opts_.server_address.empty()) {
      labels.emplace_back("server_address", opts_.server_address);
      labels.emplace_back("server_port", port);
    }
    return labels;
  };
  if (counter) {
    for (const auto& [k, n] : counters_[f]) w.sample(name.prometheus, labels_of(k), static_cast<double>(n));
    return;
  }
  for (const auto& [k, h] : histograms_[f]) {
    w.histogram_samples(name.prometheus, labels_of(k), h.bounds(), h.counts(), h.sum());
  }
}

void GenAiMetrics::render_prometheus(promtext::TextWriter& w) const {
  for (std::size_t f = 0; f < kFamilyCount; ++f) render_family(w, static_cast<Family>(f));
  w.family("modelperfobs_genai_models_folded_total", promtext::MetricType::kCounter,
           "Requests whose model name was recorded as _other in the gen_ai_* series (over --max-model-labels).")
      .sample("modelperfobs_genai_models_folded_total", {}, static_cast<double>(models_.folded()));
}

std::vector<Metric> GenAiMetrics::snapshot(std::int64_t now_unix_ns) const {
  std::vector<Metric> out;
  for (std::size_t i = 0; i < kFamilyCount; ++i) {
    const auto f = static_cast<Family>(i);
    const MetricName& name = kFamilies[f];
    Metric m{name.otel, name.help, name.unit, {}};
    if (name.kind == Kind::kCounter) {
      m.is_counter = true;
      for (const auto& [k, n] : counters_[f]) {
        m.sum_points.push_back(SumPoint{attributes_of(f, k), start_unix_ns_, now_unix_ns, n});
      }
    } else {
      for (const auto& [k, h] : histograms_[f]) {
        m.points.push_back(HistogramPoint{attributes_of(f, k), start_unix_ns_, now_unix_ns, h.count(), h.sum(),
                                          h.counts(), h.bounds()});
      }
    }
    if (!m.points.empty() || !m.sum_points.empty()) out.push_back(std::move(m));
  }
  return out;
}

}  // namespace mpo::otel
