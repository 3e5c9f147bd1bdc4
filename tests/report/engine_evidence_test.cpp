// The ranking from the engine's own evidence (docs/REPORT.md "Evidence from the engine"):
// llama.cpp's timings on the lines, vLLM's spans, the engine's scraped gauges and histograms.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "report/analysis.hpp"
#include "report/ranking.hpp"
#include "report/records.hpp"
#include "report/render.hpp"
#include "support/fixtures.hpp"

namespace mpo::report {
namespace {

using test_lines::candidate;
using test_lines::llamacpp;
using test_lines::rec;

TEST(RankingFromEngineEvidence, ClientsBeyondTheSlotsAreQueueingNeverTransport) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 32; ++i) rs.push_back(llamacpp(i, i % 8 < 5 ? 1200 : 2, 350, 300, 4 + i % 5));
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.engine_split.has_value());
  EXPECT_EQ(g.engine_split->head_rule, "slot_start");
  EXPECT_EQ(g.engine_split->n, 32u);
  EXPECT_EQ(g.ranking.front().name, "queueing");
  EXPECT_NEAR(g.ranking.front().score, 1201.9 / 500, 0.01);
  EXPECT_NE(g.ranking.front().evidence.front().find("llama.cpp timings.prompt_ms: 1201.9 ms of the"), std::string::npos)
      << g.ranking.front().evidence.front();
  const auto& transport = candidate(g, "transport");
  EXPECT_EQ(transport.score, 0);
  EXPECT_NE(transport.evidence.front().find("not identifiable: the response head came when the engine's slot started"),
            std::string::npos)
      << transport.evidence.front();
  EXPECT_LT(candidate(g, "prefill").score, 1);
  // The report's JSON carries the split.
  ReportInput in;
  in.groups = {g};
  EXPECT_NE(render_json(in).find(R"("head_rule":"slot_start")"), std::string::npos);
}

// CI, stop 45: six requests on two slots of the simulator (its head on accept, as vLLM's HTTP
// layer) on a loaded machine: TTFB 3-9 ms, two requests served at once, four queued 100-205 ms.
// The rule compared the median of TTFT - TTFB with the wait's median plus the prefill's: medians
// of different requests, 5.5 ms apart, past the 5 ms tolerance, so no rule. Per request the head
// plainly left before the wait.
TEST(RankingFromEngineEvidence, HeadOnAcceptIsToldPerRequestNotFromMediansOfDifferentRequests) {
  const double ttfb[] = {3, 4, 5, 6, 7, 9}, wait[] = {5, 6, 100, 110, 200, 205};
  std::vector<EngineTimes> times;
  for (int i = 0; i < 6; ++i) {
    EngineTimes t;
    t.prefill_ms = 12.6;
    t.ttft_ms = wait[i] + t.prefill_ms;
    t.ttfb_ms = ttfb[i];
    times.push_back(t);
  }
  auto e = engine_split_of(times, 6, "spans");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->head_rule, "on_accept");
  // A head that left halfway through the wait is neither at accept nor at slot start: no rule.
  for (int i = 0; i < 6; ++i) times[i].ttfb_ms = wait[i] / 2;
  e = engine_split_of(times, 6, "spans");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->head_rule, "");
  // A head at slot start stays slot_start.
  for (int i = 0; i < 6; ++i) times[i].ttfb_ms = wait[i] + 0.5;
  EXPECT_EQ(engine_split_of(times, 6, "spans")->head_rule, "slot_start");
}

