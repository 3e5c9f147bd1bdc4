#include "report/analysis.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "report/ranking.hpp"
#include "report/records.hpp"
#include "report/render.hpp"
#include "support/fixtures.hpp"

namespace mpo::report {
namespace {

using test_lines::rec;

// Streams on llama.cpp's own /completion (no API the proxy reads the events of): the engine's
// timings give their tokens, nothing gives a first token. The report says why there is no TTFT
// and where to send them, not only "stream with include_usage" (measured on the real llama-server:
// a streamed /completion's line had tokens from server_timings and no TTFT).
TEST(Analyse, StreamsOnAPathOfNoApiTheProxyReadsSayWhyThereIsNoTtft) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 3; ++i) {
    auto r = rec(i * 100, 60, std::nullopt, 3, 0);
    r.stream = true;
    r.path = "/completion";
    r.operation = "other";
    r.token_source = "server_timings";
    rs.push_back(r);
  }
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.streamed_unread, 3u);
  ASSERT_EQ(g.ranking.front().name, "not_enough_evidence");
  std::string evidence;
  for (const auto& e : g.ranking.front().evidence) evidence += e + "\n";
  EXPECT_NE(evidence.find("3 of them streamed on paths of no API whose events the proxy reads"), std::string::npos)
      << evidence;
  // A chat stream with no usage does not get that line.
  std::vector<ledger::LedgerRecord> chat;
  for (int i = 0; i < 3; ++i) {
    auto r = rec(i * 100, 60, std::nullopt, 3, 0);
    r.stream = true;
    r.operation = "chat";
    chat.push_back(r);
  }
  EXPECT_EQ(analyse(chat, {}).at(0).streamed_unread, 0u);
}

TEST(LeastSquares, RecoversExactCoefficients) {
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (int p = 0; p < 5; ++p) {
    for (int c = 0; c < 4; ++c) {
      x.push_back({1.0, 100.0 * p, static_cast<double>(c)});
      y.push_back(20 + 0.25 * 100.0 * p + 30 * c);
    }
  }
  auto beta = least_squares(x, y);
  ASSERT_TRUE(beta.has_value());
  EXPECT_NEAR((*beta)[0], 20, 1e-9);
  EXPECT_NEAR((*beta)[1], 0.25, 1e-12);
  EXPECT_NEAR((*beta)[2], 30, 1e-9);
  EXPECT_FALSE(least_squares({{1, 2}, {2, 4}}, {1, 2}).has_value());  // collinear: no answer
  // Collinear up to rounding, at the scale of real prompts (prompt = 150.3 * (in flight + 1) + 0.7):
  // the elimination leaves a last pivot of rounding noise (5e-12 here, above an absolute 1e-12),
  // which must read as singular, not as a coefficient.
  std::vector<std::vector<double>> ramp;
  std::vector<double> ry;
  for (int c = 0; c < 48; ++c) {
    ramp.push_back({1.0, 150.3 * (c + 1) + 0.7, static_cast<double>(c)});
    ry.push_back(20 + 0.3 * ramp.back()[1]);
  }
  EXPECT_FALSE(least_squares(ramp, ry).has_value());
}

TEST(Analyse, WhenPromptAndConcurrencyRiseTogetherTheFitUsesPromptOnlyAndSaysSo) {
  // A ramp: the i-th request of each wave has a prompt of 100 * (i + 1) tokens and i requests in
  // flight before it. The two columns are one: least squares cannot split them.
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int wave = 1; wave <= 3; ++wave) {
    for (int i = 0; i < 2 * wave; ++i) rs.push_back(rec(t += 10, 500, 15 + 0.2 * 100 * (i + 1), 100 * (i + 1), i));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit.has_value());
  EXPECT_TRUE(g.fit->collinear);
  EXPECT_FALSE(g.fit->in_flight_varies);
  EXPECT_NEAR(g.fit->b_ms_per_token, 0.2, 1e-9);
  EXPECT_EQ(g.fit->c_ms_per_in_flight, 0);
  EXPECT_NEAR(g.fit->r2, 1.0, 1e-9);
  bool said = false;
  for (const auto& c : g.ranking) {
    for (const auto& e : c.evidence) said = said || e.find("rose together") != std::string::npos;
  }
  EXPECT_TRUE(said);
}

TEST(Analyse, FitsTtftAgainstPromptAndConcurrencyWithR2) {
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int p = 1; p <= 6; ++p) {
    for (int c = 0; c < 5; ++c) rs.push_back(rec(t += 10, 500, 10 + 0.5 * p * 100 + 40 * c, p * 100, c));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit.has_value());
  EXPECT_NEAR(g.fit->b_ms_per_token, 0.5, 1e-9);
  EXPECT_NEAR(g.fit->c_ms_per_in_flight, 40, 1e-9);
  EXPECT_NEAR(g.fit->r2, 1.0, 1e-12);
  EXPECT_EQ(g.fit->n, 30u);
}

