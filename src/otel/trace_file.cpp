// The implementation of otel/trace_file.hpp. Reading engine spans back: OTLP/JSON trace files as
// the OpenTelemetry Collector's file exporter writes them (one ExportTraceServiceRequest per line;
// a single pretty-printed document is read too).
#include "otel/trace_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/simdjson_values.hpp"
#include "otel/engine_span.hpp"

namespace mpo::otel {
namespace {

using simdjson::dom::element;

// OTLP/JSON 64-bit integers may be strings ("123") or numbers.
std::optional<std::int64_t> int64_of(element v) {
  if (auto i = sj::integer_of(v)) return i;
  if (auto s = sj::string_of(v)) {
    std::int64_t n = 0;
    auto [p, ec] = std::from_chars(s->data(), s->data() + s->size(), n);
    if (ec == std::errc() && p == s->data() + s->size()) return n;
  }
  return std::nullopt;
}

std::optional<double> number_value(element any) {
  if (auto d = sj::field(any, "doubleValue")) {
    if (auto n = sj::number_of(*d)) return n;
  }
  if (auto i = sj::field(any, "intValue")) {
    if (auto n = int64_of(*i)) return static_cast<double>(*n);
  }
  return std::nullopt;
}

std::string lower_hex(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string resource_service(element resource_spans) {
  auto resource = sj::field(resource_spans, "resource");
  if (!resource) return "";
  auto attrs = sj::field(*resource, "attributes");
  simdjson::dom::array list;
  if (!attrs || attrs->get_array().get(list) != simdjson::SUCCESS) return "";
  for (element kv : list) {
    if (sj::string_field(kv, "key").value_or("") != "service.name") continue;
    if (auto v = sj::field(kv, "value")) return std::string(sj::string_field(*v, "stringValue").value_or(""));
  }
  return "";
}

void read_span(element s, const std::string& service, TraceFileRead& out) {
  EngineSpan e;
  e.trace_id = lower_hex(sj::string_field(s, "traceId").value_or(""));
  e.span_id = lower_hex(sj::string_field(s, "spanId").value_or(""));
  e.parent_span_id = lower_hex(sj::string_field(s, "parentSpanId").value_or(""));
  e.name = std::string(sj::string_field(s, "name").value_or(""));
  e.service_name = service;
  if (auto k = sj::field(s, "kind")) e.kind = static_cast<int>(sj::integer_of(*k).value_or(0));
  if (auto t = sj::field(s, "startTimeUnixNano")) e.start_unix_ns = int64_of(*t).value_or(0);
  if (auto t = sj::field(s, "endTimeUnixNano")) e.end_unix_ns = int64_of(*t).value_or(0);
  bool engine = false;
  simdjson::dom::array attrs;
  if (auto a = sj::field(s, "attributes"); a && a->get_array().get(attrs) == simdjson::SUCCESS) {
    for (element kv : attrs) {
      const auto key = sj::string_field(kv, "key").value_or("");
      auto value = sj::field(kv, "value");
      if (!value) continue;
      if (key == vllm_attr::kRequestId) {
        e.request_id = std::string(sj::string_field(*value, "stringValue").value_or(""));
        continue;
      }
      const auto n = number_value(*value);
      if (!n) continue;
      if (key.starts_with("gen_ai.latency.")) engine = true;
      if (key == vllm_attr::kTimeInQueue) e.queue_s = n;
      if (key == vllm_attr::kTimeToFirstToken) e.ttft_s = n;
      if (key == vllm_attr::kPrefill) e.prefill_s = n;
      if (key == vllm_attr::kDecode) e.decode_s = n;
      if (key == vllm_attr::kInference) e.inference_s = n;
      if (key == vllm_attr::kE2e) e.e2e_s = n;
      if (key == vllm_attr::kPromptTokens || key == vllm_attr::kInputTokens) {
        e.prompt_tokens = static_cast<std::int64_t>(*n);
      }
      if (key == vllm_attr::kCompletionTokens || key == vllm_attr::kOutputTokens) {
        e.completion_tokens = static_cast<std::int64_t>(*n);
      }
    }
  }
  if (!engine || e.trace_id.empty()) {
    ++out.other_spans;
    return;
  }
  out.spans.push_back(std::move(e));
}

// One ExportTraceServiceRequest; false when it is not one.
bool read_document(simdjson::dom::parser& parser, std::string_view text, TraceFileRead& out) {
  element doc;
  simdjson::dom::array resource_spans;
  if (parser.parse(text.data(), text.size(), true).get(doc) != simdjson::SUCCESS) return false;
  auto rs = sj::field(doc, "resourceSpans");
  if (!rs || rs->get_array().get(resource_spans) != simdjson::SUCCESS) return false;
  for (element r : resource_spans) {
    const std::string service = resource_service(r);
    simdjson::dom::array scopes;
    auto ss = sj::field(r, "scopeSpans");
    if (!ss || ss->get_array().get(scopes) != simdjson::SUCCESS) continue;
    for (element scope : scopes) {
      simdjson::dom::array spans;
      auto list = sj::field(scope, "spans");
      if (!list || list->get_array().get(spans) != simdjson::SUCCESS) continue;
      for (element s : spans) read_span(s, service, out);
    }
  }
  return true;
}

}  // namespace

TraceFileRead read_otlp_json_traces(std::string_view text) {
  TraceFileRead out;
  simdjson::dom::parser parser;
  std::uint64_t number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const auto line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    ++out.lines;
    if (!read_document(parser, line, out)) {
      ++out.bad_lines;
      if (out.problems.size() < 20) {
        out.problems.push_back(fmt::format("line {}: not an OTLP/JSON traces document (resourceSpans)", number));
      }
    }
  }
  // A single document written over several lines (a pretty-printed export).
  if (out.spans.empty() && out.bad_lines > 1) {
    TraceFileRead whole;
    if (read_document(parser, text, whole)) {
      whole.lines = 1;
      return whole;
    }
  }
  return out;
}

}  // namespace mpo::otel
