// The implementation of attribution/engine_trace.hpp. Engine spans joined to ledger lines by W3C
// trace context (docs/OTEL.md "Engine spans"): for each request the engine's own queue, prefill and
// decode times beside the TTFT and e2e the client saw through the proxy; what is left is outside
// the server (the network, the proxy, the HTTP server's parsing and tokenization before the engine
// counted the request as arrived).
#include "attribution/engine_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/envelope.hpp"
#include "core/json.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "ledger/observation.hpp"
#include "present/page.hpp"

namespace mpo::attribution {
namespace {

std::optional<double> ms(const std::optional<double>& seconds) {
  return seconds ? std::optional<double>(*seconds * 1000.0) : std::nullopt;
}

std::optional<double> minus(const std::optional<double>& a, const std::optional<double>& b) {
  return a && b ? std::optional<double>(*a - *b) : std::nullopt;
}

PartSummary summarize_part(std::string part, const std::vector<TracedRequest>& rs,
                           std::optional<double> TracedRequest::*field) {
  std::vector<double> v;
  for (const auto& r : rs) {
    if (r.*field) v.push_back(*(r.*field));
  }
  PartSummary s{std::move(part), v.size(), std::nullopt, std::nullopt};
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.p50_ms = *quantile_cont_sorted(v, 0.5);
  s.p95_ms = *quantile_cont_sorted(v, 0.95);
  return s;
}

std::optional<TtftComposition> compose_ttft(const std::vector<TracedRequest>& rs) {
  std::vector<double> ttft;
  for (const auto& r : rs) {
    if (r.client_ttft_ms && r.server_queue_ms && r.server_prefill_ms && r.outside_ttft_ms)
      ttft.push_back(*r.client_ttft_ms);
  }
  if (ttft.empty()) return std::nullopt;
  std::sort(ttft.begin(), ttft.end());
  TtftComposition c;
  c.p95_ms = *quantile_cont_sorted(ttft, 0.95);
  double total = 0, queue = 0, prefill = 0, outside = 0;
  for (const auto& r : rs) {
    if (!r.client_ttft_ms || !r.server_queue_ms || !r.server_prefill_ms || !r.outside_ttft_ms) continue;
    if (*r.client_ttft_ms < c.p95_ms) continue;
    ++c.requests;
    total += *r.client_ttft_ms;
    queue += *r.server_queue_ms;
    prefill += *r.server_prefill_ms;
    outside += *r.outside_ttft_ms;
  }
  if (c.requests == 0 || total <= 0) return std::nullopt;
  c.queue_share = queue / total;
  c.prefill_share = prefill / total;
  c.outside_share = outside / total;
  return c;
}

std::string opt_ms(const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : "-"; }

const std::map<std::string, std::string>& part_labels() {
  static const std::map<std::string, std::string> kLabels = {
      {"client_ttft", "client TTFT (through the proxy)"},
      {"server_queue", "server queue"},
      {"server_prefill", "server prefill"},
      {"server_ttft", "server TTFT"},
      {"outside_ttft", "TTFT outside the server (network, proxy, HTTP server)"},
      {"server_decode", "server decode"},
      {"client_e2e", "client e2e"},
      {"server_e2e", "server e2e"},
      {"outside_e2e", "e2e outside the server"}};
  return kLabels;
}

std::string joined_sentence(const TraceJoin& j) {
  return fmt::format(
      "{} of {} ledger lines joined to an engine span by trace id ({} lines carry trace context, {} of them have no "
      "engine span); {} engine spans, {} without a ledger line.",
      j.requests.size(), j.ledger_lines, j.lines_with_trace, j.lines_unmatched, j.engine_spans, j.spans_unmatched);
}

std::string composition_sentence(const TtftComposition& c) {
  return fmt::format(
      "TTFT p95 is {:.1f} ms: over the {} request(s) at or above it, {:.0f}% is queue on the server, {:.0f}% "
      "prefill, {:.0f}% outside the server.",
      c.p95_ms, c.requests, c.queue_share * 100, c.prefill_share * 100, c.outside_share * 100);
}

}  // namespace

TraceJoin join_engine_traces(std::span<const ledger::LedgerRecord> lines, std::span<const otel::EngineSpan> spans) {
  TraceJoin j;
  j.ledger_lines = lines.size();
  j.engine_spans = spans.size();
  std::map<std::pair<std::string, std::string>, const otel::EngineSpan*> by_parent;
  std::map<std::string, std::vector<const otel::EngineSpan*>> by_trace;
  for (const auto& s : spans) {
    by_parent[{s.trace_id, s.parent_span_id}] = &s;
    by_trace[s.trace_id].push_back(&s);
  }
  std::size_t matched_spans = 0;
  for (const auto& l : lines) {
    if (!l.trace_id) continue;
    ++j.lines_with_trace;
    const otel::EngineSpan* s = nullptr;
    std::string match;
    if (l.span_id) {
      if (auto it = by_parent.find({*l.trace_id, *l.span_id}); it != by_parent.end()) s = it->second, match = "parent";
    } else if (auto it = by_trace.find(*l.trace_id); it != by_trace.end() && it->second.size() == 1) {
      s = it->second.front();
      match = "trace";
    }
    if (s == nullptr) {
      ++j.lines_unmatched;
      continue;
    }
    ++matched_spans;
    TracedRequest r;
    r.observation_id = l.observation_id;
    r.trace_id = *l.trace_id;
    r.span_id = l.span_id.value_or("");
    r.model = l.model.value_or("");
    r.engine_request_id = s->request_id;
    r.started_at_us = l.started_at_us;
    r.match = std::move(match);
    // A first event that was a tool call dates no first token (the engine held back the tokens
    // before the function's name): no client TTFT to set against the server's.
    if (!ledger::began_with_tool_call(l.first_output)) r.client_ttft_ms = l.ttft_ms;
    r.client_e2e_ms = l.e2e_ms;
    r.server_queue_ms = ms(s->queue_s);
    r.server_prefill_ms = ms(s->prefill_s);
    r.server_decode_ms = ms(s->decode_s);
    r.server_ttft_ms = ms(s->ttft_s);
    r.server_e2e_ms = ms(s->e2e_s);
    r.outside_ttft_ms = minus(r.client_ttft_ms, r.server_ttft_ms);
    r.outside_e2e_ms = minus(r.client_e2e_ms, r.server_e2e_ms);
    if ((r.outside_ttft_ms && *r.outside_ttft_ms < 0) || (r.outside_e2e_ms && *r.outside_e2e_ms < 0)) {
      ++j.outside_negative;
    }
    j.requests.push_back(std::move(r));
  }
  j.spans_unmatched = spans.size() - matched_spans;
  const auto& rs = j.requests;
  j.parts = {summarize_part("client_ttft", rs, &TracedRequest::client_ttft_ms),
             summarize_part("server_queue", rs, &TracedRequest::server_queue_ms),
             summarize_part("server_prefill", rs, &TracedRequest::server_prefill_ms),
             summarize_part("server_ttft", rs, &TracedRequest::server_ttft_ms),
             summarize_part("outside_ttft", rs, &TracedRequest::outside_ttft_ms),
             summarize_part("server_decode", rs, &TracedRequest::server_decode_ms),
             summarize_part("client_e2e", rs, &TracedRequest::client_e2e_ms),
             summarize_part("server_e2e", rs, &TracedRequest::server_e2e_ms),
             summarize_part("outside_e2e", rs, &TracedRequest::outside_e2e_ms)};
  j.ttft_p95 = compose_ttft(rs);
  return j;
}

std::string render_trace_join_md(const TraceJoin& j) {
  const auto& labels = part_labels();
  std::string out = "## Engine spans joined to requests (request-correlated, source engine-trace)\n\n";
  out += joined_sentence(j) + "\n\n";
  if (j.requests.empty()) {
    out += j.lines_with_trace == 0
               ? "No ledger line carries a trace_id: record the ledger with a proxy that forwards trace context "
                 "(this version's does).\n"
               : "No engine span matched: was the engine run with tracing on (vLLM --otlp-traces-endpoint) and "
                 "exporting to the collector that wrote this file?\n";
    return out;
  }
  if (j.ttft_p95) out += composition_sentence(*j.ttft_p95) + "\n\n";
  if (j.outside_negative > 0) {
    out += fmt::format(
        "Note: {} request(s) show a client time below the server's (negative time outside the server): a span "
        "matched to the wrong request, or an engine that counts its times differently. Look at those before "
        "trusting the split.\n\n",
        j.outside_negative);
  }
  out += "| part | requests | p50 ms | p95 ms |\n|---|---:|---:|---:|\n";
  for (const auto& p : j.parts) {
    out += fmt::format("| {} | {} | {} | {} |\n", labels.at(p.part), p.n, opt_ms(p.p50_ms), opt_ms(p.p95_ms));
  }
  out += "\nSlowest requests by client TTFT:\n\n";
  out +=
      "| observation_id | client TTFT ms | queue ms | prefill ms | outside ms | client e2e ms | server e2e ms |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n";
  std::vector<const TracedRequest*> slow;
  for (const auto& r : j.requests) slow.push_back(&r);
  std::stable_sort(slow.begin(), slow.end(), [](const TracedRequest* a, const TracedRequest* b) {
    return a->client_ttft_ms.value_or(-1) > b->client_ttft_ms.value_or(-1);
  });
  for (std::size_t i = 0; i < slow.size() && i < 10; ++i) {
    const auto& r = *slow[i];
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", r.observation_id, opt_ms(r.client_ttft_ms),
                       opt_ms(r.server_queue_ms), opt_ms(r.server_prefill_ms), opt_ms(r.outside_ttft_ms),
                       opt_ms(r.client_e2e_ms), opt_ms(r.server_e2e_ms));
  }
  return out;
}