TEST(Analyse, PercentilesAreExactAndErrorsCount) {
  std::vector<ledger::LedgerRecord> rs{rec(0, 100, 10, 5, 0), rec(10, 100, 20, 5, 0), rec(20, 100, 30, 5, 0),
                                       rec(30, 100, 40, 5, 0),
                                       rec(40, 100, std::nullopt, 5, 0, "upstream_unreachable")};
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.requests, 5u);
  EXPECT_EQ(g.ttft_ms->p50, 25.0);
  EXPECT_DOUBLE_EQ(g.ttft_ms->p95, 38.5);
  EXPECT_DOUBLE_EQ(g.error_rate, 0.2);
  EXPECT_EQ(g.outcomes.at("upstream_unreachable"), 1u);
  EXPECT_EQ(g.ranking.at(0).name, "errors");
}

TEST(Analyse, BusyShareIsTheUnionOfRequestIntervals) {
  // [0,100] and [50,150] overlap; then idle until [400,500]: busy 250 of 500 ms.
  std::vector<ledger::LedgerRecord> rs{rec(0, 100, 10, 5, 0), rec(50, 100, 10, 5, 1), rec(400, 100, 10, 5, 0)};
  const auto g = analyse(rs, {}).at(0);
  EXPECT_DOUBLE_EQ(g.busy_share, 0.5);
  // A proxy writes a line when its request ends, so lines come out of start order: the same
  // intervals in another order are the same union (taken in order when sorted, sorted when not).
  for (const auto& order : {std::vector<int>{2, 0, 1}, std::vector<int>{1, 0, 2}, std::vector<int>{0, 2, 1}}) {
    std::vector<ledger::LedgerRecord> shuffled;
    for (int i : order) shuffled.push_back(rs[static_cast<std::size_t>(i)]);
    EXPECT_DOUBLE_EQ(analyse(shuffled, {}).at(0).busy_share, 0.5);
  }
  // Nested and touching intervals: [0,300] holds [100,150]; [300,400] touches it; busy 400 of 400.
  std::vector<ledger::LedgerRecord> nested{rec(100, 50, 10, 5, 0), rec(0, 300, 10, 5, 0), rec(300, 100, 10, 5, 0)};
  EXPECT_DOUBLE_EQ(analyse(nested, {}).at(0).busy_share, 1.0);
}

TEST(Analyse, GroupsAndWindowFilter) {
  auto a = rec(0, 10, 1, 5, 0);
  auto b = rec(1000, 10, 1, 5, 0);
  b.model = "other";
  Options opts;
  EXPECT_EQ(analyse({a, b}, opts).size(), 2u);
  opts.since_us = 500'000;
  const auto only = analyse({a, b}, opts);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].key, "other");
}

TEST(Slo, ParsesEvaluatesAndTreatsUnmeasurableAsViolated) {
  auto slos = parse_slos("ttft_p95_ms=30,error_rate=0.5,tpot_p95_ms=100");
  ASSERT_TRUE(slos.ok());
  std::vector<ledger::LedgerRecord> rs{rec(0, 100, 10, 5, 0), rec(10, 100, 50, 5, 0)};
  const auto res = evaluate_slos(analyse(rs, {}), *slos);
  ASSERT_EQ(res.size(), 3u);
  EXPECT_TRUE(res[0].violated);   // ttft p95 48 > 30
  EXPECT_FALSE(res[1].violated);  // no errors
  EXPECT_TRUE(res[2].violated);   // no TPOT in these records: not measurable is not a pass
  EXPECT_FALSE(res[2].value.has_value());
  EXPECT_FALSE(parse_slos("ttft=1").ok());
  EXPECT_FALSE(parse_slos("ttft_p95_ms=fast").ok());
  EXPECT_FALSE(parse_slos("ttft_p95_ms").ok());
}

// A streamed request its client gave up before its first token (it left, or its own time limit ran
// out) after waiting `waited` ms.
ledger::LedgerRecord given_up(std::int64_t start_ms, double waited, std::string outcome = "client_disconnected") {
  auto r = rec(start_ms, waited, std::nullopt, 5, 0, std::move(outcome));
  r.stream = true;
  r.http_status = 200;
  r.completion_tokens = 0;
  return r;
}