// llama.cpp b10309, one client on two slots (thirty-ninth session): 25 ms p50 passed before the
// prompt of requests that had no slot to wait for, the engine's own work (its log: the prompt began
// 18 ms after a slot took the request). The requests alone at the proxy until their first token say
// how much that is, apart from the wait for a slot of those that came with others.
TEST(RankingFromEngineEvidence, TheWaitOfRequestsAloneUntilTheirFirstTokenIsTheEnginesOwnWork) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 12; ++i) rs.push_back(llamacpp(i, i < 4 ? 20 : 900, 300, 300, i < 4 ? 0 : 1 + i % 3));
  // Started with nothing in flight, but the next request came during its wait (a burst's first at
  // the proxy, as in the np2_c1-4 capture, where the engine served one that came later first and it
  // waited 986 ms): not alone.
  rs[4].in_flight_at_start = 0;
  // Started with nothing in flight and another started the same microsecond: not alone either.
  auto twin = llamacpp(0, 20, 300, 300, 1);
  twin.started_at_us = rs[3].started_at_us;
  rs.push_back(twin);
  rs.push_back(llamacpp(12, 20, 300, 300, 0));  // alone again: 4 of them, rs[3] no longer
  auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.engine_split.has_value());
  ASSERT_TRUE(g.engine_split->alone_wait_ms.has_value());
  EXPECT_EQ(g.engine_split->alone_wait_ms->n, 4u);
  EXPECT_NEAR(g.engine_split->alone_wait_ms->p50, 21.9, 0.01);
  EXPECT_NEAR(g.engine_split->wait_ms.p50, 901.9, 0.01);
  const auto& queueing = candidate(g, "queueing");
  EXPECT_NE(queueing.evidence.front().find("the engine's own work before the prompt"), std::string::npos)
      << queueing.evidence.front();
  EXPECT_NE(queueing.evidence.front().find("the 4 that were the only request in flight at this proxy until their "
                                           "first token waited 21.9 ms p50"),
            std::string::npos)
      << queueing.evidence.front();
  ReportInput in;
  in.groups = {g};
  EXPECT_NE(render_json(in).find(R"("alone_wait_ms":{"n":4,)"), std::string::npos);
  // Fewer than three alone say nothing of it: two requests are no measure of the engine's own work.
  rs[1].in_flight_at_start = 1;
  rs[2].in_flight_at_start = 2;
  g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.engine_split.has_value());
  EXPECT_FALSE(g.engine_split->alone_wait_ms.has_value());
  EXPECT_EQ(candidate(g, "queueing").evidence.front().find("the only request in flight"), std::string::npos);
  in.groups = {g};
  EXPECT_EQ(render_json(in).find("alone_wait_ms"), std::string::npos);
  // When every request was alone the wait is said to be all of that kind, once.
  rs.clear();
  for (int i = 0; i < 5; ++i) rs.push_back(llamacpp(i, 20, 300, 300, 0));
  g = analyse(rs, {}).at(0);
  EXPECT_NE(candidate(g, "queueing").evidence.front().find("every one was the only request in flight at this proxy"),
            std::string::npos)
      << candidate(g, "queueing").evidence.front();
}

// One client on one slot cannot wait: long prompts are prefill, and queueing does not cross (it
// did, at 1.1, from the client-side estimate alone).
TEST(RankingFromEngineEvidence, OneClientWithLongPromptsIsPrefillAndNotQueueing) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 10; ++i) rs.push_back(llamacpp(i, 3, 1600, 1000, 0));
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.ranking.front().name, "prefill");
  EXPECT_NEAR(g.ranking.front().score, 1600.0 / 500, 0.01);
  const auto& queueing = candidate(g, "queueing");
  EXPECT_LT(queueing.score, 0.1);
  ASSERT_GE(queueing.evidence.size(), 2u);
  EXPECT_NE(queueing.evidence[1].find("it disagrees with the engine's own numbers"), std::string::npos)
      << queueing.evidence[1];
  EXPECT_LT(candidate(g, "transport").score, 1);
}

// An idle engine, one client, short prompts: nothing crosses.
TEST(RankingFromEngineEvidence, AnIdleEngineCrossesNothing) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 10; ++i) rs.push_back(llamacpp(i, 1, 20, 40, 0));
  const auto g = analyse(rs, {}).at(0);
  for (const auto& c : g.ranking) {
    if (c.name != "workload") {
      EXPECT_LT(c.score, 1) << c.name;
    }
  }
}

// A vLLM-like engine without per-request times: one client, prompts of 800 tokens prefilled at 500
// tok/s (TTFT 1.6 s). The client-side estimate (1,000 tok/s) calls 0.75 s of it queueing.
std::vector<ledger::LedgerRecord> slow_prefill_lines() {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 10; ++i) {
    auto r = rec(i * 2000, 1700, 1600, 800, 0);
    r.ttfb_ms = 2;
    r.tpot_ms = 10;
    rs.push_back(r);
  }
  return rs;
}

EngineEvidence scraped(double waiting_max, std::optional<EngineQueueTime> queue_time) {
  EngineEvidence e;
  e.window = "20.0 s between scrapes 1 and 401";
  e.engine = "vllm";
  e.waiting = EngineGauge{"vllm:num_requests_waiting", 401, waiting_max, waiting_max / 2, waiting_max > 0 ? 0.5 : 0};
  e.running = EngineGauge{"vllm:num_requests_running", 401, 1, 0.8, 0.8};
  e.queue_time = std::move(queue_time);
  return e;
}

