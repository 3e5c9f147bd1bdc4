// The OpenTelemetry GenAI semantic conventions applied to a ledger line: the request's span
// (kind CLIENT, `{gen_ai.operation.name} {gen_ai.request.model}`) and the client metrics with the
// bucket boundaries the conventions recommend, for OTLP and for the proxy's Prometheus page. By
// default the metrics of semantic-conventions v1.41.0 (gen_ai.client.operation.duration,
// gen_ai.client.token.usage, gen_ai.client.operation.time_to_first_chunk and
// time_per_output_chunk); under OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental those
// that replaced them in open-telemetry/semantic-conventions-genai (gen_ai.client.inference.*,
// the usage counters, gen_ai.client.embeddings.*), both under `gen_ai_latest_experimental/dup`.
// Tables: docs/OTEL.md. Never any prompt or completion text. Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/histogram.hpp"
#include "core/label_cap.hpp"
#include "ledger/observation.hpp"
#include "otel/otlp.hpp"
#include "otel/trace_context.hpp"

namespace mpo::promtext {
class TextWriter;
}

namespace mpo::otel {

// Which generation of the GenAI metric names to emit (a bit set).
enum class GenAiConventions : unsigned { kV1_41 = 1, kLatest = 2, kBoth = 3 };
// From OTEL_SEMCONV_STABILITY_OPT_IN (a comma-separated list, case-insensitive; nullopt: unset):
// `gen_ai_latest_experimental` the latest, `gen_ai_latest_experimental/dup` both, else v1.41.0.
GenAiConventions genai_conventions(std::optional<std::string_view> opt_in);
std::string_view to_string(GenAiConventions c);

struct GenAiOptions {
  std::string provider;  // gen_ai.provider.name; "" = by API ("anthropic" for Messages, else "openai")
  std::string server_address;
  int server_port = 0;
  // Distinct model names kept as label values; later ones are folded into kOtherModel.
  std::size_t max_models = 50;
  // Longer model names are folded into kOtherModel too.
  std::size_t max_model_bytes = 256;
  GenAiConventions conventions = GenAiConventions::kV1_41;
};
inline constexpr const char* kOtherModel = "_other";

// gen_ai.operation.name for our operation: chat for the chat, Responses and Messages APIs,
// text_completion, embeddings; our own name for the rest (rerank, score, models, other).
std::string_view genai_operation(std::string_view operation);
// True for the operations that are GenAI calls (the metrics are kept for these only).
bool is_genai_operation(std::string_view operation);
std::string_view genai_provider(const ledger::Observation& o, const GenAiOptions& opts);  // views into opts
// error.type: "" for outcome ok; the HTTP status for http_error; else the outcome.
std::string genai_error_type(const ledger::Observation& o);

// The request's span, as the proxy saw it. `trace`: its ids (the ledger's trace_id/span_id).
Span span_from_observation(const ledger::Observation& o, const RequestTrace& trace, std::string_view trace_state,
                           const GenAiOptions& opts);

// Cumulative since construction (`start_unix_ns`).
class GenAiMetrics {
 public:
  GenAiMetrics(GenAiOptions opts, std::int64_t start_unix_ns);
  // Moved, never copied: a copy's last series would point into the original's maps.
  GenAiMetrics(GenAiMetrics&&) = default;
  GenAiMetrics& operator=(GenAiMetrics&&) = default;
  GenAiMetrics(const GenAiMetrics&) = delete;
  GenAiMetrics& operator=(const GenAiMetrics&) = delete;
  void record(const ledger::Observation& o);
  // Prometheus spelling: dots to underscores, unit suffix `_seconds` for "s" (none for {token}),
  // `_total` for counters.
  void render_prometheus(promtext::TextWriter& w) const;
  std::vector<Metric> snapshot(std::int64_t now_unix_ns) const;
  std::size_t models_folded() const { return models_.folded(); }

  // The metrics, v1.41.0's first; `kFamilies` describes each.
  enum Family : std::size_t {
    kOperationDuration,  // v1.41.0: every GenAI operation; latest: the operations neither below covers
    kTokenUsage,
    kOperationTtfc,
    kOperationTpoc,
    kInferenceDuration,  // latest: chat and text_completion
    kInferenceTtfc,
    kInferenceTpoc,
    kInferenceInputTokens,
    kInferenceOutputTokens,
    kUsageInputTokens,  // counters
    kUsageOutputTokens,
    kUsageCacheReadTokens,
    kUsageReasoningTokens,
    kEmbeddingsDuration,  // latest: embeddings
    kEmbeddingsInputTokens,
    kFamilyCount
  };

 private:
  // `extra`: gen_ai.token.type (v1.41.0's token usage) or gen_ai.token.modality (the counters).
  struct Key {
    std::string operation, provider, request_model, response_model, error_type, extra;
  };
  // The same fields viewed, so that recording a request builds no strings unless its series is new.
  struct KeyView {
    std::string_view operation, provider, request_model, response_model, error_type, extra;
  };
  struct KeyLess {
    using is_transparent = void;
    // Both sides as views: a tuple of strings and a tuple of views do not compare under every
    // standard library (clang 14 with libstdc++ 12 refuses).
    template <class K>
    static auto views(const K& k) {
      using V = std::string_view;
      return std::tuple<V, V, V, V, V, V>(k.operation, k.provider, k.request_model, k.response_model, k.error_type,
                                          k.extra);
    }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return views(a) < views(b);
    }
  };
  using Series = std::map<Key, Histogram, KeyLess>;
  using Counts = std::map<Key, std::int64_t, KeyLess>;
  // The label for a model name ("" when none, kOtherModel past the cap); views into models_.
  std::string_view model_label(const std::optional<std::string>& model);
  // The histogram of one family's series, made on first use; `slot` tells apart the series one
  // request records in the same family (token usage: 0 input, 1 output).
  Histogram& series(Family f, const KeyView& k, unsigned slot = 0);
  void observe(Family f, const KeyView& k, double value, unsigned slot = 0) { series(f, k, slot).observe(value); }
  void increase(Family f, const KeyView& k, std::int64_t value);
  // Compares a request's key (its `extra` aside) with the last request's once; on a difference it
  // becomes the last and the series found for that one are forgotten.
  void use_key(const KeyView& k);
  bool active(Family f) const;
  void render_family(promtext::TextWriter& w, Family f) const;
  Attributes attributes_of(Family f, const Key& k) const;

  GenAiOptions opts_;
  std::int64_t start_unix_ns_;
  LabelCap models_;
  Series histograms_[kFamilyCount];
  Counts counters_[kFamilyCount];
  // The series and counters the last request's key found, by family (issue 43): the next request
  // usually has the same key (the same model and outcome), compared once (use_key) instead of once
  // per family, and then each family's series is the one found last time. Map nodes stay where they
  // are, and no series is ever erased.
  struct Recent {
    Key key;  // operation, provider, models and error type (extra unused)
    bool valid = false;
    Histogram* series[kFamilyCount][2] = {};
    std::int64_t* counts[kFamilyCount] = {};
  };
  Recent recent_;
};

}  // namespace mpo::otel
