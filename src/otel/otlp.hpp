// OTLP (OpenTelemetry Protocol) request bodies for HTTP export: ExportTraceServiceRequest and
// ExportMetricsServiceRequest, in binary protobuf (the collector's default, `http/protobuf`) or
// in OTLP/JSON (`http/json`). Field numbers and JSON names follow opentelemetry-proto v1
// (opentelemetry/proto/{common,resource,trace,metrics}/v1/*.proto); the tests decode what is
// written here with the OpenTelemetry project's own generated decoders (docs/OTEL.md). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "otel/trace_context.hpp"

namespace mpo::otel {

using AttributeValue = std::variant<std::string, std::int64_t, double, bool, std::vector<std::string>>;
struct Attribute {
  std::string key;
  AttributeValue value;
};
using Attributes = std::vector<Attribute>;

enum class Encoding { kProtobuf, kJson };
std::string_view content_type(Encoding e);

// Span.SpanKind and Status.StatusCode of trace.proto.
enum class SpanKind : int { kInternal = 1, kServer = 2, kClient = 3 };
enum class StatusCode : int { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  std::optional<SpanId> parent_span_id;
  std::string trace_state;
  std::string name;
  SpanKind kind = SpanKind::kClient;
  std::int64_t start_unix_ns = 0;
  std::int64_t end_unix_ns = 0;
  Attributes attributes;
  StatusCode status = StatusCode::kUnset;
  std::string status_message;
};

// What every request carries: the resource (service.name, ...) and the instrumentation scope.
struct Origin {
  Attributes resource;
  std::string scope_name = "modelperfobs";
  std::string scope_version;
};

std::string encode_traces(const Origin& origin, std::span<const Span> spans, Encoding e);

// A cumulative explicit-bucket histogram point (metrics.proto HistogramDataPoint).
struct HistogramPoint {
  Attributes attributes;
  std::int64_t start_unix_ns = 0;
  std::int64_t time_unix_ns = 0;
  std::uint64_t count = 0;
  double sum = 0;
  std::vector<std::uint64_t> bucket_counts;  // bounds.size() + 1, not cumulative
  std::vector<double> bounds;
};

// A cumulative monotonic sum's point (metrics.proto NumberDataPoint, as_int): a counter.
struct SumPoint {
  Attributes attributes;
  std::int64_t start_unix_ns = 0;
  std::int64_t time_unix_ns = 0;
  std::int64_t value = 0;
};

// One metric: a cumulative histogram (`points`), or, when `is_counter`, a cumulative monotonic
// sum (`sum_points`).
struct Metric {
  std::string name;
  std::string description;
  std::string unit;
  std::vector<HistogramPoint> points;
  bool is_counter = false;
  std::vector<SumPoint> sum_points;
};

std::string encode_metrics(const Origin& origin, std::span<const Metric> metrics, Encoding e);

}  // namespace mpo::otel
