// The implementation of otel/trace_context.hpp. W3C Trace Context (https://www.w3.org/TR/trace-
// context/): the `traceparent` header read and written, trace and span ids made, and what the proxy
// does with a request's trace headers (docs/OTEL.md "Trace context").
#include "otel/trace_context.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace mpo::otel {
namespace {

int hex_value(char c, bool lowercase_only) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (!lowercase_only && c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <std::size_t N>
bool read_hex(std::string_view hex, std::array<std::uint8_t, N>& out, bool lowercase_only) {
  if (hex.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(hex[2 * i], lowercase_only);
    const int lo = hex_value(hex[2 * i + 1], lowercase_only);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& a) {
  return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

template <std::size_t N>
void fill_random(std::mt19937_64& rng, std::array<std::uint8_t, N>& out) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t r = rng();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) out[i + j] = static_cast<std::uint8_t>(r >> (8 * j));
    }
  } while (all_zero(out));
}

}  // namespace

Result<TraceParent> parse_traceparent(std::string_view v) {
  // 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55
  constexpr std::size_t kLength = 55;
  if (v.size() < kLength) return make_error(errc::kTraceparentLength, "traceparent shorter than 55 characters");
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(v.substr(0, 2), version, true))
    return make_error(errc::kTraceparentVersion, "version is not 2 hex digits");
  if (version[0] == 0xff) return make_error(errc::kTraceparentVersion, "version ff is invalid");
  if (version[0] == 0x00 && v.size() != kLength) {
    return make_error(errc::kTraceparentLength, "a version-00 traceparent is exactly 55 characters");
  }
  if (v.size() > kLength && v[kLength] != '-') {
    return make_error(errc::kTraceparentFormat, "fields after the flags must follow a '-'");
  }
  if (v[2] != '-' || v[35] != '-' || v[52] != '-')
    return make_error(errc::kTraceparentFormat, "fields not separated by '-'");
  TraceParent tp;
  if (!read_hex(v.substr(3, 32), tp.trace_id, true))
    return make_error(errc::kTraceparentTraceId, "trace-id is not 32 lowercase hex digits");
  if (all_zero(tp.trace_id)) return make_error(errc::kTraceparentTraceId, "trace-id is all zeros");
  if (!read_hex(v.substr(36, 16), tp.parent_id, true))
    return make_error(errc::kTraceparentParentId, "parent-id is not 16 lowercase hex digits");
  if (all_zero(tp.parent_id)) return make_error(errc::kTraceparentParentId, "parent-id is all zeros");
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(v.substr(53, 2), flags, true))
    return make_error(errc::kTraceparentFlags, "trace-flags are not 2 hex digits");
  tp.flags = flags[0];
  return tp;
}

namespace {

// Two lower-case hex digits per byte, from `p` on; the end.
char* write_hex(char* p, std::span<const std::uint8_t> bytes) { return write_hex_lower(p, bytes.data(), bytes.size()); }

}  // namespace

std::string to_hex(std::span<const std::uint8_t> bytes) {
  std::string out(bytes.size() * 2, '0');  // written in place: a push_back per digit was most of its cost
  write_hex(out.data(), bytes);
  return out;
}

std::optional<TraceId> trace_id_from_hex(std::string_view hex) {
  TraceId id{};
  if (!read_hex(hex, id, false)) return std::nullopt;
  return id;
}

std::optional<SpanId> span_id_from_hex(std::string_view hex) {
  SpanId id{};
  if (!read_hex(hex, id, false)) return std::nullopt;
  return id;
}

std::string_view write_traceparent(char (&out)[kTraceparentSize], const TraceId& trace, const SpanId& span,
                                   std::uint8_t flags) {
  // 00-<32 hex>-<16 hex>-<2 hex>, written in place (issue 43: three strings joined were a
  // quarter of the upstream request's text).
  char* p = out;
  *p++ = '0';
  *p++ = '0';
  *p++ = '-';
  p = write_hex(p, trace);
  *p++ = '-';
  p = write_hex(p, span);
  *p++ = '-';
  const std::array<std::uint8_t, 1> f{flags};
  write_hex(p, f);
  return {out, kTraceparentSize};
}

std::string format_traceparent(const TraceId& trace, const SpanId& span, std::uint8_t flags) {
  char out[kTraceparentSize];
  return std::string(write_traceparent(out, trace, span, flags));
}

IdGenerator::IdGenerator(std::uint64_t seed) : rng_(seed != 0 ? seed : std::random_device{}()) {
  if (seed == 0) rng_.seed((static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}());
}

TraceId IdGenerator::trace_id() {
  TraceId id{};
  fill_random(rng_, id);
  return id;
}

SpanId IdGenerator::span_id() {
  SpanId id{};
  fill_random(rng_, id);
  return id;
}

RequestTrace trace_for_request(std::optional<std::string_view> traceparent, IdGenerator& ids) {
  RequestTrace t;
  if (traceparent) {
    if (auto tp = parse_traceparent(*traceparent)) {
      t.trace_id = tp->trace_id;
      t.parent_id = tp->parent_id;
      t.flags = tp->flags;
      t.continued = true;
    }
  }
  if (!t.continued) t.trace_id = ids.trace_id();
  t.span_id = ids.span_id();
  return t;
}

}  // namespace mpo::otel
