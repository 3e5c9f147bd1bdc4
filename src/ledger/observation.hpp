// The ledger line, schema `modelperfobs.observation.v1` (contract 1: docs/ARCHITECTURE.md, docs/FORMATS.md).
// One JSON object per line, fixed key order, C-locale numbers, null for unknown.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::ledger {

inline constexpr const char* kObservationSchema = "modelperfobs.observation.v1";
inline constexpr const char* kGapSchema = "modelperfobs.ledger-gap.v1";

struct Observation {
  std::string observation_id;
  std::int64_t started_at_us = 0;  // wall clock, request head received
  std::int64_t ended_at_us = 0;
  std::string proxy_instance;
  std::string backend;
  std::string method;
  std::string path;
  std::string operation;  // chat, text_completion, responses, messages, embeddings, rerank, score, models, other
  std::optional<std::string> model, response_model, response_id, upstream_request_id;
  // W3C trace context (docs/OTEL.md): the request's trace (the client's, or one the proxy started)
  // and the proxy's span in it, the parent of the engine's spans. Kept as bytes, written as 32 and
  // 16 lowercase hex digits (text here cost two allocations a request on the proxy's loop, issue
  // 43). Proxy lines only (null in sweep lines).
  std::optional<std::array<std::uint8_t, 16>> trace_id;
  std::optional<std::array<std::uint8_t, 8>> span_id;
  // The conversation the request belongs to and its place in it (docs/FORMATS.md "Sessions"):
  // session_source says which evidence named it (header, previous_response_id, metadata.user_id,
  // user, safety_identifier); turn counts the session's requests as this proxy saw them, from 1.
  // Null when nothing names a session; user identities are written as digests, never as given.
  std::optional<std::string> session_id, session_source;
  std::optional<std::int64_t> turn;
  bool stream = false;
  bool usage_requested = false;
  bool usage_injected = false;
  // The output limit the request named (max_completion_tokens, max_tokens or max_output_tokens);
  // null when it named none. With finish_reason "length" and fewer completion tokens, something
  // other than the limit cut the answer (the engine's context).
  std::optional<std::int64_t> max_tokens;
  std::optional<int> http_status;
  std::string outcome;  // ok, http_error, upstream_unreachable, ...
  std::optional<std::string> error_type, error_message, finish_reason;
  std::optional<int> choices;
  std::optional<double> ttfb_ms, ttft_ms, e2e_ms;
  std::optional<std::int64_t> content_events;
  // What the event that set ttft_ms carried: "content", "reasoning", "tool_calls" or "refusal"
  // (a static string); null without one. An engine holds a tool call's first tokens until it has
  // parsed the function's name, so a stream whose first event is a tool call has a TTFT that
  // includes part of its decode and no tpot_ms (docs/FORMATS.md).
  std::optional<std::string_view> first_output;
  std::vector<double> itl_ms;  // gaps between content events
  bool itl_full = false;       // write the whole itl_ms list
  std::optional<std::int64_t> prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens, reasoning_tokens;
  std::string token_source = "none";
  std::uint64_t request_bytes = 0;
  std::uint64_t response_bytes = 0;
  std::int64_t in_flight_at_start = 0;
  // Proxy lines: 1 when the request was sent again on a fresh connection because the pooled one
  // was found closed before any response byte (docs/PROXY.md), else 0. Absent from sweep lines.
  std::optional<int> upstream_retries;
  // Proxy lines: what the line's times rest on, "kernel_rx" (the kernel's receive timestamps of
  // the request and of every response read) or "loop" (the event loop's clock at a read), and the
  // largest lateness of the proxy's reads on this request (kernel receive time -> read), null when
  // no read had a kernel timestamp. Absent (null) from sweep lines. docs/PROXY.md "Timestamps".
  std::optional<std::string> timing_basis;
  std::optional<double> proxy_lag_ms;
  // When the bytes of that latest read arrived, ms after started_at (they were read proxy_lag_ms
  // later); null with proxy_lag_ms.
  std::optional<double> proxy_lag_at_ms;
  // How much of that wait (when it was 1 ms or more) the proxy's loop read nothing at all, from any
  // socket: close to proxy_lag_ms when the loop was held up (descheduled, its machine paused, one
  // long step), short when it was busy with other traffic; null otherwise.
  std::optional<double> proxy_lag_quiet_ms;
  std::string server_timings;  // raw JSON, "" when none
  // Written only by `sweep` (absent from proxy lines): when the request was due, how late the
  // generator sent it, and which point of the sweep it belongs to.
  std::optional<std::int64_t> scheduled_at_us;
  std::optional<double> send_lateness_ms;
  std::string sweep_point;
  bool warmup = false;  // `sweep` lines: a warm-up request, outside every statistic (written only when true)
};

// Whether a line's (or a sample's) first_output says its first event was a tool call: that event
// dates no first token (the engine held back the tokens before the function's name), so no TTFT-based
// figure takes it (docs/FORMATS.md `first_output`). The one place the value is compared.
inline bool began_with_tool_call(std::string_view first_output) { return first_output == "tool_calls"; }
template <class Str>
bool began_with_tool_call(const std::optional<Str>& first_output) {
  return first_output && began_with_tool_call(std::string_view(*first_output));
}

// Whether an answer stopped at its length limit (finish_reason `length`, the Responses API's
// `max_output_tokens`, Anthropic's `max_tokens`) with fewer completion tokens, as the server counted
// them (usage, llama.cpp's timings; never an estimate), than the max_tokens its request named:
// something else cut it, most often the engine's context. One rule for the report and the sweep.
bool answer_cut_short(std::optional<std::string_view> finish_reason, std::optional<std::int64_t> max_tokens,
                      std::optional<std::int64_t> completion_tokens, std::string_view token_source);

// Makes `o` a new observation's (every member as `Observation{}` has it) while the strings a proxy's
// line fills past a short string's room (observation_id, proxy_instance, backend, path,
// server_timings) and itl_ms keep their buffers: the ledger's writer clears each written observation
// so that the proxy's next request fills it in place, without allocating (issue 43). Optional
// strings are reset (their null is part of the line) and so are freed.
void clear_for_reuse(Observation& o);

// Derived fields, as docs/FORMATS.md defines them; nullopt where they do not apply.
std::optional<double> tpot_ms(const Observation& o);
std::optional<double> output_tokens_per_second(const Observation& o);
std::optional<double> e2e_output_tokens_per_second(const Observation& o);

// The line, newline included.
std::string render_observation(const Observation& o);
// The same written after the first `used` bytes of `buffer`, whose bytes after those are room
// (grown as needed): lines rendered end to end without a string each. Where the line ends.
std::size_t render_observation_into(std::string& buffer, std::size_t used, const Observation& o);
// The line written once writing resumes after lines were dropped.
std::string render_gap(std::int64_t at_us, std::uint64_t dropped_lines);

}  // namespace mpo::ledger