// Clients that give up before their first token take the slowest TTFTs out of the percentiles: the
// report says how many and how long they had waited, and a TTFT SLO is judged with them.
TEST(GivenUp, RequestsLeftBeforeTheirFirstTokenAreCountedWithTheirWaitsAndNotHiddenFromTtft) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 18; ++i) rs.push_back(rec(i * 10, 500, 100, 5, 0));
  rs.push_back(given_up(200, 3000));
  rs.push_back(given_up(210, 5000, "upstream_timeout"));       // a load generator's own time limit
  auto cut = rec(220, 400, 120, 5, 0, "client_disconnected");  // left after output had begun
  cut.stream = true;
  cut.http_status = 200;
  rs.push_back(cut);
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  const auto& g = groups[0];
  ASSERT_TRUE(g.left_before_first_token_ms.has_value());
  EXPECT_EQ(g.left_before_first_token_ms->n, 2u);
  EXPECT_DOUBLE_EQ(g.left_before_first_token_ms->max, 5000);
  EXPECT_EQ(g.disconnected_after_first_token, 1u);
  EXPECT_EQ(g.ttft_ms->n, 19u);  // the 18 ok and the one that left after its first token
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("TTFT leaves out 2 streamed requests given up before the first token"), std::string::npos) << md;
  EXPECT_NE(md.find("2 of 21 requests ended client_disconnected (the client left before the end; 1 of them after"),
            std::string::npos)
      << md;
  const std::string json = render_json(in);
  EXPECT_NE(json.find(R"("left_before_first_token_ms":{"n":2)"), std::string::npos) << json;
  // The queueing candidate names them as evidence (their waits are not in its score).
  EXPECT_NE(md.find("2 streamed requests were given up before the first token after waiting 4000 ms p50"),
            std::string::npos)
      << md;

  // The survivors' TTFT p95 is 100 ms. With the two at their waits (3 and 5 s, 2 of 21) p95 is
  // above 1 s: violated for sure, "at least".
  auto slos = parse_slos("ttft_p95_ms=1000,ttft_p50_ms=1000,ttft_p99_ms=6000");
  ASSERT_TRUE(slos.ok());
  const auto res = evaluate_slos(groups, *slos);
  ASSERT_EQ(res.size(), 3u);
  ASSERT_TRUE(res[0].value.has_value());
  EXPECT_TRUE(res[0].violated);
  EXPECT_TRUE(res[0].at_least);
  EXPECT_GT(*res[0].value, 1000);
  // p50 stays at 100 ms even if the two never got an answer: met for sure.
  ASSERT_TRUE(res[1].value.has_value());
  EXPECT_FALSE(res[1].violated);
  EXPECT_DOUBLE_EQ(*res[1].value, 100);
  // p99 under 6 s with them at their waits, past it if they were never served: cannot be judged.
  EXPECT_FALSE(res[2].value.has_value());
  EXPECT_TRUE(res[2].violated);
  EXPECT_NE(res[2].note.find("either side"), std::string::npos);
  // e2e takes all three given up (the one cut after its first token too) at their e2e, a lower
  // bound: an e2e SLO their e2e already breaks is violated, one only "never" would break cannot be
  // judged.
  EXPECT_EQ(g.e2e_given_up, 3u);
  EXPECT_NE(md.find("e2e takes the 3 requests given up"), std::string::npos) << md;
  auto e2e_slos = parse_slos("e2e_p95_ms=1000,e2e_p95_ms=10000");
  ASSERT_TRUE(e2e_slos.ok());
  const auto e2e = evaluate_slos(groups, *e2e_slos);
  EXPECT_TRUE(e2e[0].violated);
  EXPECT_TRUE(e2e[0].at_least);
  EXPECT_FALSE(e2e[1].value.has_value());
  EXPECT_NE(e2e[1].note.find("given up before the end could lie on either side"), std::string::npos) << e2e[1].note;
  // Without them, the same SLOs are judged as before.
  rs.resize(18);
  const auto plain = evaluate_slos(analyse(rs, {}), *slos);
  EXPECT_FALSE(plain[0].violated);
  EXPECT_FALSE(plain[0].at_least);
  EXPECT_FALSE(analyse(rs, {})[0].left_before_first_token_ms.has_value());
}

// llama.cpp lets a request leave out its model, and the ledger names the model from the response:
// a request it never answered (its client left in the queue) named none. Seen on the real server,
// such requests made a group of their own, "(unknown model)", apart from the TTFT they belonged to.
// A chat UI whose users press "stop": 6 of 106 clients leave once output has begun. Nothing failed
// (the backend was serving them), and the errors candidate, which crossed at 5.7 before, does not
// name them the bottleneck; two clients that leave before their first token were not served and
// count (1.9% of requests: it crosses).
TEST(GivenUp, ClientsThatStopAnAnswerAlreadyStreamingAreNotFailures) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 100; ++i) rs.push_back(rec(i * 10, 500, 100, 5, 0));
  for (int i = 0; i < 6; ++i) {
    auto stopped = rec(1000 + i * 10, 300, 100, 5, 0, "client_disconnected");
    stopped.stream = true;
    stopped.http_status = 200;
    rs.push_back(stopped);
  }
  auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_NEAR(groups[0].error_rate, 6.0 / 106, 1e-12);
  EXPECT_EQ(groups[0].failure_rate, 0.0);
  const auto errors_of = [](const GroupStats& g) {
    for (const auto& c : g.ranking) {
      if (c.name == "errors") return c;
    }
    return Candidate{};
  };
  EXPECT_EQ(errors_of(groups[0]).score, 0.0);
  EXPECT_NE(groups[0].ranking.front().name, "errors");
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("6 of 106 requests ended client_disconnected (the client left after output had begun: a cancel "
                    "or the client's own time limit, not a failure; not counted)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("failure rate 0.0% (threshold 1%); 5.7% with the clients that left after output had begun"),
            std::string::npos)
      << md;
  EXPECT_NE(render_json(in).find(R"("failure_rate":0,)"), std::string::npos);
  EXPECT_NE(render_html(in).find("0.00% (the error rate less 6 clients that left once output had begun)"),
            std::string::npos);
  auto slos = parse_slos("error_rate=0.01,failure_rate=0.01");
  ASSERT_TRUE(slos.ok());
  const auto judged = evaluate_slos(groups, *slos);
  ASSERT_EQ(judged.size(), 2u);
  EXPECT_TRUE(judged[0].violated);
  EXPECT_FALSE(judged[1].violated);

  rs.push_back(given_up(2000, 3000));
  rs.push_back(given_up(2010, 3000));
  groups = analyse(rs, {});
  EXPECT_NEAR(groups[0].failure_rate, 2.0 / 108, 1e-12);
  EXPECT_NEAR(errors_of(groups[0]).score, 1.85, 0.01);
  in.groups = groups;
  EXPECT_NE(render_markdown(in).find("8 of 108 requests ended client_disconnected (the client left before the end; 6 "
                                     "of them after output had begun, a cancel or the client's own time limit, not a "
                                     "failure: not counted; 2 before the first token, not served: counted)"),
            std::string::npos)
      << render_markdown(in);
}