// Issue 37: the engine's own queue-time histogram over the window decides queueing where no line
// carries a per-request split; the client-side estimate is said beside it.
TEST(RankingFromEngineEvidence, TheEnginesQueueTimeHistogramDecidesQueueing) {
  Options opts;
  EXPECT_GE(candidate(analyse(slow_prefill_lines(), opts).at(0), "queueing").score, 1);  // the estimate alone
  opts.engine = scraped(0, EngineQueueTime{"vllm:request_queue_time_seconds", 10, 0.4, std::pair(0.0, 300.0)});
  auto g = analyse(slow_prefill_lines(), opts).at(0);
  EXPECT_EQ(g.ranking.front().name, "prefill");
  const auto& q = candidate(g, "queueing");
  EXPECT_NEAR(q.score, 0.4 / 500, 1e-9);
  EXPECT_NE(q.evidence[0].find("the engine's queue-time histogram (vllm:request_queue_time_seconds) over 20.0 s "
                               "between scrapes 1 and 401: the 10 requests it finished waited 0.4 ms on average"),
            std::string::npos)
      << q.evidence[0];
  EXPECT_NE(q.evidence[1].find("disagrees with the engine's own numbers"), std::string::npos) << q.evidence[1];
  EXPECT_NE(q.evidence[2].find("was 0 in all 401 scrapes"), std::string::npos) << q.evidence[2];
  // Waits the engine measured cross on its own numbers.
  opts.engine = scraped(4, EngineQueueTime{"vllm:request_queue_time_seconds", 10, 1500, std::pair(1000.0, 1500.0)});
  g = analyse(slow_prefill_lines(), opts).at(0);
  EXPECT_NEAR(candidate(g, "queueing").score, 3.0, 1e-9);
  EXPECT_NE(candidate(g, "queueing").evidence[2].find("max 4, time-weighted mean 2.00, above zero 50% of the time"),
            std::string::npos);
}

// A vLLM run whose load came and went: 12 of the 40 requests the engine finished waited past its
// 0.5 s bucket, a mean of 300 ms. Queueing does not cross on the mean; the requests past the bound
// are named beside the verdict, engine-wide, and the JSON carries the histogram's figures.
TEST(RankingFromEngineEvidence, TheEnginesQueueTimeHistogramNamesAQueueAtTimes) {
  Options opts;
  EngineQueueTime q{"vllm:request_queue_time_seconds", 40, 300, std::pair(0.0, 300.0), 12, 500};
  q.window = "20.0 s between scrapes 1 and 401";
  opts.engine = scraped(4, q);
  const auto g = analyse(slow_prefill_lines(), opts).at(0);
  const auto& queueing = candidate(g, "queueing");
  EXPECT_NEAR(queueing.score, 300.0 / 500, 1e-9);
  EXPECT_EQ(queueing.evidence[1],
            "a queue at times: 12 of those 40 requests waited more than 500 ms in the engine's queue");
  ReportInput in;
  in.groups = {g};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("**Queue at times**: 12 of the 40 requests the engine finished over 20.0 s between scrapes 1 and "
                    "401 waited more than 500 ms in its queue (vllm:request_queue_time_seconds, engine-wide"),
            std::string::npos)
      << md;
  EXPECT_NE(render_json(in).find(R"("engine_queue_time":{"source":"vllm:request_queue_time_seconds","window":)"),
            std::string::npos);
  // Too few past the bound: nothing beside the verdict.
  q.over = 2;
  opts.engine = scraped(4, q);
  in.groups = {analyse(slow_prefill_lines(), opts).at(0)};
  EXPECT_EQ(render_markdown(in).find("Queue at times"), std::string::npos);
}

// With only the waiting gauge (no queue-time histogram: llama.cpp without timings on the lines, TGI
// without its histogram scraped), a gauge at zero in every scrape holds the estimate below its
// threshold and says why.
TEST(RankingFromEngineEvidence, AWaitingGaugeAtZeroHoldsTheEstimateBelowItsThreshold) {
  Options opts;
  opts.engine = scraped(0, std::nullopt);
  auto g = analyse(slow_prefill_lines(), opts).at(0);
  const auto& q = candidate(g, "queueing");
  EXPECT_LT(q.score, 1);
  EXPECT_EQ(g.ranking.front().name, "prefill");
  EXPECT_NE(q.evidence.back().find("concurrency at this proxy did not vary"), std::string::npos);
  bool held = false;
  for (const auto& e : q.evidence) held = held || e.find("queueing is held below its threshold") != std::string::npos;
  EXPECT_TRUE(held);
  // A gauge that saw requests waiting does not hold it.
  opts.engine = scraped(3, std::nullopt);
  EXPECT_GE(candidate(analyse(slow_prefill_lines(), opts).at(0), "queueing").score, 1);
}

