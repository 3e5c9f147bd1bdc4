// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header read and
// written, trace and span ids made, and what the proxy does with a request's trace headers
// (docs/OTEL.md "Trace context"). Pure.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::otel {

using TraceId = std::array<std::uint8_t, 16>;
using SpanId = std::array<std::uint8_t, 8>;

inline constexpr std::uint8_t kSampledFlag = 0x01;

struct TraceParent {
  TraceId trace_id{};
  SpanId parent_id{};
  std::uint8_t flags = 0;
};

// `version-traceid-parentid-flags`, lowercase hex. Version ff, all-zero ids, uppercase hex and a
// version-00 value of any length but 55 are refused; a later version may carry more fields after
// a '-' (read as version 00, as the specification asks).
Result<TraceParent> parse_traceparent(std::string_view value);

std::string to_hex(std::span<const std::uint8_t> bytes);
// Exactly 2*N lowercase or uppercase hex digits; nullopt otherwise.
std::optional<TraceId> trace_id_from_hex(std::string_view hex);
std::optional<SpanId> span_id_from_hex(std::string_view hex);

// "00-<trace id>-<span id>-<flags>".
std::string format_traceparent(const TraceId& trace, const SpanId& span, std::uint8_t flags);
// The same written into `out`: a view of it.
inline constexpr std::size_t kTraceparentSize = 2 + 1 + 32 + 1 + 16 + 1 + 2;
std::string_view write_traceparent(char (&out)[kTraceparentSize], const TraceId& trace, const SpanId& span,
                                   std::uint8_t flags);

// Random ids, never all zero.
class IdGenerator {
 public:
  // seed 0 draws a seed from std::random_device.
  explicit IdGenerator(std::uint64_t seed = 0);
  TraceId trace_id();
  SpanId span_id();

 private:
  std::mt19937_64 rng_;
};

// One request's place in a trace: the client's trace continued (its traceparent valid) or a new
// one started, with a new span id for the proxy's own span.
struct RequestTrace {
  TraceId trace_id{};
  SpanId span_id{};                 // the proxy's span: the parent of the engine's spans
  std::optional<SpanId> parent_id;  // the client's span, when it sent a valid traceparent
  std::uint8_t flags = kSampledFlag;
  bool continued = false;  // the client's traceparent was valid (its tracestate is forwarded)

  bool sampled() const { return (flags & kSampledFlag) != 0; }
  // The traceparent sent upstream: the same trace, the proxy's span as parent, the client's flags.
  std::string traceparent() const { return format_traceparent(trace_id, span_id, flags); }
};

// `traceparent`: the client's header value, nullopt when it sent none (or sent it twice).
RequestTrace trace_for_request(std::optional<std::string_view> traceparent, IdGenerator& ids);

}  // namespace mpo::otel