// The errors candidate says what failed, as the lines say it: the status, the error's type and a
// message, most frequent first. The message is llama.cpp b10309's for a prompt past a slot's
// context (-np 4 on the small model, a 1,500-word prompt: seen on the real server, 2026-12-05); a
// `|` and a line break in a backend's message do not break the Markdown table.
TEST(Failures, TheErrorsCandidateSaysWhatFailedByStatusAndTypeWithAMessage) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 9; ++i) rs.push_back(rec(i * 10, 500, 100, 5, 0));
  for (int i = 0; i < 6; ++i) {
    auto r = rec(100 + i * 10, 20, std::nullopt, 5, 0, "http_error");
    r.http_status = 400;
    r.error_type = "exceed_context_size_error";
    r.error_message =
        fmt::format("request ({} tokens) exceeds the available context size (512 tokens), try increasing it", 2898 + i);
    rs.push_back(r);
  }
  auto odd = rec(200, 20, std::nullopt, 5, 0, "http_error");
  odd.http_status = 503;
  odd.error_message = "busy | try\nlater";
  rs.push_back(odd);
  auto gone = rec(210, 20, std::nullopt, 5, 0, "upstream_unreachable");
  gone.http_status = 0;
  rs.push_back(gone);
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  const auto& f = groups[0].failures;
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].outcome, "http_error");
  EXPECT_EQ(f[0].http_status, 400);
  EXPECT_EQ(f[0].error_type, "exceed_context_size_error");
  EXPECT_EQ(f[0].requests, 6u);
  EXPECT_EQ(f[0].example_message,
            "request (2898 tokens) exceeds the available context size (512 tokens), try increasing it");
  EXPECT_EQ(f[1].http_status, 503);
  EXPECT_EQ(f[2].outcome, "upstream_unreachable");
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("7 of 17 requests ended http_error: HTTP 400 exceed_context_size_error (6): \"request (2898 "
                    "tokens) exceeds the available context size (512 tokens), try increasing it\"; HTTP 503 (1): "
                    "\"busy \\| try later\""),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("1 of 17 requests ended upstream_unreachable;"), std::string::npos) << md;
  const std::string json = render_json(in);
  EXPECT_NE(
      json.find(R"("failures":[{"outcome":"http_error","http_status":400,"error_type":"exceed_context_size_error",)"
                R"("requests":6,"example_message":"request (2898 tokens))"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"({"outcome":"upstream_unreachable","http_status":null,"error_type":null,"requests":1,)"
                      R"("example_message":null})"),
            std::string::npos)
      << json;
}

// A run where TTFT fell as more requests were in flight (short requests arriving while long ones
// ran, as a mixed workload on the real llama-server gave -15.1 ms): the fit's coefficient is no
// cost, and the report does not call it one.
TEST(TtftFit, ANegativeCoefficientIsNotCalledACost) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 20; ++i) rs.push_back(rec(i * 1000, 1500, 900 - 40.0 * (i % 10), 50, i % 10));
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_TRUE(groups[0].fit.has_value());
  EXPECT_LT(groups[0].fit->c_ms_per_in_flight, 0);
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("A negative coefficient says TTFT fell as that quantity rose in this run"), std::string::npos)
      << md;
  EXPECT_NE(md.find("fit: TTFT did not rise with the requests already in flight (-40.0 ± 0.0 ms each"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("each request already in flight adds -"), std::string::npos) << md;
}

// A long message is cut at 240 bytes, never inside a UTF-8 sequence (a cut one would be written
// as U+FFFD).
TEST(Failures, ALongMessageIsCutBetweenCharacters) {
  std::vector<ledger::LedgerRecord> rs;
  rs.push_back(rec(0, 500, 100, 5, 0));
  auto r = rec(10, 20, std::nullopt, 5, 0, "http_error");
  r.error_message = "x";
  for (int i = 0; i < 150; ++i) r.error_message->append("\xc3\xa9");  // é, two bytes
  rs.push_back(r);
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups[0].failures.size(), 1u);
  const std::string& m = groups[0].failures[0].example_message;
  EXPECT_EQ(m.size(), 239u);  // "x" and 119 whole characters
  EXPECT_EQ(m.substr(m.size() - 2), "\xc3\xa9");
}

