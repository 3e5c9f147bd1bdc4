// The implementation of otel/otlp.hpp. OTLP (OpenTelemetry Protocol) request bodies for HTTP
// export: ExportTraceServiceRequest and ExportMetricsServiceRequest, in binary protobuf (the
// collector's default, `http/protobuf`) or in OTLP/JSON (`http/json`).
#include "otel/otlp.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/json.hpp"
#include "otel/protobuf_writer.hpp"

namespace mpo::otel {
namespace {

// --- binary protobuf ------------------------------------------------------------------------
// Field numbers: opentelemetry-proto v1 common.proto, resource.proto, trace.proto, metrics.proto
// and the collector's trace_service.proto / metrics_service.proto.

std::string_view bytes_of(std::span<const std::uint8_t> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

ProtoWriter any_value(const AttributeValue& v) {
  ProtoWriter w;  // AnyValue: string 1, bool 2, int 3, double 4, array 5
  if (auto* s = std::get_if<std::string>(&v)) {
    w.bytes(1, *s);
  } else if (auto* b = std::get_if<bool>(&v)) {
    w.varint(2, *b ? 1 : 0);
  } else if (auto* i = std::get_if<std::int64_t>(&v)) {
    w.varint(3, static_cast<std::uint64_t>(*i));
  } else if (auto* d = std::get_if<double>(&v)) {
    w.dbl(4, *d);
  } else {
    ProtoWriter array;  // ArrayValue: values 1
    for (const auto& item_text : std::get<std::vector<std::string>>(v)) {
      ProtoWriter item;
      item.bytes(1, item_text);
      array.message(1, item);
    }
    w.message(5, array);
  }
  return w;
}

void attributes(ProtoWriter& w, std::uint32_t field, const Attributes& attrs) {
  for (const auto& a : attrs) {
    ProtoWriter kv;  // KeyValue: key 1, value 2
    kv.bytes(1, a.key);
    kv.message(2, any_value(a.value));
    w.message(field, kv);
  }
}

// ResourceX { resource 1, scope_X 2 }, Resource { attributes 1 }, ScopeX { scope 1, X 2 },
// InstrumentationScope { name 1, version 2 }.
std::string envelope(const Origin& origin, const std::vector<ProtoWriter>& items) {
  ProtoWriter resource;
  attributes(resource, 1, origin.resource);
  ProtoWriter scope;
  scope.bytes(1, origin.scope_name);
  if (!origin.scope_version.empty()) scope.bytes(2, origin.scope_version);
  ProtoWriter scoped;
  scoped.message(1, scope);
  for (const auto& item : items) scoped.message(2, item);
  ProtoWriter resourced;
  resourced.message(1, resource);
  resourced.message(2, scoped);
  ProtoWriter request;  // Export*ServiceRequest { resource_X 1 }
  request.message(1, resourced);
  return std::move(request).take();
}

ProtoWriter span_message(const Span& s) {
  ProtoWriter w;  // Span
  w.bytes(1, bytes_of(s.trace_id));
  w.bytes(2, bytes_of(s.span_id));
  if (!s.trace_state.empty()) w.bytes(3, s.trace_state);
  if (s.parent_span_id) w.bytes(4, bytes_of(*s.parent_span_id));
  w.bytes(5, s.name);
  w.varint(6, static_cast<std::uint64_t>(s.kind));
  w.fixed64(7, static_cast<std::uint64_t>(s.start_unix_ns));
  w.fixed64(8, static_cast<std::uint64_t>(s.end_unix_ns));
  attributes(w, 9, s.attributes);
  ProtoWriter status;  // Status { message 2, code 3 }
  if (!s.status_message.empty()) status.bytes(2, s.status_message);
  if (s.status != StatusCode::kUnset) status.varint(3, static_cast<std::uint64_t>(s.status));
  w.message(15, status);
  return w;
}

ProtoWriter sum_message(const Metric& m) {
  ProtoWriter sum;  // Sum { data_points 1, aggregation_temporality 2, is_monotonic 3 }
  for (const auto& p : m.sum_points) {
    ProtoWriter point;  // NumberDataPoint { start 2, time 3, as_int 6 (sfixed64), attributes 7 }
    point.fixed64(2, static_cast<std::uint64_t>(p.start_unix_ns));
    point.fixed64(3, static_cast<std::uint64_t>(p.time_unix_ns));
    point.fixed64(6, static_cast<std::uint64_t>(p.value));
    attributes(point, 7, p.attributes);
    sum.message(1, point);
  }
  sum.varint(2, 2);  // AGGREGATION_TEMPORALITY_CUMULATIVE
  sum.varint(3, 1);
  return sum;
}

ProtoWriter metric_message(const Metric& m) {
  ProtoWriter w;  // Metric { name 1, description 2, unit 3, sum 7, histogram 9 }
  w.bytes(1, m.name);
  w.bytes(2, m.description);
  w.bytes(3, m.unit);
  if (m.is_counter) {
    w.message(7, sum_message(m));
    return w;
  }
  ProtoWriter histogram;  // Histogram { data_points 1, aggregation_temporality 2 }
  for (const auto& p : m.points) {
    ProtoWriter point;  // HistogramDataPoint
    point.fixed64(2, static_cast<std::uint64_t>(p.start_unix_ns));
    point.fixed64(3, static_cast<std::uint64_t>(p.time_unix_ns));
    point.fixed64(4, p.count);
    point.dbl(5, p.sum);
    point.packed_fixed64(6, p.bucket_counts);
    point.packed_double(7, p.bounds);
    attributes(point, 9, p.attributes);
    histogram.message(1, point);
  }
  histogram.varint(2, 2);  // AGGREGATION_TEMPORALITY_CUMULATIVE
  w.message(9, histogram);
  return w;
}

// --- OTLP/JSON ------------------------------------------------------------------------------
// The protobuf JSON mapping with OTLP's exceptions: ids as hex strings, enums as integers, 64-bit
// integers as decimal strings, lowerCamelCase names.

void json_any_value(std::string& out, const AttributeValue& v) {
  if (auto* s = std::get_if<std::string>(&v)) {
    out += "{\"stringValue\":";
    append_json_string(out, *s);
  } else if (auto* b = std::get_if<bool>(&v)) {
    out += *b ? "{\"boolValue\":true" : "{\"boolValue\":false";
  } else if (auto* i = std::get_if<std::int64_t>(&v)) {
    out += fmt::format("{{\"intValue\":\"{}\"", *i);
  } else if (auto* d = std::get_if<double>(&v)) {
    out += "{\"doubleValue\":";
    append_json_number(out, *d);
  } else {
    out += "{\"arrayValue\":{\"values\":[";
    bool first = true;
    for (const auto& item_text : std::get<std::vector<std::string>>(v)) {
      if (!first) out += ',';
      first = false;
      out += "{\"stringValue\":";
      append_json_string(out, item_text);
      out += '}';
    }
    out += "]}";
  }
  out += '}';
}

void json_attributes(std::string& out, const Attributes& attrs) {
  out += "\"attributes\":[";
  for (std::size_t i = 0; i < attrs.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"key\":";
    append_json_string(out, attrs[i].key);
    out += ",\"value\":";
    json_any_value(out, attrs[i].value);
    out += '}';
  }
  out += ']';
}

// {"resourceX":[{"resource":{...},"scopeX":[{"scope":{...},"X":[items]}]}]}
std::string json_envelope(const Origin& origin, std::string_view resource_key, std::string_view scope_key,
                          std::string_view items_key, const std::string& items) {
  std::string out = fmt::format("{{\"{}\":[{{\"resource\":{{", resource_key);
  json_attributes(out, origin.resource);
  out += fmt::format("}},\"{}\":[{{\"scope\":{{\"name\":", scope_key);
  append_json_string(out, origin.scope_name);
  out += ",\"version\":";
  append_json_string(out, origin.scope_version);
  out += fmt::format("}},\"{}\":[", items_key);
  out += items;
  out += "]}]}]}";
  return out;
}

std::string json_span(const Span& s) {
  std::string out =
      fmt::format(R"({{"traceId":"{}","spanId":"{}","traceState":)", to_hex(s.trace_id), to_hex(s.span_id));
  append_json_string(out, s.trace_state);
  out += fmt::format(R"(,"parentSpanId":"{}","name":)", s.parent_span_id ? to_hex(*s.parent_span_id) : "");
  append_json_string(out, s.name);
  out += fmt::format(R"(,"kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}",)", static_cast<int>(s.kind),
                     s.start_unix_ns, s.end_unix_ns);
  json_attributes(out, s.attributes);
  out += fmt::format(R"(,"status":{{"code":{},"message":)", static_cast<int>(s.status));
  append_json_string(out, s.status_message);
  out += "}}";
  return out;
}

std::string json_metric(const Metric& m) {
  std::string out = "{\"name\":";
  append_json_string(out, m.name);
  out += ",\"description\":";
  append_json_string(out, m.description);
  out += ",\"unit\":";
  append_json_string(out, m.unit);
  if (m.is_counter) {
    out += ",\"sum\":{\"dataPoints\":[";
    for (std::size_t i = 0; i < m.sum_points.size(); ++i) {
      const auto& p = m.sum_points[i];
      if (i > 0) out += ',';
      out += fmt::format(R"({{"startTimeUnixNano":"{}","timeUnixNano":"{}","asInt":"{}",)", p.start_unix_ns,
                         p.time_unix_ns, p.value);
      json_attributes(out, p.attributes);
      out += '}';
    }
    out += "],\"aggregationTemporality\":2,\"isMonotonic\":true}}";
    return out;
  }
  out += ",\"histogram\":{\"dataPoints\":[";
  for (std::size_t i = 0; i < m.points.size(); ++i) {
    const auto& p = m.points[i];
    if (i > 0) out += ',';
    out += fmt::format(R"({{"startTimeUnixNano":"{}","timeUnixNano":"{}","count":"{}","sum":)", p.start_unix_ns,
                       p.time_unix_ns, p.count);
    append_json_number(out, p.sum);
    out += fmt::format(R"(,"bucketCounts":["{}"],"explicitBounds":[)", fmt::join(p.bucket_counts, "\",\""));
    for (std::size_t j = 0; j < p.bounds.size(); ++j) {
      if (j > 0) out += ',';
      append_json_number(out, p.bounds[j]);
    }
    out += "],";
    json_attributes(out, p.attributes);
    out += '}';
  }
  out += "],\"aggregationTemporality\":2}}";
  return out;
}

}  // namespace

std::string_view content_type(Encoding e) {
  return e == Encoding::kProtobuf ? "application/x-protobuf" : "application/json";
}

// One Export*ServiceRequest of `items`, each written by `to_json` or `to_proto`.
template <class T, class ToJson, class ToProto>
std::string encode(const Origin& origin, std::span<const T> items, Encoding e, ToJson to_json, ToProto to_proto,
                   std::string_view resource_key, std::string_view scope_key, std::string_view items_key) {
  if (e == Encoding::kJson) {
    std::string json;
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) json += ',';
      json += to_json(items[i]);
    }
    return json_envelope(origin, resource_key, scope_key, items_key, json);
  }
  std::vector<ProtoWriter> messages;
  messages.reserve(items.size());
  for (const auto& item : items) messages.push_back(to_proto(item));
  return envelope(origin, messages);
}

std::string encode_traces(const Origin& origin, std::span<const Span> spans, Encoding e) {
  return encode(origin, spans, e, json_span, span_message, "resourceSpans", "scopeSpans", "spans");
}

std::string encode_metrics(const Origin& origin, std::span<const Metric> metrics, Encoding e) {
  return encode(origin, metrics, e, json_metric, metric_message, "resourceMetrics", "scopeMetrics", "metrics");
}

}  // namespace mpo::otel