// vLLM's spans joined to the lines (report --traces): the engine's own queue decides queueing and
// what lies outside the engine (client TTFT - engine TTFT) makes transport identifiable.
TEST(RankingFromEngineEvidence, SpansSplitTheWaitIntoTheEnginesQueueAndWhatLiesOutsideIt) {
  auto rs = slow_prefill_lines();
  Options opts;
  opts.traced_source = "vLLM spans";
  for (int i = 0; i < 10; ++i) {
    // 600 ms of the 1.6 s TTFT in the engine's queue, 1,000 ms prefill, the rest outside it.
    opts.traced["m"].push_back(EngineTimes{1600, 1000 - 0.5 * i, 2.0, 600.0 - i, 0.5 + 1.5 * i});
  }
  auto g = analyse(rs, opts).at(0);
  ASSERT_TRUE(g.engine_split.has_value());
  EXPECT_EQ(g.engine_split->source, "vLLM spans");
  ASSERT_TRUE(g.engine_split->queue_ms && g.engine_split->outside_ms);
  const auto& q = candidate(g, "queueing");
  EXPECT_NEAR(q.score, 595.5 / 500, 1e-9);
  EXPECT_NE(q.evidence[0].find("vLLM spans: the engine held the request in its queue 595.5 ms"), std::string::npos)
      << q.evidence[0];
  const auto& t = candidate(g, "transport");
  EXPECT_NEAR(t.score, 7.25 / 200, 1e-9);
  EXPECT_NE(t.evidence[0].find("7.2 ms of TTFT (p50; p90"), std::string::npos) << t.evidence[0];
  EXPECT_NEAR(candidate(g, "prefill").score, 997.75 / 500, 1e-9);
  // Outside the engine for long: transport crosses on the engine's evidence.
  for (auto& e : opts.traced["m"]) e.outside_ms = 450;
  EXPECT_NEAR(candidate(analyse(rs, opts).at(0), "transport").score, 2.25, 1e-9);
  // Lines of another group are not split from this group's spans.
  opts.traced.clear();
  opts.traced["other"].push_back(EngineTimes{1600, 1000, 2.0, 600.0, 0.5});
  EXPECT_FALSE(analyse(rs, opts).at(0).engine_split.has_value());
}

// Issue 37: with the head at slot start, the generating requests cannot separate the network from
// the wait; calls that generate nothing (GET /v1/models) can: their head's time bounds transport.
TEST(RankingFromEngineEvidence, CallsThatGenerateNothingBoundTransport) {
  auto with_models = [](double models_ttfb_ms, int calls) {
    std::vector<ledger::LedgerRecord> rs;
    for (int i = 0; i < 16; ++i) rs.push_back(llamacpp(i, i % 4 ? 1200 : 2, 350, 300, 4));
    for (int i = 0; i < calls; ++i) {
      auto m = rec(20000 + i * 10, models_ttfb_ms + 0.5, std::nullopt, 0, 0);
      m.operation = "models";
      m.model.reset();
      m.ttfb_ms = models_ttfb_ms + 0.1 * i;
      rs.push_back(m);
    }
    return analyse(rows_from(rs, GroupBy::kModel), {}).at(0);
  };
  auto g = with_models(0.4, 5);
  auto t = candidate(g, "transport");
  EXPECT_NEAR(t.score, 0.6 / 200, 1e-9);
  EXPECT_NE(t.evidence.back().find("calls that generate nothing (models, 5 of them) got their response head in 0.6 ms"),
            std::string::npos)
      << t.evidence.back();
  // A slow network shows in them, and transport crosses.
  g = with_models(400, 5);
  EXPECT_NEAR(candidate(g, "transport").score, 400.2 / 200, 1e-9);
  EXPECT_EQ(g.ranking.front().name, "queueing");
  EXPECT_EQ(g.ranking[1].name, "transport");
  // Two calls are too few to say.
  EXPECT_EQ(candidate(with_models(400, 2), "transport").score, 0);
}

