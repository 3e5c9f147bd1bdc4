// Engine spans joined to ledger lines by trace context: matched by the proxy's span as parent,
// the parts and what is left outside the server, the TTFT p95 composition, and the lines and
// spans that do not match counted.
#include "attribution/engine_trace.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace mpo::attribution {
namespace {

ledger::LedgerRecord line(std::string id, std::string trace, std::optional<std::string> span, double ttft, double e2e) {
  ledger::LedgerRecord r;
  r.observation_id = std::move(id);
  r.trace_id = std::move(trace);
  r.span_id = std::move(span);
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.outcome = "ok";
  return r;
}

otel::EngineSpan span(std::string trace, std::string parent, double queue, double prefill, double decode) {
  otel::EngineSpan s;
  s.trace_id = std::move(trace);
  s.parent_span_id = std::move(parent);
  s.queue_s = queue;
  s.prefill_s = prefill;
  s.ttft_s = queue + prefill;
  s.decode_s = decode;
  s.e2e_s = queue + prefill + decode;
  return s;
}

TEST(EngineTrace, JoinsByTheProxysSpanAndSplitsTheTimes) {
  // Two requests in one client trace (an agent's two calls): told apart by the proxy's span.
  const std::vector<ledger::LedgerRecord> lines = {
      line("a", "t1", "p1", 110, 320),
      line("b", "t1", "p2", 60, 200),
      line("c", "t2", "p3", 10, 20),  // no engine span
      line("d", "t3", std::nullopt, 30, 40),
  };
  const std::vector<otel::EngineSpan> spans = {span("t1", "p1", 0.08, 0.02, 0.2), span("t1", "p2", 0.0, 0.05, 0.1),
                                               span("t3", "zz", 0.0, 0.02, 0.01), span("t9", "p9", 0, 0, 0)};
  const auto j = join_engine_traces(lines, spans);
  ASSERT_EQ(j.requests.size(), 3u);
  EXPECT_EQ(j.lines_with_trace, 4u);
  EXPECT_EQ(j.lines_unmatched, 1u);
  EXPECT_EQ(j.spans_unmatched, 1u);
  const auto& a = j.requests[0];
  EXPECT_EQ(a.observation_id, "a");
  EXPECT_EQ(a.match, "parent");
  EXPECT_NEAR(*a.server_queue_ms, 80, 1e-9);
  EXPECT_NEAR(*a.server_prefill_ms, 20, 1e-9);
  EXPECT_NEAR(*a.outside_ttft_ms, 10, 1e-9);
  EXPECT_NEAR(*a.outside_e2e_ms, 20, 1e-9);
  EXPECT_EQ(j.requests[1].observation_id, "b");
  EXPECT_NEAR(*j.requests[1].server_prefill_ms, 50, 1e-9);
  EXPECT_EQ(j.requests[2].match, "trace");  // a line without span_id, the trace's only engine span
  EXPECT_EQ(j.outside_negative, 0u);
  // The slowest request (TTFT 110 ms) is 73% queue, 18% prefill, 9% outside.
  ASSERT_TRUE(j.ttft_p95);
  EXPECT_EQ(j.ttft_p95->requests, 1u);
  EXPECT_NEAR(j.ttft_p95->queue_share, 80.0 / 110, 1e-9);
  EXPECT_NEAR(j.ttft_p95->outside_share, 10.0 / 110, 1e-9);
  const auto md = render_trace_join_md(j);
  EXPECT_NE(md.find("73% is queue on the server"), std::string::npos) << md;
  EXPECT_NE(md.find("3 of 4 ledger lines joined"), std::string::npos) << md;
}

TEST(EngineTrace, AClientTimeBelowTheServersIsFlaggedNotHidden) {
  const std::vector<ledger::LedgerRecord> lines = {line("a", "t1", "p1", 50, 300)};
  const std::vector<otel::EngineSpan> spans = {span("t1", "p1", 0.05, 0.02, 0.2)};
  const auto j = join_engine_traces(lines, spans);
  EXPECT_EQ(j.outside_negative, 1u);
  const auto doc = boost::json::parse(render_trace_join_json(j, "{}", 0, "0.0.0-test"));
  EXPECT_EQ(doc.at("schema"), kEngineTraceSchema);
  EXPECT_EQ(doc.at("tool").at("name"), "modelperfobs");  // contract 3's envelope, as every receipt
  EXPECT_EQ(doc.at("tool").at("version"), "0.0.0-test");
  EXPECT_EQ(doc.at("validity").at("valid"), false);
  EXPECT_EQ(doc.at("validity").at("reasons").at(0), "client_time_below_server_time");
  const auto& r = doc.at("result").at("requests").at(0);
  EXPECT_EQ(r.at("grade"), "request-correlated");
  EXPECT_EQ(r.at("correlation_source"), "engine-trace");
  EXPECT_LT(r.at("outside_ttft_ms").to_number<double>(), 0);
}

// A stream whose first event was a tool call: the engine sent it after the tokens before the
// function's name (ledger `first_output`), so the line's TTFT is not the server's first token plus
// what lies outside the engine; only e2e is set against the server's.
TEST(EngineTrace, AToolCallFirstSetsOnlyE2eAgainstTheServer) {
  std::vector<ledger::LedgerRecord> lines = {line("a", "t1", "p1", 150, 320)};
  lines[0].first_output = "tool_calls";
  const std::vector<otel::EngineSpan> spans = {span("t1", "p1", 0.0, 0.02, 0.29)};
  const auto j = join_engine_traces(lines, spans);
  ASSERT_EQ(j.requests.size(), 1u);
  EXPECT_FALSE(j.requests[0].client_ttft_ms.has_value());
  EXPECT_FALSE(j.requests[0].outside_ttft_ms.has_value());  // not 130 ms "outside the engine"
  EXPECT_NEAR(*j.requests[0].outside_e2e_ms, 10, 1e-9);
  lines[0].first_output = "content";
  EXPECT_NEAR(*join_engine_traces(lines, spans).requests[0].outside_ttft_ms, 130, 1e-9);
}

TEST(EngineTrace, NothingToJoinSaysWhy) {
  const std::vector<ledger::LedgerRecord> lines = {line("a", "t1", "p1", 50, 300)};
  const auto j = join_engine_traces(lines, {});
  EXPECT_TRUE(j.requests.empty());
  EXPECT_NE(render_trace_join_md(j).find("--otlp-traces-endpoint"), std::string::npos);
  ledger::LedgerRecord old;
  old.observation_id = "x";
  const std::vector<ledger::LedgerRecord> untraced = {old};
  EXPECT_NE(render_trace_join_md(join_engine_traces(untraced, {})).find("No ledger line carries a trace_id"),
            std::string::npos);
}

}  // namespace
}  // namespace mpo::attribution
