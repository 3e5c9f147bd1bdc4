// Engine spans joined to ledger lines by W3C trace context (docs/OTEL.md "Engine spans"): for each
// request the engine's own queue, prefill and decode times beside the TTFT and e2e the client
// saw through the proxy; what is left is outside the server (the network, the proxy, the HTTP
// server's parsing and tokenization before the engine counted the request as arrived). Graded
// request-correlated, source engine-trace: the engine tied these times to this request. Pure.
//
// Only durations are compared, each measured on one machine's clock: no timestamp of one clock
// is subtracted from another's, so clock offsets between the proxy and the engine do not enter.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ledger/reader.hpp"
#include "otel/trace_file.hpp"

namespace mpo::attribution {

inline constexpr const char* kEngineTraceSchema = "modelperfobs.engine-trace-attribution.v1";

struct TracedRequest {
  std::string observation_id, trace_id, span_id, model, engine_request_id;
  std::int64_t started_at_us = 0;
  // How the engine span was found: "parent" (its parent is the proxy's span of this line) or
  // "trace" (the only engine span in the line's trace, the line carrying no span id).
  std::string match;
  std::optional<double> client_ttft_ms, client_e2e_ms;
  std::optional<double> server_queue_ms, server_prefill_ms, server_decode_ms, server_ttft_ms, server_e2e_ms;
  std::optional<double> outside_ttft_ms;  // client TTFT - server TTFT
  std::optional<double> outside_e2e_ms;   // client e2e - server e2e
};

struct PartSummary {
  std::string part;  // client_ttft, server_queue, ...
  std::size_t n = 0;
  std::optional<double> p50_ms, p95_ms;
};

// What the slowest requests' TTFT is made of: the requests at or above the client TTFT p95, their
// summed parts over their summed client TTFT.
struct TtftComposition {
  double p95_ms = 0;
  std::size_t requests = 0;
  double queue_share = 0, prefill_share = 0, outside_share = 0;
};

struct TraceJoin {
  std::vector<TracedRequest> requests;  // in ledger order
  std::uint64_t ledger_lines = 0, lines_with_trace = 0, lines_unmatched = 0;
  std::uint64_t engine_spans = 0, spans_unmatched = 0;
  std::uint64_t outside_negative = 0;  // client TTFT or e2e below the server's: a clock or a mismatch to look at
  std::vector<PartSummary> parts;
  std::optional<TtftComposition> ttft_p95;
};

TraceJoin join_engine_traces(std::span<const ledger::LedgerRecord> lines, std::span<const otel::EngineSpan> spans);

std::string render_trace_join_md(const TraceJoin& j);
// The same as one HTML <section> (the report's page embeds it).
std::string render_trace_join_html(const TraceJoin& j);
// The `result` object alone (the report embeds it as `result.engine_trace`).
std::string render_trace_join_result_json(const TraceJoin& j);
// `inputs`: a JSON object (the files read and their digests).
std::string render_trace_join_json(const TraceJoin& j, const std::string& inputs_json, std::int64_t created_at_us,
                                   std::string_view tool_version);

}  // namespace mpo::attribution