// Answers cut short: llama.cpp b10309 with 256 tokens of context a slot stopped answers that asked
// for 400 tokens at 245 with finish_reason "length" (seen on the real server), the word max_tokens
// gives too. The report tells the two apart by the limit the request named; a count the server did
// not give (estimated) is not compared.
TEST(CutShort, AnswersStoppedAtLengthBeforeTheirMaxTokensAreCounted) {
  std::vector<ledger::LedgerRecord> rs;
  const auto answer = [](std::int64_t start, std::int64_t asked, std::int64_t got, const char* reason,
                         const char* source) {
    auto r = rec(start, 500, 50, 11, 0);
    r.stream = true;
    r.max_tokens = asked;
    r.completion_tokens = got;
    r.finish_reason = reason;
    r.token_source = source;
    return r;
  };
  rs.push_back(answer(0, 400, 245, "length", "usage"));            // cut by the context
  rs.push_back(answer(10, 400, 245, "length", "server_timings"));  // likewise
  rs.push_back(answer(20, 600, 245, "max_tokens", "usage"));       // Anthropic's word
  rs.push_back(answer(30, 8, 8, "length", "usage"));               // its own limit
  rs.push_back(answer(40, 400, 120, "stop", "usage"));             // ended of itself
  rs.push_back(answer(50, 400, 245, "length", "estimated"));       // a count to distrust
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].cut_short, 3u);
  ReportInput in;
  in.groups = groups;
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("**3 requests stopped at the length limit before the max_tokens asked for** (245 tokens p50"),
            std::string::npos)
      << md;
  EXPECT_NE(render_json(in).find(R"("cut_short":3,"cut_short_tokens":{"n":3,"p50":245)"), std::string::npos);
  EXPECT_NE(render_html(in).find("3 stopped at the length limit before the max_tokens asked for (245 tokens p50)"),
            std::string::npos);
}

TEST(GivenUp, RequestsThatNamedNoModelJoinTheOnlyModelTheLinesName) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 8; ++i) rs.push_back(rec(i * 10, 500, 100, 5, 0));
  for (int i = 0; i < 2; ++i) {
    auto r = given_up(100 + i, 1400);
    r.model.reset();
    rs.push_back(r);
  }
  const auto groups = analyse(rs, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].key, "m");
  EXPECT_EQ(groups[0].requests, 10u);
  EXPECT_EQ(groups[0].unnamed_model_requests, 2u);
  ASSERT_TRUE(groups[0].left_before_first_token_ms.has_value());
  EXPECT_EQ(groups[0].left_before_first_token_ms->n, 2u);
  ReportInput in;
  in.groups = groups;
  EXPECT_NE(render_markdown(in).find("2 of them named no model and got no answer to name one"), std::string::npos);
  // With two models named, whose they were is not known: their group stays apart.
  auto other = rec(200, 500, 100, 5, 0);
  other.model = "n";
  rs.push_back(other);
  const auto three = analyse(rs, {});
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].key, std::string(kUnknownModel));
  EXPECT_EQ(three[1].unnamed_model_requests, 0u);
}

// Issue 25: the fit printed "-2925 ms + 178 ms/prompt token" (an implied prefill of 6 tok/s) from
// prompts of 14 to 18 tokens on a real llama.cpp server. A range that narrow carries no per-token
// cost: the prompt term is left out and the report says why.
TEST(Analyse, ANarrowPromptRangeGivesNoPerTokenCost) {
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int i = 0; i < 20; ++i) {
    const int prompt = 14 + i % 5;
    const int inflight = i % 4;
    rs.push_back(rec(t += 10, 900, 200 + 178.0 * (prompt - 16) + 300 * inflight + (i % 3) * 50, prompt, inflight));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit.has_value());
  EXPECT_TRUE(g.fit->prompt_range_narrow);
  EXPECT_FALSE(g.fit->prompt_varies);
  EXPECT_EQ(g.fit->prompt_min, 14);
  EXPECT_EQ(g.fit->prompt_max, 18);
  for (const auto& c : g.ranking) {
    for (const auto& e : c.evidence) EXPECT_EQ(e.find("implied prefill rate"), std::string::npos) << e;
  }
  ReportInput in;
  in.table = RowTable(GroupBy::kModel);
  for (const auto& r : rs) in.table.add(r);
  in.groups = {g};
  const auto md = render_markdown(in);
  EXPECT_NE(md.find("Prompts spanned only 14 to 18 tokens: too narrow"), std::string::npos) << md;
  EXPECT_EQ(md.find("ms/prompt token"), std::string::npos) << md;
}

// The demo printed "TTFT fit: 34.0 ms + -0.414 ± 0.594 ms/prompt token": a negative term is
// subtracted.
TEST(Analyse, ANegativeTermOfTheFitIsSubtracted) {
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int i = 0; i < 24; ++i) {
    const int prompt = 100 + 100 * (i % 6);
    const int inflight = i % 4;
    rs.push_back(rec(t += 10, 900, 400 - 0.2 * prompt + 60 * inflight + (i % 5) * 7, prompt, inflight));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit && g.fit->prompt_varies && g.fit->in_flight_varies);
  ASSERT_LT(g.fit->b_ms_per_token, 0);
  ReportInput in;
  in.groups = {g};
  const auto md = render_markdown(in);
  EXPECT_NE(md.find(fmt::format("TTFT fit: {:.1f} ms - {:.3f}", g.fit->a_ms, -g.fit->b_ms_per_token)),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(fmt::format(" ms/prompt token + {:.1f}", g.fit->c_ms_per_in_flight)), std::string::npos) << md;
  EXPECT_EQ(md.find("+ -"), std::string::npos) << md;
}