std::string render_trace_join_html(const TraceJoin& j) {
  // The body of the report page's "Engine traces" section (present::Page gives it its heading).
  std::string out = present::paragraph(joined_sentence(j) + " Graded request-correlated, source engine-trace.");
  if (j.ttft_p95) out += present::paragraph(composition_sentence(*j.ttft_p95), "verdict-line");
  if (j.outside_negative > 0) {
    out += present::paragraph(
        fmt::format("{} request(s) show a client time below the server's: look at them before trusting the split.",
                    j.outside_negative));
  }
  if (!j.requests.empty()) {
    present::Table t({"TTFT part, from the engine's spans", "requests", "p50 ms", "p95 ms"});
    for (const auto& p : j.parts)
      t.row({part_labels().at(p.part), std::to_string(p.n), opt_ms(p.p50_ms), opt_ms(p.p95_ms)});
    out += t.html("engine-parts");
  }
  return out;
}

namespace {

// A joined request's times (milliseconds, absent when unknown) and the join's counts, in the order
// docs/FORMATS.md lists them.
using R = TracedRequest;
constexpr std::pair<const char*, std::optional<double> R::*> kRequestTimes[] = {
    {"client_ttft_ms", &R::client_ttft_ms},     {"client_e2e_ms", &R::client_e2e_ms},
    {"server_queue_ms", &R::server_queue_ms},   {"server_prefill_ms", &R::server_prefill_ms},
    {"server_decode_ms", &R::server_decode_ms}, {"server_ttft_ms", &R::server_ttft_ms},
    {"server_e2e_ms", &R::server_e2e_ms},       {"outside_ttft_ms", &R::outside_ttft_ms},
    {"outside_e2e_ms", &R::outside_e2e_ms}};
constexpr std::pair<const char*, std::uint64_t TraceJoin::*> kJoinCounts[] = {
    {"ledger_lines", &TraceJoin::ledger_lines},       {"lines_with_trace", &TraceJoin::lines_with_trace},
    {"lines_unmatched", &TraceJoin::lines_unmatched}, {"engine_spans", &TraceJoin::engine_spans},
    {"spans_unmatched", &TraceJoin::spans_unmatched}, {"outside_negative", &TraceJoin::outside_negative}};

}  // namespace

