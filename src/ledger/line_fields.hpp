// The fields of a `modelperfobs.observation.v1` line the readers map onto a record, and how a key
// is told: ledger/reader.cpp's DOM walk and ledger/observation_scan.cpp's scan of our writer's form
// read the same fields the same way. Internal to the ledger module.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "ledger/reader.hpp"

namespace mpo::ledger::detail {

enum class Field : std::uint8_t {
  kObservationId,
  kStartedAt,
  kEndedAt,
  kModel,
  kResponseModel,
  kBackend,
  kPath,
  kOperation,
  kStream,
  kHttpStatus,
  kOutcome,
  kErrorType,
  kErrorMessage,
  kFinishReason,
  kMaxTokens,
  kTtfb,
  kTtft,
  kE2e,
  kTpot,
  kItlP50,
  kItlP95,
  kItlMax,
  kFirstOutput,
  kOutputTps,
  kE2eOutputTps,
  kPromptTokens,
  kCompletionTokens,
  kTotalTokens,
  kCachedPromptTokens,
  kTokenSource,
  kInFlight,
  kServerTimings,
  kSweepPoint,
  kWarmup,
  kTimingBasis,
  kProxyLag,
  kProxyLagAt,
  kProxyLagQuiet,
  kTraceId,
  kSpanId,
  kSessionId,
  kTurn,
  kOther,
};

inline constexpr std::pair<std::string_view, Field> kFields[] = {
    {"observation_id", Field::kObservationId},
    {"started_at", Field::kStartedAt},
    {"ended_at", Field::kEndedAt},
    {"model", Field::kModel},
    {"response_model", Field::kResponseModel},
    {"backend", Field::kBackend},
    {"path", Field::kPath},
    {"operation", Field::kOperation},
    {"stream", Field::kStream},
    {"http_status", Field::kHttpStatus},
    {"outcome", Field::kOutcome},
    {"error_type", Field::kErrorType},
    {"error_message", Field::kErrorMessage},
    {"finish_reason", Field::kFinishReason},
    {"max_tokens", Field::kMaxTokens},
    {"ttfb_ms", Field::kTtfb},
    {"ttft_ms", Field::kTtft},
    {"e2e_ms", Field::kE2e},
    {"tpot_ms", Field::kTpot},
    {"itl_p50_ms", Field::kItlP50},
    {"itl_p95_ms", Field::kItlP95},
    {"itl_max_ms", Field::kItlMax},
    {"first_output", Field::kFirstOutput},
    {"output_tokens_per_second", Field::kOutputTps},
    {"e2e_output_tokens_per_second", Field::kE2eOutputTps},
    {"prompt_tokens", Field::kPromptTokens},
    {"completion_tokens", Field::kCompletionTokens},
    {"total_tokens", Field::kTotalTokens},
    {"cached_prompt_tokens", Field::kCachedPromptTokens},
    {"token_source", Field::kTokenSource},
    {"in_flight_at_start", Field::kInFlight},
    {"server_timings", Field::kServerTimings},
    {"sweep_point", Field::kSweepPoint},
    {"warmup", Field::kWarmup},
    {"timing_basis", Field::kTimingBasis},
    {"proxy_lag_ms", Field::kProxyLag},
    {"proxy_lag_at_ms", Field::kProxyLagAt},
    {"proxy_lag_quiet_ms", Field::kProxyLagQuiet},
    {"trace_id", Field::kTraceId},
    {"span_id", Field::kSpanId},
    {"session_id", Field::kSessionId},
    {"turn", Field::kTurn},
};

// Field names are found by a hash of a key's length and four of its bytes into 128 slots, each
// holding at most one name (checked at compile time), then one comparison: a line's ~50 keys cost
// no search and no unpredictable branches.
inline constexpr std::size_t kMaxKeyLength = 32;
constexpr std::size_t field_slot(std::string_view k) {
  const auto at = [&k](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(k[i])); };
  return (k.size() + at(1) + 4 * at(k.size() / 2) + 21 * at(k.size() - 2) + 4 * at(k.size() - 1)) % 128;
}
struct FieldSlots {
  std::int8_t field[128] = {};  // index into kFields, or -1
  bool unique = true;           // no two names share a slot
  constexpr FieldSlots() {
    for (auto& f : field) f = -1;
    for (std::size_t i = 0; i < std::size(kFields); ++i) {
      const std::string_view name = kFields[i].first;
      if (name.size() < 2 || name.size() > kMaxKeyLength) unique = false;
      auto& slot = field[field_slot(name)];
      if (slot >= 0) unique = false;
      slot = static_cast<std::int8_t>(i);
    }
  }
};
inline constexpr FieldSlots kFieldSlots;
static_assert(kFieldSlots.unique, "two field names share a slot: change field_slot's multipliers");

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // one unaligned load
  return v;
}
// Equal bytes, for 2 <= n <= kMaxKeyLength, in a few word compares (overlapping at the end).
inline bool same_bytes(const char* a, const char* b, std::size_t n) {
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      if (load<std::uint64_t>(a + i) != load<std::uint64_t>(b + i)) return false;
    }
    return load<std::uint64_t>(a + n - 8) == load<std::uint64_t>(b + n - 8);
  }
  if (n >= 4) {
    return load<std::uint32_t>(a) == load<std::uint32_t>(b) &&
           load<std::uint32_t>(a + n - 4) == load<std::uint32_t>(b + n - 4);
  }
  return load<std::uint16_t>(a) == load<std::uint16_t>(b) &&
         load<std::uint16_t>(a + n - 2) == load<std::uint16_t>(b + n - 2);
}

