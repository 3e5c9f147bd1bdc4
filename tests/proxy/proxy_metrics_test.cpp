#include "proxy/proxy_metrics.hpp"

#include <gtest/gtest.h>

#include "support/metric_families.hpp"

namespace mpo::proxy {
namespace {

Histogram no_lag() { return Histogram(kLagBuckets); }

TEST(ProxyMetrics, CountsOutcomesAndObservesLatencies) {
  ProxyMetrics m;
  ledger::Observation o;
  o.model = "qwen";
  o.operation = "chat";
  o.outcome = "ok";
  o.http_status = 200;
  o.stream = true;
  o.ttft_ms = 120;
  o.e2e_ms = 520;
  o.completion_tokens = 5;
  o.prompt_tokens = 9;
  o.itl_ms = {100, 100, 100, 100};
  m.record(o);
  ledger::Observation e;
  e.outcome = "upstream_unreachable";
  e.http_status = 502;
  m.record(e);
  m.set_in_flight(3);
  const auto x = mpo::test::read_exposition(m.render({10, 2, 0}, no_lag()));
  EXPECT_EQ(
      x.find("modelperfobs_requests_total", {"model=\"qwen\"", "operation=\"chat\"", "outcome=\"ok\"", "code=\"200\""}),
      1);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"upstream_unreachable", "502"}), 1);
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight"), 3);
  const std::string qwen = "model=\"qwen\"";
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_bucket", {"le=\"0.1\"", qwen}), 0);
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_bucket", {"le=\"0.25\"", qwen, "operation=\"chat\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_inter_token_latency_seconds_count", {qwen}), 4);
  EXPECT_EQ(x.find("modelperfobs_time_per_output_token_seconds_sum", {qwen}), 0.1);
  EXPECT_EQ(x.find("modelperfobs_ledger_lines_dropped_total"), 2);
  EXPECT_EQ(x.find("modelperfobs_generation_tokens_total"), 5);
}

ledger::Observation finished(std::string model, std::string operation, double ttft_ms) {
  ledger::Observation o;
  o.model = std::move(model);
  o.operation = std::move(operation);
  o.outcome = "ok";
  o.http_status = 200;
  o.ttft_ms = ttft_ms;
  o.e2e_ms = ttft_ms + 100;
  return o;
}

// A stream whose first event was a tool call dates no first token (the engine held back the tokens
// before the function's name): its time to that event stays out of the TTFT histogram, where an alert
// would read it as a queue or a prefill, and is counted beside it.
TEST(ProxyMetrics, AStreamThatBeganWithAToolCallIsCountedNotTimedAsAFirstToken) {
  ProxyMetrics m;
  for (const char* first : {"content", "tool_calls", "tool_calls"}) {
    auto o = finished("qwen", "chat", std::string_view(first) == "content" ? 50 : 900);
    o.stream = true;
    o.first_output = first;
    m.record(o);
  }
  const auto x = mpo::test::read_exposition(m.render({3, 0, 0}, no_lag()));
  const std::string qwen = "model=\"qwen\"";
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_count", {qwen}), 1);
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_sum", {qwen}), 0.05);
  EXPECT_EQ(x.find("modelperfobs_tool_call_first_total", {qwen, "operation=\"chat\""}), 2);
  EXPECT_EQ(x.find("modelperfobs_e2e_request_latency_seconds_count", {qwen}), 3);
}

// Issue 42: latencies by model and operation, so a dashboard and alerts can tell a slow model from
// a fast one behind the same proxy; model names past the cap are one "_other" series.
TEST(ProxyMetrics, LatenciesAreSeriesPerModelAndOperationWithinTheCap) {
  ProxyMetrics m(2);
  struct Request {
    const char *model, *operation;
    double ttft_ms;
  };
  for (const Request& r :
       {Request{"fast", "chat", 50}, Request{"fast", "chat", 60}, Request{"slow", "chat", 3000},
        Request{"fast", "responses", 70}, Request{"third", "chat", 10}, Request{"fourth", "chat", 20}}) {
    m.record(finished(r.model, r.operation, r.ttft_ms));
  }
  const auto x = mpo::test::read_exposition(m.render({}, no_lag()));
  const auto count = [&](const char* model, const char* operation) {
    return x.find("modelperfobs_time_to_first_token_seconds_count",
                  {std::string("model=\"") + model + "\"", std::string("operation=\"") + operation + "\""});
  };
  EXPECT_EQ(count("fast", "chat"), 2);
  EXPECT_EQ(count("fast", "responses"), 1);
  EXPECT_EQ(count("slow", "chat"), 1);
  EXPECT_EQ(count("_other", "chat"), 2);  // the third and fourth names
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_bucket", {"model=\"slow\"", "le=\"2.5\""}), 0);
  EXPECT_EQ(
      x.find("modelperfobs_time_to_first_token_seconds_bucket", {"model=\"fast\"", "operation=\"chat\"", "le=\"0.1\""}),
      2);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"model=\"_other\"", "operation=\"chat\""}), 2);
}

