// The implementation of ledger/observation.hpp. The ledger line, schema
// `modelperfobs.observation.v1` (contract 1: docs/ARCHITECTURE.md, docs/FORMATS.md).
#include "ledger/observation.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/json.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/time.hpp"

namespace mpo::ledger {

std::optional<double> tpot_ms(const Observation& o) {
  if (!o.stream || !o.ttft_ms || !o.e2e_ms || !o.completion_tokens || began_with_tool_call(o.first_output))
    return std::nullopt;
  // A request of `n` choices decodes them side by side: each choice's tokens after its first came
  // in the time after the first token.
  const double per_choice = static_cast<double>(*o.completion_tokens) / std::max(1, o.choices.value_or(1));
  if (per_choice < 2) return std::nullopt;
  return (*o.e2e_ms - *o.ttft_ms) / (per_choice - 1);
}

std::optional<double> output_tokens_per_second(const Observation& o) {
  if (!o.stream || !o.ttft_ms || !o.e2e_ms || !o.completion_tokens || *o.e2e_ms <= *o.ttft_ms ||
      began_with_tool_call(o.first_output))
    return std::nullopt;
  return static_cast<double>(*o.completion_tokens) / ((*o.e2e_ms - *o.ttft_ms) / 1000.0);
}

std::optional<double> e2e_output_tokens_per_second(const Observation& o) {
  if (!o.e2e_ms || !o.completion_tokens || *o.e2e_ms <= 0) return std::nullopt;
  return static_cast<double>(*o.completion_tokens) / (*o.e2e_ms / 1000.0);
}

namespace {

// A derived figure (a rate, a mean, an interpolated quantile) to the nearest millionth of its unit
// as the ledger writes it: a nanosecond for times in ms, a millionth of a token a second for rates.
// The timestamps behind them are microseconds, so nothing measured is lost, the line reads
// "18.41305" rather than "18.413050000000002", and the number is written without fmt's shortest
// float search (issue 43: the writer's number text 1.6k -> 1.1k instructions a line).
std::optional<double> to_millionths(std::optional<double> v) {
  if (v && std::fabs(*v) < 1e8) *v = std::nearbyint(*v * 1e6) / 1e6;
  return v;
}

// An id's bytes as lowercase hex digits, or null.
template <typename Key, std::size_t N>
void hex_field(JsonObjectWriter& w, Key key, const std::optional<std::array<std::uint8_t, N>>& id) {
  if (!id) {
    w.null_field(key);
    return;
  }
  char text[2 * N];
  write_hex_lower(text, id->data(), N);
  w.plain_field(key, std::string_view(text, 2 * N));
}

// A timestamp's text where it is used, not in a string of its own.
struct Rfc3339 {
  explicit Rfc3339(std::int64_t unix_us) : size(write_rfc3339_us(text, unix_us)) {}
  std::string_view view() const { return {text, size}; }
  char text[48];
  std::size_t size;
};

// The line's members, in their order.
void write_members(JsonObjectWriter& w, const Observation& o) {
  w.plain_field("schema"_key, kObservationSchema)
      .field("observation_id"_key, o.observation_id)
      .plain_field("started_at"_key, Rfc3339(o.started_at_us).view())
      .plain_field("ended_at"_key, Rfc3339(o.ended_at_us).view())
      .field("proxy_instance"_key, o.proxy_instance)
      .field("backend"_key, o.backend)
      .field("method"_key, o.method)
      .field("path"_key, o.path)
      .field("operation"_key, o.operation)
      .optional_field("model"_key, o.model)
      .optional_field("response_model"_key, o.response_model)
      .optional_field("response_id"_key, o.response_id)
      .optional_field("upstream_request_id"_key, o.upstream_request_id);
  hex_field(w, "trace_id"_key, o.trace_id);
  hex_field(w, "span_id"_key, o.span_id);
  w.optional_field("session_id"_key, o.session_id)
      .optional_field("session_source"_key, o.session_source)
      .optional_field("turn"_key, o.turn)
      .field("stream"_key, o.stream)
      .field("usage_requested"_key, o.usage_requested)
      .field("usage_injected"_key, o.usage_injected)
      .optional_field("max_tokens"_key, o.max_tokens)
      .optional_field("http_status"_key, o.http_status)
      .field("outcome"_key, o.outcome)
      .optional_field("error_type"_key, o.error_type)
      .optional_field("error_message"_key, o.error_message)
      .optional_field("finish_reason"_key, o.finish_reason)
      .optional_field("choices"_key, o.choices)
      .optional_field("ttfb_ms"_key, o.ttfb_ms)
      .optional_field("ttft_ms"_key, o.ttft_ms)
      .optional_field("e2e_ms"_key, o.e2e_ms)
      .optional_field("tpot_ms"_key, to_millionths(tpot_ms(o)));
  std::optional<double> p50, p95, mx;
  if (!o.itl_ms.empty()) {
    // Sorted in a buffer the thread keeps: no allocation a streamed line (issue 43).
    thread_local std::vector<double> sorted;
    sorted.assign(o.itl_ms.begin(), o.itl_ms.end());
    std::sort(sorted.begin(), sorted.end());
    p50 = to_millionths(*quantile_cont_sorted(sorted, 0.5));
    p95 = to_millionths(*quantile_cont_sorted(sorted, 0.95));
    mx = sorted.back();
  }
  w.optional_field("itl_p50_ms"_key, p50).optional_field("itl_p95_ms"_key, p95).optional_field("itl_max_ms"_key, mx);
  w.optional_field("content_events"_key, o.content_events).optional_field("first_output"_key, o.first_output);
  if (o.itl_full) {
    thread_local std::string list;  // kept by the thread, as `sorted`
    list = "[";
    for (std::size_t i = 0; i < o.itl_ms.size(); ++i) {
      if (i > 0) list.push_back(',');
      append_json_number(list, o.itl_ms[i]);
    }
    list.push_back(']');
    w.raw_field("itl_ms"_key, list);
  }
  w.optional_field("prompt_tokens"_key, o.prompt_tokens)
      .optional_field("completion_tokens"_key, o.completion_tokens)
      .optional_field("total_tokens"_key, o.total_tokens)
      .optional_field("cached_prompt_tokens"_key, o.cached_prompt_tokens)
      .optional_field("reasoning_tokens"_key, o.reasoning_tokens)
      .field("token_source"_key, o.token_source)
      .optional_field("output_tokens_per_second"_key, to_millionths(output_tokens_per_second(o)))
      .optional_field("e2e_output_tokens_per_second"_key, to_millionths(e2e_output_tokens_per_second(o)))
      .field("request_bytes"_key, o.request_bytes)
      .field("response_bytes"_key, o.response_bytes)
      .field("in_flight_at_start"_key, o.in_flight_at_start)
      .optional_field("upstream_retries"_key, o.upstream_retries)
      .optional_field("timing_basis"_key, o.timing_basis)
      .optional_field("proxy_lag_ms"_key, o.proxy_lag_ms)
      .optional_field("proxy_lag_at_ms"_key, o.proxy_lag_at_ms)
      .optional_field("proxy_lag_quiet_ms"_key, o.proxy_lag_quiet_ms);
  if (o.server_timings.empty()) {
    w.null_field("server_timings"_key);
  } else {
    w.raw_field("server_timings"_key, o.server_timings);
  }
  if (o.scheduled_at_us) w.plain_field("scheduled_at"_key, Rfc3339(*o.scheduled_at_us).view());
  if (o.send_lateness_ms) w.field("send_lateness_ms"_key, *o.send_lateness_ms);
  if (!o.sweep_point.empty()) w.field("sweep_point"_key, o.sweep_point);
  if (o.warmup) w.field("warmup"_key, true);
}

}  // namespace

bool answer_cut_short(std::optional<std::string_view> finish_reason, std::optional<std::int64_t> max_tokens,
                      std::optional<std::int64_t> completion_tokens, std::string_view token_source) {
  if (!finish_reason || !max_tokens || !completion_tokens || *completion_tokens >= *max_tokens) return false;
  const bool at_limit =
      *finish_reason == "length" || *finish_reason == "max_output_tokens" || *finish_reason == "max_tokens";
  return at_limit && (token_source == "usage" || token_source == "server_timings");
}

void clear_for_reuse(Observation& o) {
  // The strings a proxy's line fills past a short string's room (the id, a host-named instance, the
  // backend's origin, the path, an engine's timings) and the gaps' list keep their buffers; the rest
  // is a new observation's. (Assigning `Observation{}` kept every string's buffer too, but cost
  // ~800 instructions a line: each of ~80 members assigned.)
  std::string id = std::move(o.observation_id), instance = std::move(o.proxy_instance), backend = std::move(o.backend),
              path = std::move(o.path), timings = std::move(o.server_timings);
  std::vector<double> gaps = std::move(o.itl_ms);
  std::destroy_at(&o);
  std::construct_at(&o);
  const auto put_back = [](std::string& to, std::string& kept) {
    kept.clear();
    to = std::move(kept);
  };
  put_back(o.observation_id, id);
  put_back(o.proxy_instance, instance);
  put_back(o.backend, backend);
  put_back(o.path, path);
  put_back(o.server_timings, timings);
  gaps.clear();
  o.itl_ms = std::move(gaps);
}

std::string render_observation(const Observation& o) {
  JsonObjectWriter w(2048);  // a streamed chat's line is about 1.5 KB: one allocation, not a dozen
  write_members(w, o);
  return std::move(w).finish_line();
}

std::size_t render_observation_into(std::string& buffer, std::size_t used, const Observation& o) {
  JsonObjectWriter w(buffer, used);
  write_members(w, o);
  return std::move(w).finish_line_in();
}

std::string render_gap(std::int64_t at_us, std::uint64_t dropped_lines) {
  JsonObjectWriter w;
  w.field("schema", kGapSchema).field("at", format_rfc3339_us(at_us)).field("dropped_lines", dropped_lines);
  return std::move(w).finish_line();
}

}  // namespace mpo::ledger