TEST(Analyse, ANegativeInterceptIsCommentedOn) {
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int p = 1; p <= 6; ++p) rs.push_back(rec(t += 10, 900, -300 + 1.0 * p * 200, p * 200, 0));
  ReportInput in;
  in.table = RowTable(GroupBy::kModel);
  for (const auto& r : rs) in.table.add(r);
  in.groups = analyse(rs, {});
  ASSERT_LT(in.groups.at(0).fit->a_ms, 0);
  EXPECT_NE(render_markdown(in).find("The intercept is negative"), std::string::npos);
}

// Issue 25: llama.cpp sends its response head with the first token, so TTFB at 94% of TTFT said
// "transport" although the network had nothing to do with it.
TEST(Ranking, AHeadThatComesWithTheFirstTokenIsNotTransport) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 10; ++i) {
    auto r = rec(i * 1000, 3000, 2000, 16, 0);
    r.ttfb_ms = 1880;
    rs.push_back(r);
  }
  auto g = analyse(rs, {}).at(0);
  auto transport =
      std::find_if(g.ranking.begin(), g.ranking.end(), [](const Candidate& c) { return c.name == "transport"; });
  ASSERT_NE(transport, g.ranking.end());
  EXPECT_EQ(transport->score, 0);
  ASSERT_FALSE(transport->evidence.empty());
  EXPECT_NE(transport->evidence[0].find("holds its head until it has output"), std::string::npos);
  // A head sent before any output that still takes 400 ms is the path to the server: transport.
  for (auto& r : rs) r.ttfb_ms = 400;
  g = analyse(rs, {}).at(0);
  transport =
      std::find_if(g.ranking.begin(), g.ranking.end(), [](const Candidate& c) { return c.name == "transport"; });
  EXPECT_DOUBLE_EQ(transport->score, 2.0);
}

using test_lines::candidate;
using test_lines::llamacpp;

TEST(Render, EmptyCandidatesAreLeftOutAndTheHtmlHasThePercentiles) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 6; ++i) rs.push_back(rec(i * 100, 300, 50 + i, 100, 0));
  ReportInput in;
  in.table = RowTable(GroupBy::kModel);
  for (const auto& r : rs) in.table.add(r);
  in.groups = analyse(rs, {});
  const auto& ranking = in.groups.at(0).ranking;
  const auto empty =
      std::count_if(ranking.begin(), ranking.end(), [](const Candidate& c) { return !shown_in_ranking(c); });
  ASSERT_GT(empty, 0) << "the fixture should have a candidate with nothing to say";
  const auto md = render_markdown(in);
  for (const auto& c : ranking) {
    if (shown_in_ranking(c)) continue;
    EXPECT_EQ(md.find("| " + c.name + " | 0.00 |"), std::string::npos) << c.name;
  }
  const auto html = render_html(in);
  EXPECT_NE(html.find("<table class=\"percentiles\"><thead><tr><th>ms</th><th>requests</th><th>p50</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr><td>TTFT</td>"), std::string::npos);
  for (const auto& c : ranking) {  // the page's ranking leaves them out too
    if (!shown_in_ranking(c)) {
      EXPECT_EQ(html.find("<td>" + c.name + "</td>"), std::string::npos) << c.name;
    }
  }
}

TEST(Ranking, NoStreamingIsNotEnoughEvidence) {
  std::vector<ledger::LedgerRecord> rs{rec(0, 100, std::nullopt, 5, 0), rec(100, 100, std::nullopt, 5, 0)};
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.ranking.at(0).name, "not_enough_evidence");
}

TEST(Analyse, AGroupSpeakingSeveralApisGetsStatisticsPerApi) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 6; ++i) {
    auto r = rec(i * 100, 100, 10.0 + i, 5, 0);
    r.operation = i < 4 ? "chat" : "messages";
    if (i >= 4) r.ttft_ms = 50.0 + i;
    rs.push_back(r);
  }
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.requests, 6u);
  ASSERT_EQ(g.apis.size(), 2u);
  EXPECT_EQ(g.apis[0].operation, "chat");
  EXPECT_EQ(g.apis[0].requests, 4u);
  EXPECT_EQ(g.apis[0].ttft_ms->max, 13.0);
  EXPECT_EQ(g.apis[1].operation, "messages");
  EXPECT_EQ(g.apis[1].ttft_ms->p50, 54.5);
  // One API only: no breakdown (the group's own figures are that API's).
  rs.resize(4);
  EXPECT_TRUE(analyse(rs, {}).at(0).apis.empty());
}