// Issue 43: the last request's series are reused while its key repeats; any part of the key that
// changes (outcome, status, model, operation), back and forth, still counts in its own series.
TEST(ProxyMetrics, RequestsAlternatingInOnePartOfTheirKeyEachCountInTheirOwnSeries) {
  ProxyMetrics m;
  struct Request {
    const char *model, *operation, *outcome;
    int status;
  };
  for (const Request& r : {Request{"a", "chat", "ok", 200}, Request{"a", "chat", "http_error", 500},
                           Request{"a", "chat", "http_error", 429}, Request{"a", "chat", "http_error", 500},
                           Request{"a", "chat", "ok", 200}, Request{"a", "responses", "ok", 200},
                           Request{"b", "chat", "ok", 200}, Request{"a", "chat", "ok", 200}}) {
    auto o = finished(r.model, r.operation, 10);
    o.outcome = r.outcome;
    o.http_status = r.status;
    m.record(o);
  }
  const auto x = mpo::test::read_exposition(m.render({}, no_lag()));
  const auto requests = [&](const char* model, const char* operation, const char* code) {
    return x.find("modelperfobs_requests_total",
                  {std::string("model=\"") + model + "\"", std::string("operation=\"") + operation + "\"",
                   std::string("code=\"") + code + "\""});
  };
  EXPECT_EQ(requests("a", "chat", "200"), 3);
  EXPECT_EQ(requests("a", "chat", "500"), 2);
  EXPECT_EQ(requests("a", "chat", "429"), 1);
  EXPECT_EQ(requests("a", "responses", "200"), 1);
  EXPECT_EQ(requests("b", "chat", "200"), 1);
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_count", {"model=\"a\"", "operation=\"chat\""}), 6);
}

// Issue 42: requests in flight by model and operation, the model within the cap, the gauge back to 0
// as they end, and a fold counted once per request (by the line's record).
TEST(ProxyMetrics, InFlightByModelGoesUpAndBackDown) {
  ProxyMetrics m(1);
  const auto a = m.request_started(std::optional<std::string>("alpha"), "chat");
  const auto b = m.request_started(std::optional<std::string>("alpha"), "chat");
  const auto c = m.request_started(std::optional<std::string>("beta"), "responses");  // past the cap
  const auto d = m.request_started(std::optional<std::string>("alpha"), "responses");
  const auto e = m.request_started(std::optional<std::string>("alpha"), "chat");  // back to the first series
  auto x = mpo::test::read_exposition(m.render({}, no_lag()));
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"alpha\"", "operation=\"chat\""}), 3);
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"alpha\"", "operation=\"responses\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"_other\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_model_labels_folded_total"), 0);
  m.request_ended(a);
  m.request_ended(b);
  m.request_ended(c);
  m.request_ended(c);  // never below 0
  m.request_ended(d);
  m.request_ended(e);
  x = mpo::test::read_exposition(m.render({}, no_lag()));
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"alpha\"", "operation=\"chat\""}), 0);
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"alpha\"", "operation=\"responses\""}), 0);
  EXPECT_EQ(x.find("modelperfobs_requests_in_flight_by_model", {"model=\"_other\""}), 0);
}

TEST(ProxyMetrics, RetriesAreCountedByCauseAndEveryCauseIsExposedFromTheStart) {
  ProxyMetrics m;
  auto before = mpo::test::read_exposition(m.render({}, no_lag()));
  for (const char* cause : {"eof", "reset", "broken_pipe"}) {
    EXPECT_EQ(before.find("modelperfobs_upstream_retries_total", {std::string("cause=\"") + cause + "\""}), 0) << cause;
  }
  m.count_retry("eof");
  m.count_retry("eof");
  m.count_retry("reset");
  auto after = mpo::test::read_exposition(m.render({}, no_lag()));
  EXPECT_EQ(after.find("modelperfobs_upstream_retries_total", {"cause=\"eof\""}), 2);
  EXPECT_EQ(after.find("modelperfobs_upstream_retries_total", {"cause=\"reset\""}), 1);
  EXPECT_EQ(after.find("modelperfobs_upstream_retries_total", {"cause=\"broken_pipe\""}), 0);
}

TEST(ProxyMetrics, TheProxysLagIsAHistogramFromMicrosecondsToSeconds) {
  ProxyMetrics m;
  // Two event loops, each observing its own reads without a lock, merged when /metrics is read.
  AtomicHistogram loop0(kLagBuckets), loop1(kLagBuckets);
  loop0.observe(0.000004);  // a loop keeping up
  loop1.observe(0.0031);    // 3.1 ms late
  loop0.observe(0.4);       // stalled
  Histogram lag(kLagBuckets);
  loop0.add_to(lag);
  loop1.add_to(lag);
  const auto x = mpo::test::read_exposition(m.render({}, lag));
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_bucket", {"le=\"1e-05\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_bucket", {"le=\"0.0025\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_bucket", {"le=\"0.005\""}), 2);
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_bucket", {"le=\"0.5\""}), 3);
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_count"), 3);
  EXPECT_NEAR(*x.find("modelperfobs_proxy_lag_seconds_sum"), 0.4031040, 1e-9);
}

}  // namespace
}  // namespace mpo::proxy