std::string render_trace_join_result_json(const TraceJoin& j) {
  std::string requests = "[";
  for (std::size_t i = 0; i < j.requests.size(); ++i) {
    const auto& r = j.requests[i];
    if (i > 0) requests += ',';
    JsonObjectWriter w;
    w.field("observation_id", r.observation_id)
        .field("trace_id", r.trace_id)
        .field("span_id", r.span_id)
        .field("model", r.model)
        .field("engine_request_id", r.engine_request_id)
        .field("started_at", format_rfc3339_us(r.started_at_us))
        .field("grade", "request-correlated")
        .field("correlation_source", "engine-trace")
        .field("match", r.match);
    for (const auto& [name, ms] : kRequestTimes) w.optional_field(name, r.*ms);
    requests += std::move(w).finish();
  }
  requests += ']';
  std::string parts = "{";
  for (std::size_t i = 0; i < j.parts.size(); ++i) {
    const auto& p = j.parts[i];
    if (i > 0) parts += ',';
    append_json_string(parts, p.part);
    JsonObjectWriter w;
    w.field("requests", static_cast<std::uint64_t>(p.n))
        .optional_field("p50_ms", p.p50_ms)
        .optional_field("p95_ms", p.p95_ms);
    parts += ':' + std::move(w).finish();
  }
  parts += '}';
  JsonObjectWriter result;
  for (const auto& [name, count] : kJoinCounts) result.field(name, j.*count);
  result.raw_field("parts", parts);
  if (j.ttft_p95) {
    JsonObjectWriter c;
    c.field("p95_ms", j.ttft_p95->p95_ms)
        .field("requests", static_cast<std::uint64_t>(j.ttft_p95->requests))
        .field("queue_share", j.ttft_p95->queue_share)
        .field("prefill_share", j.ttft_p95->prefill_share)
        .field("outside_share", j.ttft_p95->outside_share);
    result.raw_field("ttft_p95_composition", std::move(c).finish());
  }
  result.raw_field("requests", requests);
  return std::move(result).finish();
}

std::string render_trace_join_json(const TraceJoin& j, const std::string& inputs_json, std::int64_t created_at_us,
                                   std::string_view tool_version) {
  std::vector<std::string> reasons;
  if (j.requests.empty()) reasons.push_back("no_request_joined");
  if (j.outside_negative > 0) reasons.push_back("client_time_below_server_time");
  JsonObjectWriter doc;
  put_envelope_head(doc, kEngineTraceSchema, created_at_us, tool_version);
  doc.raw_field("inputs", inputs_json)
      .raw_field("result", render_trace_join_result_json(j))
      .raw_field("validity", validity_json({reasons.empty(), reasons, {}}));
  return std::move(doc).finish() + "\n";
}

}  // namespace mpo::attribution