TEST(RankingFromEngineEvidence, TheEnginesPrefillTimeIsReadFromItsTimings) {
  EXPECT_FLOAT_EQ(*timings_prompt_ms(R"({"cache_n":9,"prompt_n":1,"prompt_ms":0.32,"predicted_n":6})"), 0.32f);
  EXPECT_FALSE(timings_prompt_ms(R"({"predicted_n":6})").has_value());
  EXPECT_FALSE(timings_prompt_ms(R"({"prompt_ms":"x"})").has_value());
  EXPECT_FALSE(timings_prompt_ms(R"({"prompt_ms":-1})").has_value());
  EXPECT_FLOAT_EQ(*timings_ms(R"({"prompt_ms":0.32,"predicted_n":6,"predicted_ms":31.5})", "\"predicted_ms\":"), 31.5f);
}

// Clients that do not stream (an agent's tool calls, a batch job): six of them on llama.cpp's two
// slots (captured from the real b10309 server through the proxy, tests/fixtures/SOURCES.md). The
// proxy measures no TTFT or TPOT, and the report said "not_enough_evidence: turn on streaming"
// with the engine's waiting gauge at 4. llama.cpp's timings on every line stand in: the engine
// began decoding at e2e - predicted_ms, so what passed before its prompt is that less prompt_ms
// (two others' answers of ~0.47 s each: ~0.94 s), and its decode per token is predicted_ms over
// the tokens after the first.
TEST(RankingFromEngineEvidence, RequestsNotStreamedAreJudgedFromTheEnginesTimings) {
  const auto read =
      ledger::read_ledger(test::read_fixture("llamacpp/llamacpp_b10309_small-random_np2_c6_nostream.jsonl"));
  ASSERT_EQ(read.records.size(), 18u);
  const auto groups = analyse(read.records, {});
  ASSERT_EQ(groups.size(), 1u);
  const auto& g = groups[0];
  EXPECT_EQ(g.streamed, 0u);
  ASSERT_TRUE(g.engine_split.has_value());
  EXPECT_TRUE(g.engine_split->not_streamed);
  EXPECT_EQ(g.engine_split->n, 18u);
  EXPECT_NEAR(g.engine_split->wait_ms.p50, 924, 50);
  EXPECT_TRUE(g.engine_split->head_rule.empty());
  ASSERT_TRUE(g.engine_tpot_ms.has_value());
  EXPECT_NEAR(g.engine_tpot_ms->p50, 4.6, 0.5);
  EXPECT_EQ(g.ranking.front().name, "queueing");
  EXPECT_GT(g.ranking.front().score, 1.5);
  for (const auto& c : g.ranking) {
    if (c.name == "not_enough_evidence") {
      EXPECT_EQ(c.score, 0.0);
    }
    if (c.name == "decode") {
      EXPECT_NEAR(c.score, 0.046, 0.01);
    }
  }
  // Without the engine's timings the same lines measure nothing that splits e2e.
  auto bare = read.records;
  for (auto& r : bare) r.server_timings.reset();
  const auto without = analyse(bare, {});
  EXPECT_FALSE(without[0].engine_split.has_value());
  EXPECT_EQ(without[0].ranking.front().name, "not_enough_evidence");
}

// A real llama.cpp b10309 (small random-weight model, 2 slots, one client) answering twelve forced
// tool calls through the proxy: the engine held back each call's first tokens until it had the
// function's name, so the first events came 49-155 ms after the start while the engine began every
// prompt within 5-13 ms (e2e - predicted_ms - prompt_ms). Read as TTFTs they would put ~60 ms of
// decode before the prompt; the report leaves them out and the engine's own times stand in.
TEST(RankingFromEngineEvidence, RequestsThatBeginWithAToolCallAreJudgedFromTheEnginesTimings) {
  const auto read =
      ledger::read_ledger(test::read_fixture("llamacpp/llamacpp_b10309_small-random_np2_tool_calls_first.jsonl"));
  ASSERT_EQ(read.records.size(), 12u);
  for (const auto& r : read.records) ASSERT_EQ(r.first_output, "tool_calls");
  const auto groups = analyse(read.records, {});
  ASSERT_EQ(groups.size(), 1u);
  const auto& g = groups[0];
  EXPECT_EQ(g.streamed, 12u);
  EXPECT_EQ(g.tool_call_first, 12u);
  EXPECT_FALSE(g.ttft_ms.has_value());
  EXPECT_FALSE(g.tpot_ms.has_value());
  ASSERT_TRUE(g.engine_split.has_value());
  EXPECT_EQ(g.engine_split->n, 12u);
  EXPECT_LT(g.engine_split->wait_ms.p50, 15);  // not the ~60 ms the first events would say
  ASSERT_TRUE(g.engine_tpot_ms.has_value());
  EXPECT_NEAR(g.engine_tpot_ms->p50, 4.5, 1.0);  // the engine's predicted_ms per token
  EXPECT_EQ(candidate(g, "not_enough_evidence").score, 0.0);
  EXPECT_LT(candidate(g, "queueing").score, 0.1);
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("12 of the streamed answered first with a tool call"), std::string::npos) << md;
  EXPECT_NE(render_html(in).find("12 streamed, 12 of them answered first with a tool call"), std::string::npos);

  // Without the engine's timings nothing on these lines dates a first token: could not judge.
  auto bare = read.records;
  for (auto& r : bare) r.server_timings.reset();
  const auto without = analyse(bare, {});
  EXPECT_FALSE(without[0].engine_split.has_value());
  EXPECT_EQ(without[0].ranking.front().name, "not_enough_evidence");
  EXPECT_EQ(without[0].ranking.front().score, 1.0);
  EXPECT_NE(without[0].ranking.front().evidence.at(0).find("answered first with a tool call"), std::string::npos);
}