TEST(Analyse, RequestsThatGenerateNothingAreCountedApartAndNeverRanked) {
  std::vector<ledger::LedgerRecord> rs{rec(0, 100, 10.0, 5, 0), rec(100, 100, 12.0, 5, 0)};
  auto models = rec(200, 2, std::nullopt, 0, 0);
  models.operation = "models";
  models.model.reset();
  models.prompt_tokens.reset();
  models.completion_tokens.reset();
  auto emb = rec(300, 7, std::nullopt, 42, 0);
  emb.operation = "embeddings";
  emb.completion_tokens.reset();
  auto health = rec(400, 1, std::nullopt, 0, 0, "http_error");
  health.operation = "other";
  health.completion_tokens.reset();
  rs.push_back(models);
  rs.push_back(emb);
  rs.push_back(health);
  const auto table = rows_from(rs, GroupBy::kModel);
  const auto groups = analyse(table, {});
  ASSERT_EQ(groups.size(), 1u);  // no "(unknown model)" group for GET /v1/models
  EXPECT_EQ(groups[0].requests, 2u);
  const auto others = analyse_others(table, {});
  ASSERT_EQ(others.size(), 3u);
  EXPECT_EQ(others[0].operation, "embeddings");
  EXPECT_EQ(others[0].prompt_tokens_total, 42);
  EXPECT_EQ(others[0].e2e_ms->p50, 7.0);
  EXPECT_EQ(others[1].operation, "models");
  EXPECT_EQ(others[2].operation, "other");
  EXPECT_EQ(others[2].error_rate, 1.0);
}

}  // namespace
}  // namespace mpo::report

namespace mpo::report {
namespace {

std::vector<ledger::LedgerRecord> timed(int n, double lag_every_ms, std::optional<double> lag_of_last) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < n; ++i) {
    auto r = rec(i * 10, 200, 50, 100, 0);
    r.timing_basis = "kernel_rx";
    r.proxy_lag_ms = i + 1 == n && lag_of_last ? *lag_of_last : lag_every_ms;
    rs.push_back(std::move(r));
  }
  return rs;
}

TEST(ReportTiming, TheBasisIsCountedAndTheProxysLagSummarised) {
  auto rs = timed(99, 0.02, 0.5);
  auto loop = rec(2000, 200, 50, 100, 0);
  loop.timing_basis = "loop";
  rs.push_back(loop);
  rs.push_back(rec(3000, 200, 50, 100, 0));  // a line that does not say (sweep, fak, older)
  const auto g = analyse(rs, {}).at(0);
  EXPECT_EQ(g.timing_bases.at("kernel_rx"), 99u);
  EXPECT_EQ(g.timing_bases.at("loop"), 1u);
  EXPECT_EQ(g.timing_bases.size(), 2u);
  ASSERT_TRUE(g.proxy_lag_ms);
  EXPECT_EQ(g.proxy_lag_ms->n, 99u);
  EXPECT_DOUBLE_EQ(g.proxy_lag_ms->max, 0.5);
  const auto t = timing_summary(g);
  EXPECT_NE(t.find("kernel_rx 99, loop 1"), std::string::npos) << t;
  EXPECT_EQ(t.find("warning"), std::string::npos) << t;  // p99 below 1 ms: the proxy kept up
}

TEST(ReportTiming, AProxyLateToReadIsABottleneckTheReportSays) {
  // A tenth of the lines waited 4 ms in the proxy's sockets: the p99 is over the 1 ms line.
  auto rs = timed(90, 0.03, std::nullopt);
  for (auto& r : timed(10, 4.0, std::nullopt)) rs.push_back(std::move(r));
  const auto g = analyse(rs, {}).at(0);
  const auto t = timing_summary(g);
  EXPECT_NE(t.find("**warning**: the proxy itself was a bottleneck"), std::string::npos) << t;
  EXPECT_NE(t.find("up to 4.0 ms"), std::string::npos) << t;
  EXPECT_NE(t.find("stay true"), std::string::npos) << t;  // every line on kernel_rx
  ReportInput in;
  in.sources = {"l.jsonl"};
  in.groups = {g};
  const auto md = render_markdown(in);
  EXPECT_NE(md.find("- timings from: kernel_rx 100;"), std::string::npos) << md;
  const auto js = render_json(in);
  EXPECT_NE(js.find(R"("timing_bases":{"kernel_rx":100})"), std::string::npos) << js;
}

TEST(ReportTiming, LinesThatDoNotSayGiveNoTimingLine) {
  const auto g =
      analyse(std::vector<ledger::LedgerRecord>{rec(0, 200, 50, 100, 0), rec(10, 200, 50, 100, 0)}, {}).at(0);
  EXPECT_TRUE(g.timing_bases.empty());
  EXPECT_FALSE(g.proxy_lag_ms);
  EXPECT_EQ(timing_summary(g), "");
}

}  // namespace
}  // namespace mpo::report

namespace mpo::report {
namespace {

// `n` streamed fak rows back to back, a second each, none with completed_at; `extra`: more fields
// (invented from docs/FAK.md 1.1: fak omits fields that are zero).
std::string fak_rows(int n, std::string_view extra) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text +=
        fmt::format(R"({{"schema":"fak-model-perf/1","timestamp":"2026-08-22T07:16:{:02d}.000000Z","request_id":"r{}",)"
                    R"("model":"qwen3","status":200,"streaming":true,"prompt_tokens":20,"completion_tokens":40,)"
                    R"("duration_ms":1000{}}})"
                    "\n",
                    i, i, extra);
  }
  return text;
}

TEST(ReportFak, FakRowsWithoutCompletedAtAreBusyForTheirDurationNotIdle) {
  // Read as zero-length they made the window look idle and "workload" score 2.
  const std::string text = fak_rows(10, R"(,"ttft_ms":100,"tpot_ms":23)");
  const auto read = ledger::read_ledger(text);
  ASSERT_EQ(read.records.size(), 10u);
  const auto g = analyse(read.records, {}).at(0);
  EXPECT_NEAR(g.busy_share, 1.0, 1e-9);
  EXPECT_NEAR(g.window_s, 10.0, 1e-9);
  for (const auto& c : g.ranking) {
    if (c.name == "workload") {
      EXPECT_LT(c.score, 1.0);
    }
  }
}

