// Reading engine spans back: OTLP/JSON trace files as the OpenTelemetry Collector's file exporter
// writes them (one ExportTraceServiceRequest per line; a single pretty-printed document is read
// too). The engine spans are those carrying vLLM's gen_ai.latency.* attributes
// (otel/engine_span.hpp); other spans (the proxy's own, a gateway's) are counted and left out.
// Bad lines are counted with their numbers, never fatal. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::otel {

struct EngineSpan {
  std::string trace_id, span_id, parent_span_id;  // lowercase hex ("" when absent)
  std::string name, service_name, request_id;
  int kind = 0;
  std::int64_t start_unix_ns = 0, end_unix_ns = 0;
  // Seconds, as the engine reported them.
  std::optional<double> queue_s, ttft_s, prefill_s, decode_s, inference_s, e2e_s;
  std::optional<std::int64_t> prompt_tokens, completion_tokens;
};

struct TraceFileRead {
  std::vector<EngineSpan> spans;
  std::uint64_t lines = 0;            // non-empty lines (or 1 for a whole document)
  std::uint64_t bad_lines = 0;        // not an OTLP/JSON traces document
  std::uint64_t other_spans = 0;      // spans without engine timings
  std::vector<std::string> problems;  // the first 20, with line numbers
};

TraceFileRead read_otlp_json_traces(std::string_view text);

}  // namespace mpo::otel