inline Field field_of(std::string_view key) {
  if (key.size() < 2 || key.size() > kMaxKeyLength) return Field::kOther;
  const std::int8_t i = kFieldSlots.field[field_slot(key)];
  if (i < 0) return Field::kOther;
  const auto& [name, f] = kFields[static_cast<std::size_t>(i)];
  return name.size() == key.size() && same_bytes(name.data(), key.data(), key.size()) ? f : Field::kOther;
}

// The fields a line must have; the line is not a record without all three.
struct Required {
  bool id = false, started = false, outcome = false;
  bool all() const { return id && started && outcome; }
};

// One field's value into the record: one mapping for the DOM walk and the scan alike. `Value` reads
// its value as a string, an RFC 3339 time, a number (a double, int64 or uint64, as a double), an
// integer (an int64, or a double holding an integral value in range), a boolean, and server_timings'
// minified object; each nullopt where the value is not of that kind (core/simdjson_values.hpp's
// rules).
template <class Value>
void read_field(Field f, const Value& v, LedgerRecordView& r, Required& got) {
  switch (f) {
    case Field::kObservationId:
      if (auto s = v.string()) r.observation_id = *s, got.id = true;
      break;
    case Field::kStartedAt:
      if (auto t = v.time()) r.started_at_us = *t, got.started = true;
      break;
    case Field::kEndedAt: r.ended_at_us = v.time(); break;
    case Field::kModel: r.model = v.string(); break;
    case Field::kResponseModel: r.response_model = v.string(); break;
    case Field::kBackend: r.backend = v.string(); break;
    case Field::kPath: r.path = v.string(); break;
    case Field::kOperation: r.operation = v.string(); break;
    case Field::kStream:
      if (auto b = v.boolean()) r.stream = *b;
      break;
    case Field::kHttpStatus:
      if (auto i = v.integer()) r.http_status = static_cast<int>(*i);
      break;
    case Field::kOutcome:
      if (auto s = v.string()) r.outcome = *s, got.outcome = true;
      break;
    case Field::kErrorType: r.error_type = v.string(); break;
    case Field::kErrorMessage: r.error_message = v.string(); break;
    case Field::kFinishReason: r.finish_reason = v.string(); break;
    case Field::kMaxTokens: r.max_tokens = v.integer(); break;
    case Field::kTtfb: r.ttfb_ms = v.number(); break;
    case Field::kTtft: r.ttft_ms = v.number(); break;
    case Field::kE2e: r.e2e_ms = v.number(); break;
    case Field::kTpot: r.tpot_ms = v.number(); break;
    case Field::kItlP50: r.itl_p50_ms = v.number(); break;
    case Field::kItlP95: r.itl_p95_ms = v.number(); break;
    case Field::kItlMax: r.itl_max_ms = v.number(); break;
    case Field::kFirstOutput: r.first_output = v.string(); break;
    case Field::kOutputTps: r.output_tokens_per_second = v.number(); break;
    case Field::kE2eOutputTps: r.e2e_output_tokens_per_second = v.number(); break;
    case Field::kPromptTokens: r.prompt_tokens = v.integer(); break;
    case Field::kCompletionTokens: r.completion_tokens = v.integer(); break;
    case Field::kTotalTokens: r.total_tokens = v.integer(); break;
    case Field::kCachedPromptTokens: r.cached_prompt_tokens = v.integer(); break;
    case Field::kTokenSource:
      if (auto s = v.string()) r.token_source = *s;
      break;
    case Field::kInFlight: r.in_flight_at_start = v.integer(); break;
    case Field::kSweepPoint: r.sweep_point = v.string(); break;
    case Field::kWarmup:
      if (auto b = v.boolean()) r.warmup = *b;
      break;
    case Field::kTimingBasis: r.timing_basis = v.string(); break;
    case Field::kProxyLag: r.proxy_lag_ms = v.number(); break;
    case Field::kProxyLagAt: r.proxy_lag_at_ms = v.number(); break;
    case Field::kProxyLagQuiet: r.proxy_lag_quiet_ms = v.number(); break;
    case Field::kTraceId: r.trace_id = v.string(); break;
    case Field::kSpanId: r.span_id = v.string(); break;
    case Field::kSessionId: r.session_id = v.string(); break;
    case Field::kTurn: r.turn = v.integer(); break;
    case Field::kServerTimings:
      if (auto o = v.object()) r.server_timings = *o;
      break;
    case Field::kOther: break;
  }
}

}  // namespace mpo::ledger::detail