// A real llama.cpp b10309 through the proxy (small model, 2 slots, one client), four rounds of: a
// streamed answer, a forced tool call, the same call with max_tokens 10. The call cut before its
// function's name streamed nothing at all (its line: 10 tokens, no first event), and the report says
// so instead of leaving a gap between the streamed count and TTFT's: 4 timed, 4 calls first, 4 without
// output.
TEST(RankingFromEngineEvidence, StreamsThatEndedWithoutOutputAreCountedAndSaidWhy) {
  const auto read =
      ledger::read_ledger(test::read_fixture("llamacpp/llamacpp_b10309_small-random_np2_tool_calls_mixed.jsonl"));
  ASSERT_EQ(read.records.size(), 12u);
  const auto groups = analyse(read.records, {});
  ASSERT_EQ(groups.size(), 1u);
  const auto& g = groups[0];
  EXPECT_EQ(g.streamed, 12u);
  EXPECT_EQ(g.tool_call_first, 4u);
  EXPECT_EQ(g.no_output, 4u);
  ASSERT_TRUE(g.ttft_ms.has_value());
  EXPECT_EQ(g.ttft_ms->n, 4u);
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("- 4 of the streamed ended without any output, although the engine counted tokens for them: "),
            std::string::npos)
      << md;
  EXPECT_NE(render_html(in).find("12 streamed, 4 of them answered first with a tool call"), std::string::npos);
  EXPECT_NE(render_html(in).find("4 of them ended without any output"), std::string::npos);
  // With the calls and the cut calls alone nothing dates a first token: could not judge, and why.
  std::vector<ledger::LedgerRecord> untimed;
  for (const auto& r : read.records) {
    if (r.first_output != "content") untimed.push_back(r);
  }
  for (auto& r : untimed) r.server_timings.reset();
  const auto without = analyse(untimed, {});
  EXPECT_EQ(without[0].ranking.front().name, "not_enough_evidence");
  EXPECT_NE(without[0].ranking.front().evidence.at(0).find("and 4 ended without any output"), std::string::npos)
      << without[0].ranking.front().evidence.at(0);
}

// The same with a decode slow enough for the held-back tokens to cross the queueing threshold: 900 ms
// to the first event, of which the engine spent 5 ms before the prompt. Lines written before
// `first_output` existed (no such field) keep the old reading; with it, queueing is not named.
TEST(RankingFromEngineEvidence, DecodeHeldBackBeforeAToolCallsNameIsNotQueueing) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 12; ++i) {
    auto r = rec(i * 3000, 2000, 900, 200, 0);
    r.server_timings = R"({"cache_n":0,"prompt_n":200,"prompt_ms":20,"predicted_n":60,"predicted_ms":1975})";
    r.completion_tokens = 60;
    rs.push_back(r);
  }
  const auto old_reading = analyse(rs, {}).at(0);
  EXPECT_GE(candidate(old_reading, "queueing").score, 1.0);  // 880 ms "before the prompt"
  for (auto& r : rs) r.first_output = "tool_calls";
  const auto g = analyse(rs, {}).at(0);
  EXPECT_LT(candidate(g, "queueing").score, 0.1);
  EXPECT_NE(g.ranking.front().name, "queueing");
}

// Issue 25: ranking rows with score 0 and no evidence read as if they meant something; the HTML
// page lacked the percentile table the markdown has.
}  // namespace
}  // namespace mpo::report
