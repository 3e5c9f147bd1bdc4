// Fuzz target: the OpenTelemetry inputs a client or an environment controls never crash: a
// traceparent header (whatever parses formats back to the same ids and flags) and the
// key=value lists of OTEL_EXPORTER_OTLP_HEADERS / OTEL_RESOURCE_ATTRIBUTES; the export
// configuration built from them; the OTLP bodies written for a span that carries them; and an
// OTLP/JSON trace file as `attribute --traces` reads it.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "otel/config.hpp"
#include "otel/otlp.hpp"
#include "otel/trace_context.hpp"
#include "otel/trace_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto tp = mpo::otel::parse_traceparent(text)) {
    const auto again =
        mpo::otel::parse_traceparent(mpo::otel::format_traceparent(tp->trace_id, tp->parent_id, tp->flags));
    if (!again || again->trace_id != tp->trace_id || again->parent_id != tp->parent_id || again->flags != tp->flags) {
      std::abort();
    }
  }
  (void)mpo::otel::parse_key_values(text, "fuzz");
  // An OTLP/JSON trace file (attribute --traces): whatever is read has hex ids and its counts add up.
  const auto traces = mpo::otel::read_otlp_json_traces(text);
  if (traces.bad_lines > traces.lines) std::abort();
  const std::string value(text);
  auto config = mpo::otel::resolve_export_config(
      {},
      [&](std::string_view name) -> std::optional<std::string> {
        if (name == "OTEL_EXPORTER_OTLP_ENDPOINT") return "http://127.0.0.1:4318";
        if (name == "OTEL_EXPORTER_OTLP_HEADERS" || name == "OTEL_RESOURCE_ATTRIBUTES" || name == "OTEL_SERVICE_NAME") {
          return value;
        }
        return std::nullopt;
      },
      "fuzz", "fuzz:1");
  if (config) {
    mpo::otel::IdGenerator ids(1);
    const auto trace = mpo::otel::trace_for_request(text, ids);
    mpo::otel::Span span;
    span.trace_id = trace.trace_id;
    span.span_id = trace.span_id;
    span.name = value;
    span.trace_state = value;
    span.attributes = config->resource;
    const mpo::otel::Origin origin{config->resource, "modelperfobs", "fuzz"};
    (void)mpo::otel::encode_traces(origin, {&span, 1}, mpo::otel::Encoding::kProtobuf);
    (void)mpo::otel::encode_traces(origin, {&span, 1}, mpo::otel::Encoding::kJson);
  }
  return 0;
}