TEST(ReportFak, StreamedFakRowsWithoutStreamTimingSayWhatIsMissing) {
  // Streamed rows whose ttft_ms and tpot_ms are absent: fak's own report says
  // missing-stream-timing (docs/FAK.md 2.3).
  const std::string text = fak_rows(4, "");
  const auto read = ledger::read_ledger(text);
  const auto g = analyse(read.records, {}).at(0);
  ASSERT_FALSE(g.ranking.empty());
  EXPECT_EQ(g.ranking.front().name, "not_enough_evidence");
  EXPECT_GE(g.ranking.front().score, 1.0);
  const auto& ev = g.ranking.front().evidence;
  ASSERT_FALSE(ev.empty());
  EXPECT_NE(ev.front().find("missing-stream-timing"), std::string::npos) << ev.front();
  EXPECT_NE(ev.front().find("no TTFT or TPOT"), std::string::npos) << ev.front();
}

// Tables read in parallel join in part order: each group lists its rows in the order they were
// added across the parts (the first table's first), a group only some parts have included, and the
// non-generating rows too.
TEST(Rows, PartsJoinedAtOnceKeepEveryGroupsRowsInOrder) {
  RowTable joined;
  std::vector<RowTable> parts(3);
  std::int64_t t = 0;
  auto add = [&t](RowTable& table, const char* model, const char* operation = "chat") {
    auto r = rec(t++, 100, 10.0, 5, 0);
    r.model = model;
    r.operation = operation;
    table.add(r);
  };
  add(joined, "a");
  add(parts[0], "b");
  add(parts[0], "a");
  add(parts[1], "c");  // only the second part has c
  add(parts[1], "a", "embeddings");
  add(parts[2], "b");
  add(parts[2], "a");
  joined.append(std::move(parts));
  EXPECT_EQ(joined.size(), 7u);
  auto starts = [](const RowList& rows) {
    std::vector<std::int64_t> out;
    for (const Row* r : rows) out.push_back(r->started_at_us / 1000);
    return out;
  };
  ASSERT_EQ(joined.groups().size(), 3u);
  EXPECT_EQ(starts(joined.groups().at("a")), (std::vector<std::int64_t>{0, 2, 6}));
  EXPECT_EQ(starts(joined.groups().at("b")), (std::vector<std::int64_t>{1, 5}));
  EXPECT_EQ(starts(joined.groups().at("c")), (std::vector<std::int64_t>{3}));
  EXPECT_EQ(starts(joined.others().at("embeddings")), (std::vector<std::int64_t>{4}));
}

TEST(Rows, PhasesKeepTheirNamesWhenTablesReadInParallelAreJoined) {
  // Two readers number the load points they meet each in their own order; the joined table
  // renumbers the second's rows so every row still names its own point.
  RowTable a, b;
  for (const char* point : {"concurrency=1", "concurrency=2"}) {
    auto r = rec(0, 100, 10.0, 5, 0);
    r.sweep_point = point;
    a.add(r);
  }
  for (const char* point : {"concurrency=4", "concurrency=2", "concurrency=4"}) {
    auto r = rec(0, 100, 10.0, 5, 0);
    r.sweep_point = point;
    b.add(r);
  }
  a.add(rec(0, 100, 10.0, 5, 0));  // a line that names no point
  a.append(std::move(b));
  std::vector<std::string> names;
  a.for_each([&](const Row& r) { names.emplace_back(a.phase_name(r.phase)); });
  EXPECT_EQ(names, (std::vector<std::string>{"concurrency=1", "concurrency=2", "", "concurrency=4", "concurrency=2",
                                             "concurrency=4"}));
  EXPECT_EQ(sizeof(Row), 104u);  // names as one-byte indexes, the group only in the table's lists
}

// Issue 25: TTFT's parts say only what they can. Against llama.cpp (through the proxy: head at
// 5.4 ms, first token 1.8 ms later, p50) most of TTFT passes before the head, so the split cannot
// separate queue and prefill from the network; a server that answers at once can.
TEST(Render, TtftPartsSayWhatTheSplitCanTell) {
  auto page = [](double ttfb, double ttft) {
    std::vector<ledger::LedgerRecord> rs;
    for (int i = 0; i < 6; ++i) {
      rs.push_back(rec(i * 100, 300, ttft + i, 100, 0));
      rs.back().ttfb_ms = ttfb + i;
    }
    ReportInput in;
    in.table = RowTable(GroupBy::kModel);
    for (const auto& r : rs) in.table.add(r);
    in.groups = analyse(rs, {});
    return render_html(in);
  };
  EXPECT_NE(page(5.4, 7.2).find("Most of TTFT passed before the response head"), std::string::npos);
  EXPECT_NE(page(3.6, 450).find("The head came early and most of TTFT came after it"), std::string::npos);
  EXPECT_NE(page(100, 100.5).find("The head came with the first token"), std::string::npos);
}

}  // namespace
}  // namespace mpo::report
