// Every grade and every fail-closed path of the attribution, from constructed snapshots (invented
// counter values chosen so each rule has one outcome), and determinism under reordered input.
#include "attribution/attribution.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <random>

#include "attribution/adapter.hpp"
#include "attribution/render.hpp"
#include "core/go_json.hpp"

namespace mpo::attribution {
namespace {

constexpr std::int64_t kS = 1'000'000;

MetricsSnapshot snap(std::int64_t at_s, double requests, double hits = 0, double preemptions = 0,
                     std::string id = "srv-1") {
  MetricsSnapshot m;
  m.server_instance_id = std::move(id);
  m.started_at_us = at_s * kS - 1000;
  m.scraped_at_us = at_s * kS;
  m.counters["requests"] = {requests, std::nullopt};
  m.counters["prefix_cache_hits"] = {hits, std::nullopt};
  m.counters["preemptions"] = {preemptions, std::nullopt};
  return m;
}

RequestWindow req(std::string id, std::int64_t from_s, std::int64_t to_s) {
  return RequestWindow{std::move(id), from_s * kS + 100, to_s * kS - 2000,
                       std::nullopt};  // ends before the scrape at to_s starts
}

// `n` successful scrapes of one server, one a second from 10 s on.
std::vector<scrape::Snapshot> scrapes(int n, engines::Engine engine) {
  std::vector<scrape::Snapshot> out;
  for (int i = 0; i < n; ++i) {
    scrape::Snapshot s;
    s.source = "http://x/metrics";
    s.started_at_us = (10 + i) * kS - 500;
    s.ended_at_us = (10 + i) * kS;
    s.signals.engine = engine;
    out.push_back(s);
  }
  return out;
}

// `n` scrapes of one vLLM V1 server whose finished-request counter moves by one a second.
std::vector<scrape::Snapshot> counting_scrapes(int n) {
  auto snaps = scrapes(n, engines::Engine::kVllmV1);
  for (std::size_t i = 0; i < snaps.size(); ++i) {
    auto& sig = snaps[i].signals;
    sig.scalars[static_cast<std::size_t>(engines::Signal::kRequestsFinished)] =
        engines::ScalarSignal{double(i), "r", 1};
    sig.scalars[static_cast<std::size_t>(engines::Signal::kProcessStartTime)] = engines::ScalarSignal{1.0, "p", 1};
  }
  return snaps;
}

AttributionResult run(MetricsSnapshot before, MetricsSnapshot after, std::vector<RequestWindow> requests) {
  AttributionInput in;
  in.before = std::move(before);
  in.after = std::move(after);
  in.requests = std::move(requests);
  return attribute(in);
}

TEST(Attribution, OneRequestThatAccountsForTheWholeDeltaIsAnIsolatedWindowWithItsCauses) {
  auto r = run(snap(10, 5, 100, 0), snap(12, 6, 164, 1), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "isolated-window");
  EXPECT_EQ(r.delta.reason, "one observed request accounts for the complete server request delta");
  ASSERT_EQ(r.requests.size(), 1u);
  EXPECT_EQ(r.requests[0].causes, (std::vector<std::string>{"prefix-cache-hit", "preemption"}));
  EXPECT_EQ(r.requests[0].magnitudes.at("prefix_cache_hits"), 64);
  EXPECT_FALSE(r.cohort.has_value());
  EXPECT_EQ(*r.delta.background_unobserved_requests, 0);
}

TEST(Attribution, OverlappingRequestsShareTheDeltaAsACohortOnly) {
  auto r = run(snap(10, 5, 100), snap(12, 7, 164), {req("b", 10, 12), req("a", 10, 11)});
  EXPECT_EQ(r.delta.grade, "cohort-only");
  EXPECT_NE(r.delta.reason.find("multiple observed requests overlap"), std::string::npos);
  ASSERT_TRUE(r.cohort.has_value());
  EXPECT_EQ(r.cohort->causes, (std::vector<std::string>{"prefix-cache-hit"}));
  for (const auto& q : r.requests) EXPECT_TRUE(q.causes.empty()) << "a shared delta is never copied into each request";
  EXPECT_EQ(r.delta.overlapping_request_ids, (std::vector<std::string>{"a", "b"}));
}

TEST(Attribution, UnobservedRequestsProvenByTheCounterContaminateTheWindow) {
  auto r = run(snap(10, 5, 100), snap(12, 9, 164), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "contaminated");
  EXPECT_EQ(*r.delta.background_unobserved_requests, 3);
  EXPECT_NE(r.delta.reason.find("proves 3 unobserved request(s)"), std::string::npos);
  EXPECT_TRUE(r.requests[0].causes.empty());
}

TEST(Attribution, WithoutARequestCounterBackgroundIsUnknownNotZero) {
  auto before = snap(10, 5), after = snap(12, 6);
  before.counters.erase("requests");
  after.counters.erase("requests");
  auto r = run(before, after, {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "cohort-only");
  EXPECT_FALSE(r.delta.background_unobserved_requests.has_value());
  EXPECT_NE(r.delta.reason.find("without a usable server request counter"), std::string::npos);
}

TEST(Attribution, FailClosed) {
  // A failed scrape.
  AttributionInput in;
  in.scrape_failure = "connection refused";
  auto r = attribute(in);
  EXPECT_EQ(r.delta.grade, "unavailable");
  EXPECT_NE(r.delta.reason.find("metrics scrape failed: connection refused"), std::string::npos);
  // A missing snapshot.
  in = {};
  in.before = snap(10, 1);
  EXPECT_EQ(attribute(in).delta.grade, "unavailable");
  // Bounds backwards.
  r = run(snap(12, 1), snap(10, 2), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "unavailable");
  EXPECT_NE(r.delta.reason.find("scrape bounds are invalid"), std::string::npos);
  // A restart: another server instance after.
  r = run(snap(10, 5, 100), snap(12, 1, 10, 0, "srv-2"), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "unavailable");
  EXPECT_EQ(r.delta.server_instance_id, "srv-1->srv-2");
  EXPECT_TRUE(r.shared_causes.empty());
  EXPECT_TRUE(r.requests[0].causes.empty());
  // No identity.
  r = run(snap(10, 5, 100, 0, ""), snap(12, 6, 164, 0, ""), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "unavailable");
  // Stale: the window's request was observed long after the after scrape.
  in = {};
  in.before = snap(10, 5, 100);
  in.after = snap(12, 6, 164);
  in.requests = {req("a", 10, 12)};
  in.observed_at_us = 60 * kS;
  in.max_scrape_age_us = 30 * kS;
  r = attribute(in);
  EXPECT_EQ(r.delta.grade, "stale");
  EXPECT_EQ(r.delta.reason.rfind("latest scrape is older than 30s", 0), 0u);
  EXPECT_TRUE(r.shared_causes.empty());
  // A scrape marked stale when taken.
  auto late = snap(12, 6, 164);
  late.stale = true;
  EXPECT_EQ(run(snap(10, 5, 100), late, {req("a", 10, 12)}).delta.grade, "stale");
  // Duplicate request IDs.
  r = run(snap(10, 5, 100), snap(12, 6, 164), {req("a", 10, 11), req("a", 11, 12)});
  EXPECT_EQ(r.delta.grade, "cohort-only");
  EXPECT_NE(r.delta.reason.find("duplicate request IDs"), std::string::npos);
}

TEST(Attribution, ACounterResetDropsThatCauseOnlyAndSaysSo) {
  auto r = run(snap(10, 5, 100, 4), snap(12, 6, 50, 5), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "isolated-window");
  EXPECT_EQ(r.delta.counter_resets, (std::vector<std::string>{"prefix_cache_hits"}));
  EXPECT_EQ(r.requests[0].causes, (std::vector<std::string>{"preemption"}));
  EXPECT_EQ(r.requests[0].cause_counters.at("prefix_cache_hits"), CounterState::kReset);
  EXPECT_NE(r.delta.reason.find("prefix_cache_hits reset, so no request cause is emitted"), std::string::npos);
}

TEST(Attribution, ADeclaredModulusWrapsInsteadOfResetting) {
  auto before = snap(10, 5, 65530), after = snap(12, 6, 10);
  before.counters["prefix_cache_hits"].wrap_at = 65536;
  after.counters["prefix_cache_hits"].wrap_at = 65536;
  auto r = run(before, after, {req("a", 10, 12)});
  EXPECT_EQ(r.delta.counter_wraps, (std::vector<std::string>{"prefix_cache_hits"}));
  EXPECT_EQ(r.delta.counters.at("prefix_cache_hits").value, 16);
  EXPECT_EQ(r.requests[0].causes, (std::vector<std::string>{"prefix-cache-hit"}));
}

TEST(Attribution, EvidenceTheServerReturnedCorrelatesEvenInACrowd) {
  auto a = req("a", 10, 12);
  a.returned = CorrelatedCounters{"response-usage", {{"prefix_cache_hits", {48, std::nullopt}}}};
  auto r = run(snap(10, 5, 100), snap(12, 9, 164), {a, req("b", 10, 12)});
  EXPECT_EQ(r.delta.grade, "contaminated");
  const auto& row = r.requests[0];
  EXPECT_EQ(row.request_id, "a");
  EXPECT_EQ(row.grade, "request-correlated");
  EXPECT_EQ(row.correlation_source, "response-usage");
  EXPECT_EQ(row.magnitudes.at("prefix_cache_hits"), 48);
  EXPECT_EQ(r.requests[1].grade, "contaminated");
  // Untrusted correlation is ignored and said to be.
  auto before = snap(10, 5, 100), after = snap(12, 6, 164);
  after.request_counters["a"] = {"log-scrape", {{"prefix_cache_hits", {9, std::nullopt}}}};
  r = run(before, after, {req("a", 10, 12)});
  EXPECT_NE(r.delta.reason.find("untrusted correlation evidence is ignored"), std::string::npos);
  EXPECT_EQ(r.requests[0].grade, "isolated-window");
}

TEST(Attribution, WhatTheServerReturnedForARequestBecomesItsOwnEvidence) {
  ledger::LedgerRecord llama;
  llama.observation_id = "l";
  llama.started_at_us = 1;
  llama.server_timings = R"({"cache_n":12,"prompt_n":3,"predicted_n":8})";  // llama.cpp timings
  auto w = request_window(llama);
  ASSERT_TRUE(w.returned.has_value());
  EXPECT_EQ(w.returned->source, "server-timings");
  EXPECT_EQ(w.returned->counters.at("prefix_cache_hits").value, 12);
  ledger::LedgerRecord vllm;
  vllm.observation_id = "v";
  vllm.started_at_us = 1;
  vllm.cached_prompt_tokens = 32;  // usage.prompt_tokens_details.cached_tokens
  w = request_window(vllm);
  ASSERT_TRUE(w.returned.has_value());
  EXPECT_EQ(w.returned->source, "response-usage");
  EXPECT_EQ(w.returned->counters.at("prefix_cache_hits").value, 32);
  ledger::LedgerRecord none;
  none.observation_id = "n";
  EXPECT_FALSE(request_window(none).returned.has_value());
}

TEST(Attribution, FewerServerRequestsThanObservedIsNoted) {
  auto r = run(snap(10, 5), snap(12, 5), {req("a", 10, 12)});
  EXPECT_EQ(r.delta.grade, "cohort-only");
  ASSERT_EQ(r.delta.notes.size(), 1u);
  EXPECT_NE(r.delta.notes[0].find("counted 0 finished request(s)"), std::string::npos);
}

// A health check and a model list through the proxy beside one chat request (the engine's request
// counter moved by one) leave the window isolated: they run no inference and are left out, counted.
// Before 2026-12-06 every line was a request, and the window was "multiple observed requests"; a
// document of that time is graded again by that rule (`every_line`).
TEST(Attribution, CallsThatRunNoInferenceDoNotShareTheWindow) {
  auto snaps = counting_scrapes(3);
  std::vector<ledger::LedgerRecord> recs(4);
  const char* ops[] = {"chat", "other", "models", "chat"};
  for (int i = 0; i < 4; ++i) {
    recs[i].observation_id = "call-" + std::to_string(i);
    recs[i].operation = ops[i];
    recs[i].started_at_us = (i < 3 ? 10 : 11) * kS + 200 + i * 1000;
    recs[i].ended_at_us = (i < 3 ? 11 : 12) * kS - 200;
  }
  recs[0].prompt_tokens = 12;
  recs[3].prompt_tokens = 12;
  EXPECT_TRUE(runs_inference(recs[0]));
  EXPECT_FALSE(runs_inference(recs[1]));
  EXPECT_FALSE(runs_inference(recs[2]));
  auto tokenize = recs[1];
  tokenize.prompt_tokens = 5;  // an `other` path that counted tokens (a completion by another path) runs inference
  EXPECT_TRUE(runs_inference(tokenize));

  const auto run = attribute_run(snaps, recs, {}, 0);
  ASSERT_EQ(run.windows.size(), 2u);
  EXPECT_EQ(run.windows[0].result.delta.grade, "isolated-window") << run.windows[0].result.delta.reason;
  EXPECT_EQ(run.requests.size(), 2u);
  const auto md = attribution_markdown(run, {});
  EXPECT_NE(md.find("2 requests (2 calls that run no inference left out: models 1, other 1)"), std::string::npos) << md;
  const auto doc = boost::json::parse(attribution_json(run, {}));
  EXPECT_EQ(doc.at("inputs").at("calls_left_out"), boost::json::parse(R"({"models":1,"other":1})"));
  EXPECT_EQ(doc.at("inputs").at("requests"), 2);

  const auto old = attribute_run(snaps, recs, {}, 0, true);
  EXPECT_EQ(old.windows[0].result.delta.grade, "cohort-only");
  EXPECT_EQ(old.requests.size(), 4u);
  EXPECT_EQ(attribution_json(old, {}).find("calls_left_out"), std::string::npos);
}

TEST(Attribution, TheSameInputInAnyOrderGivesTheSameDocuments) {
  auto snaps = counting_scrapes(5);
  std::vector<ledger::LedgerRecord> recs(4);
  for (int i = 0; i < 4; ++i) {
    recs[i].observation_id = "req-" + std::to_string(i);
    recs[i].started_at_us = (10 + i) * kS + 200;
    recs[i].ended_at_us = (11 + i) * kS - 200;
  }
  RunInputs in;
  const auto reference = attribution_json(attribute_run(snaps, recs, {}, 0), in);
  std::mt19937 rng(7);
  for (int k = 0; k < 20; ++k) {
    std::shuffle(snaps.begin(), snaps.end(), rng);
    std::shuffle(recs.begin(), recs.end(), rng);
    EXPECT_EQ(attribution_json(attribute_run(snaps, recs, {}, 0), in), reference);
  }
  EXPECT_NE(reference.find("\"isolated-window\""), std::string::npos);
}

// Issue 37: 24 requests through llama.cpp printed 148 "causes that reach a request" lines, every one
// the chat template's 5 cached tokens, each request up to 10 times. Now one row per distinct
// evidence, each request once, and a template-sized hit shared by all is a note.
TEST(AttributionRender, CausesAreOneRowPerEvidenceAndATemplateSizedHitIsANote) {
  const auto snaps = scrapes(4, engines::Engine::kLlamaCpp);
  // Six requests spanning all three windows, each with llama.cpp's own cache_n.
  auto records = [](std::vector<int> cache_n) {
    std::vector<ledger::LedgerRecord> recs(cache_n.size());
    for (std::size_t i = 0; i < recs.size(); ++i) {
      recs[i].observation_id = "req-" + std::to_string(i);
      recs[i].started_at_us = 10 * kS + 100 + static_cast<std::int64_t>(i);
      recs[i].ended_at_us = 13 * kS - 2000;
      recs[i].server_timings = fmt::format(R"({{"cache_n":{},"prompt_n":40,"predicted_n":8}})", cache_n[i]);
    }
    return recs;
  };
  auto section = [](const std::string& md) {
    const auto at = md.find("## Causes that reach a request");
    return at == std::string::npos ? std::string() : md.substr(at);
  };
  const auto template_md = section(attribution_markdown(attribute_run(snaps, records({5, 5, 5, 5, 5, 5}), {}, 0), {}));
  EXPECT_NE(template_md.find("Every one of the 6 requests reused the same prompt tokens from the prefix cache "
                             "(prefix_cache_hits 5)"),
            std::string::npos)
      << template_md;
  EXPECT_EQ(template_md.find("- `"), std::string::npos) << template_md;
  const auto mixed_md = section(attribution_markdown(attribute_run(snaps, records({5, 5, 5, 200, 200, 5}), {}, 0), {}));
  EXPECT_NE(mixed_md.find("- `4 requests: req-0, req-1, req-2, ...`"), std::string::npos) << mixed_md;
  EXPECT_NE(mixed_md.find("- `2 requests: req-3, req-4`"), std::string::npos) << mixed_md;
  std::size_t rows = 0;
  for (auto at = mixed_md.find("- `"); at != std::string::npos; at = mixed_md.find("- `", at + 1)) ++rows;
  EXPECT_EQ(rows, 2u) << mixed_md;  // not one per request and window (6 x 3)
}

TEST(Attribution, WindowsPerRequestEncloseEachRequest) {
  std::vector<MetricsSnapshot> s = {snap(10, 0), snap(11, 0), snap(12, 1), snap(13, 1), snap(14, 2)};
  std::vector<RequestWindow> r = {req("a", 11, 12), req("b", 12, 14)};
  auto w = choose_windows(s, r, WindowChoice{WindowMode::kPerRequest, 0, 0});
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].before, 1u);
  EXPECT_EQ(w[0].after, 2u);
  EXPECT_EQ(w[1].before, 2u);
  EXPECT_EQ(w[1].after, 4u);
  EXPECT_EQ(choose_windows(s, r, {}).size(), 4u);
  auto choice = parse_window("1970-01-01T00:00:11Z,1970-01-01T00:00:13Z");
  ASSERT_TRUE(choice.ok());
  auto e = choose_windows(s, r, *choice);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].before, 1u);
  EXPECT_EQ(e[0].after, 4u);  // the scrape at 13 s began 1 ms before TO: the first one begun after it
  EXPECT_FALSE(parse_window("yesterday").ok());
  EXPECT_FALSE(parse_window("1970-01-01T00:00:13Z,1970-01-01T00:00:11Z").ok());
}

// Issue 25: a window whose scrape failed printed 00:00:00.000000Z to 00:00:00.000000Z; it shows
// the scrapes' own times.
TEST(Attribution, AFailedScrapesWindowShowsTheScrapesOwnTimes) {
  std::vector<scrape::Snapshot> snaps(2);
  for (int i = 0; i < 2; ++i) {
    snaps[i].source = "http://x/metrics";
    snaps[i].started_at_us = (10 + i) * kS - 500;
    snaps[i].ended_at_us = (10 + i) * kS;
    snaps[i].signals.engine = engines::Engine::kVllmV1;
  }
  snaps[1].status = scrape::ScrapeStatus::kUnreachable;
  snaps[1].error = "connection refused";
  std::vector<ledger::LedgerRecord> recs(1);
  recs[0].observation_id = "a";
  recs[0].started_at_us = 10 * kS + 100;
  recs[0].ended_at_us = 10 * kS + 200;
  const auto md = attribution_markdown(attribute_run(snaps, recs, {}, 0), RunInputs{});
  EXPECT_EQ(md.find("00:00:00.000000"), std::string::npos) << md;
  EXPECT_NE(md.find("| 00:00:10.000000Z | 00:00:11.000000Z | **unavailable** |"), std::string::npos) << md;
}

TEST(Attribution, FakFormatKeepsFaksShape) {
  std::vector<scrape::Snapshot> snaps(2);
  for (int i = 0; i < 2; ++i) {
    snaps[i].source = "http://x/metrics";
    snaps[i].started_at_us = (10 + 2 * i) * kS - 500;
    snaps[i].ended_at_us = (10 + 2 * i) * kS + 123400;
    snaps[i].signals.engine = engines::Engine::kVllmV1;
    snaps[i].signals.scalars[static_cast<std::size_t>(engines::Signal::kRequestsFinished)] =
        engines::ScalarSignal{double(5 + i), "r", 1};
  }
  std::vector<ledger::LedgerRecord> recs(1);
  recs[0].observation_id = "a";
  recs[0].started_at_us = 10 * kS + 500000;
  recs[0].ended_at_us = 11 * kS;
  const auto line = fak_json_lines(attribute_run(snaps, recs, {}, 0));
  EXPECT_EQ(line.find("{\"schema\":\"fak-model-perf-attribution/1\",\"delta\":{\"server_instance_id\":"), 0u) << line;
  EXPECT_NE(line.find("\"scrape_started_at\":\"1970-01-01T00:00:10.1234Z\""), std::string::npos) << line;
  EXPECT_NE(line.find("\"counters\":{\"requests\":{\"value\":1,\"state\":\"ok\"}}"), std::string::npos) << line;
  EXPECT_NE(line.find("\"grade\":\"isolated-window\""), std::string::npos);
  EXPECT_EQ(line.find("null,"), std::string::npos) << "every row carries the window's times: " << line;
  EXPECT_EQ(go_time(10 * kS), "1970-01-01T00:00:10Z");
}

}  // namespace
}  // namespace mpo::attribution
