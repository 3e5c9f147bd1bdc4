// `modelperfobs report` ranks the bottleneck correctly on ledgers the proxy wrote in front of
// `simulate`, one per situation, and its outputs and exit codes behave as documented.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <future>
#include <map>
#include <sstream>
#include <thread>

#include "core/clock.hpp"
#include "core/time.hpp"
#include "support/fixtures.hpp"
#include "support/html_page.hpp"
#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"
#include "support/stack.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

std::string chat(int max_tokens, const std::string& text, bool usage = true) {
  return R"({"messages":[{"role":"user","content":")" + text + R"("}],"max_tokens":)" + std::to_string(max_tokens) +
         R"(,"stream":true)" + (usage ? R"(,"stream_options":{"include_usage":true})" : "") + "}";
}

void concurrently(std::uint16_t port, int n, int max_tokens, const std::string& prefix) {
  std::vector<std::future<HttpResponse>> fs;
  for (int i = 0; i < n; ++i) {
    fs.push_back(std::async(std::launch::async, [=] {
      return http_post(port, "/v1/chat/completions", chat(max_tokens, prefix + " " + std::to_string(i)));
    }));
  }
  for (auto& f : fs) f.get();
}

CliRun run_report(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  return run_cli(args);
}

// The JSON report's only group of a ledger (`extra`: more report flags).
json::object only_group(const std::string& ledger, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--input", ledger, "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = run_report(args);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  const auto doc = json::parse(r.out).as_object();
  EXPECT_EQ(doc.at("schema"), "modelperfobs.report.v1");
  return doc.at("result").at("groups").as_array().at(0).as_object();
}

// The ranking of the only group of a ledger, best first.
std::vector<std::string> ranking(const std::string& ledger) {
  std::vector<std::string> names;
  const auto group = only_group(ledger);  // a local: range-for over a temporary's member dangles
  for (const auto& c : group.at("ranking").as_array()) {
    names.emplace_back(c.as_object().at("candidate").as_string());
  }
  return names;
}

TEST(ReportRanking, SaturationRanksQueueingFirst) {
  Stack s;
  http_post(s.sim.port, "/scenario?name=saturation", "");
  concurrently(s.proxy.port, 8, 4, "saturated");
  s.stop_proxy();
  EXPECT_EQ(ranking(s.ledger_path()).at(0), "queueing");
}

TEST(ReportRanking, LongPromptsOnAnIdleEngineRankPrefillFirst) {
  Stack s;
  for (int i = 0; i < 5; ++i) {
    std::string prompt;
    for (int w = 0; w < 4000; ++w) {  // distinct words per request: no prefix-cache hits
      prompt += 'w';
      prompt += std::to_string((w * 7 + i * 13) % 997);
      prompt += ' ';
    }
    http_post(s.proxy.port, "/v1/chat/completions", chat(2, prompt));
  }
  s.stop_proxy();
  EXPECT_EQ(ranking(s.ledger_path()).at(0), "prefill");
}

TEST(ReportRanking, ASlowDecodeProfileRanksDecodeFirst) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/slow.json", R"({"engine":{"step_base_s":0.15}})");
  Stack s({"--profile", dir + "/slow.json"});
  concurrently(s.proxy.port, 3, 8, "slow decode");
  s.stop_proxy();
  EXPECT_EQ(ranking(s.ledger_path()).at(0), "decode");
}

// Issue 20: with the engine's own snapshots beside the ledger (as `proxy --scrape` writes them), a
// speculatively decoding engine's acceptance joins the decode evidence: TPOT follows acceptance.
TEST(ReportRanking, SpeculativeAcceptanceFromTheScrapeFileJoinsTheDecodeEvidence) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/spec.json", R"({"engine":{"step_base_s":0.05,"num_speculative_tokens":4,"spec_acceptance":0.5}})");
  Stack s({"--profile", dir + "/spec.json"});
  const std::string snaps = s.dir + "/ledger.scrape.jsonl";  // where the proxy's --scrape writes
  const std::string url = "http://127.0.0.1:" + std::to_string(s.sim.port) + "/metrics";
  ASSERT_EQ(run_cli({"scrape", "--url", url, "--output", snaps, "--format", "none", "--quiet"}).exit_code, 0);
  concurrently(s.proxy.port, 3, 12, "speculating");
  ASSERT_EQ(run_cli({"scrape", "--url", url, "--output", snaps, "--format", "none", "--quiet"}).exit_code, 0);
  s.stop_proxy();
  auto evidence = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"--input", s.ledger_path(), "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_report(args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::string all;
    const json::value doc = json::parse(r.out);
    for (const auto& c : doc.at("result").at("groups").as_array()[0].at("ranking").as_array()) {
      if (c.at("candidate") != "decode") continue;
      for (const auto& e : c.at("evidence").as_array()) all += std::string(e.as_string()) + "\n";
    }
    return all;
  };
  const std::string found = evidence({});
  EXPECT_NE(found.find("the engine decoded speculatively over"), std::string::npos) << found;
  EXPECT_NE(found.find("of draft tokens accepted"), std::string::npos) << found;
  EXPECT_NE(found.find("vllm:spec_decode_num_accepted_tokens_total"), std::string::npos) << found;
  EXPECT_EQ(evidence({"--scrapes", "none"}).find("speculatively"), std::string::npos);
}

// Issue 37: the engine's own counters over the run (the proxy's --scrape file beside its ledger)
// join the queueing evidence, and decide it where the lines carry no per-request split.
struct ScrapedStack {
  explicit ScrapedStack(std::vector<std::string> sim_args = {})
      : sim(std::move(sim_args)),
        proxy("http://127.0.0.1:" + std::to_string(sim.port), dir + "/ledger.jsonl",
              {"--scrape", "http://127.0.0.1:" + std::to_string(sim.port) + "/metrics", "--scrape-interval", "50ms"}) {
    // Traffic only once the first scrape is written: a window that begins after the first requests
    // leaves their counts out (the queue-time histogram counted 4 of 6 waits, 16 of 18 requests,
    // in a fresh clone's CI run; fifty-second session). Paced by round trips, never by time.
    const std::string snaps = dir + "/ledger.scrape.jsonl";
    for (int i = 0; i < 2000 && read_lines(snaps).empty(); ++i) http_get(sim.port, "/v1/models");
  }
  // Stops the proxy once a scrape that began after the traffic is in the file (the file is written
  // in batches: a count of new lines may be older scrapes), so the window holds every request's
  // counts; waits on the file, paced by round trips, never on time.
  void stop_after_a_scrape() {
    await_scrape_since(dir + "/ledger.scrape.jsonl", format_rfc3339_us(SystemClock::instance().wall_us()),
                       [&] { http_get(sim.port, "/v1/models"); });
    EXPECT_EQ(proxy.process.terminate(), 0);
  }
  std::string dir = make_temp_dir();
  Simulator sim;
  Proxy proxy;
};

// The ranking of a ledger's only group: candidate -> (score, evidence joined by newlines).
std::map<std::string, std::pair<double, std::string>> candidates(const std::string& ledger,
                                                                 std::vector<std::string> extra = {}) {
  std::map<std::string, std::pair<double, std::string>> out;
  const auto group = only_group(ledger, std::move(extra));
  for (const auto& c : group.at("ranking").as_array()) {
    std::string all;
    for (const auto& e : c.at("evidence").as_array()) all += std::string(e.as_string()) + "\n";
    out[std::string(c.at("candidate").as_string())] = {c.at("score").to_number<double>(), all};
  }
  return out;
}

TEST(ReportFromEngineCounters, SaturationQuotesTheEnginesQueueTimeAndGauges) {
  ScrapedStack s;
  http_post(s.sim.port, "/scenario?name=saturation", "");
  concurrently(s.proxy.port, 8, 4, "saturated");
  s.stop_after_a_scrape();
  const auto c = candidates(s.dir + "/ledger.jsonl");
  EXPECT_EQ(ranking(s.dir + "/ledger.jsonl").at(0), "queueing");
  const std::string& q = c.at("queueing").second;
  EXPECT_GE(c.at("queueing").first, 1) << q;
  EXPECT_NE(q.find("the engine's queue-time histogram (vllm:request_queue_time_seconds) over"), std::string::npos) << q;
  EXPECT_NE(q.find("the engine's waiting gauge (vllm:num_requests_waiting) over"), std::string::npos) << q;
  EXPECT_NE(q.find("requests running (vllm:num_requests_running)"), std::string::npos) << q;
  // Without the scrape file the same ledger is judged from the client side alone.
  const auto alone = candidates(s.dir + "/ledger.jsonl", {"--scrapes", "none"});
  EXPECT_EQ(alone.at("queueing").second.find("queue-time histogram"), std::string::npos);
}

// One client, prompts prefilled at 500 tok/s: the client-side estimate (1,000 tok/s) calls half a
// second of each TTFT queueing and crosses; the engine, which queued nothing, holds it under.
TEST(ReportFromEngineCounters, OneClientWithASlowPrefillIsNotQueueingWhenTheEngineQueuedNothing) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/slow-prefill.json", R"({"engine":{"step_per_prefill_token_s":0.002}})");
  ScrapedStack s({"--profile", dir + "/slow-prefill.json"});
  for (int i = 0; i < 3; ++i) {
    std::string prompt;
    for (int w = 0; w < 750; ++w) prompt += "v" + std::to_string((w * 11 + i * 17) % 991) + " ";
    http_post(s.proxy.port, "/v1/chat/completions", chat(2, prompt));
  }
  s.stop_after_a_scrape();
  const auto alone = candidates(s.dir + "/ledger.jsonl", {"--scrapes", "none"});
  ASSERT_GE(alone.at("queueing").first, 1)
      << "the situation no longer fools the estimate: " << alone.at("queueing").second;
  const auto c = candidates(s.dir + "/ledger.jsonl");
  EXPECT_LT(c.at("queueing").first, 1) << c.at("queueing").second;
  EXPECT_NE(c.at("queueing").second.find("disagrees with the engine's own numbers"), std::string::npos)
      << c.at("queueing").second;
  EXPECT_EQ(ranking(s.dir + "/ledger.jsonl").at(0), "prefill");
}

// Issue 37's verdict situations against `simulate --imitate llamacpp` (the head when a slot starts
// the request, `timings` at the end), as RealLlamaCppVerdicts.* run them against the real server:
// requests without usage, so token counts and the split come from the engine's timings.
json::object simulated_llamacpp_group(const std::string& profile_json, int clients, int each, int words,
                                      int max_tokens) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json", profile_json);
  Stack s({"--profile", dir + "/profile.json", "--imitate", "llamacpp"});
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      for (int i = 0; i < each; ++i) {
        std::string prompt = "c" + std::to_string(c) + "r" + std::to_string(i);
        for (int w = 0; w < words; ++w) prompt += " x" + std::to_string((w * 13 + c * 101 + i * 7) % 997);
        const auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(max_tokens, prompt, false));
        EXPECT_EQ(r.status, 200);
      }
    });
  }
  for (auto& t : threads) t.join();
  s.stop_proxy();
  return only_group(s.ledger_path());
}

double score_of(const json::object& g, std::string_view name) {
  for (const auto& c : g.at("ranking").as_array()) {
    if (c.at("candidate").as_string() == name) return c.at("score").to_number<double>();
  }
  return -1;
}

std::string ranking_text(const json::object& g) { return json::serialize(g.at("ranking")); }

TEST(ReportAgainstSimulatedLlamaCpp, MoreClientsThanSlotsIsQueueingNeverTransport) {
  const auto g = simulated_llamacpp_group(R"({"engine":{"max_num_seqs":2,"step_base_s":0.02}})", 8, 1, 10, 40);
  EXPECT_EQ(g.at("token_sources").at("server_timings"), 8);
  const auto& split = g.at("engine_split").as_object();
  EXPECT_EQ(split.at("head_rule"), "slot_start") << json::serialize(split);
  EXPECT_EQ(g.at("ranking").as_array().at(0).at("candidate"), "queueing") << ranking_text(g);
  EXPECT_LT(score_of(g, "transport"), 1.0) << ranking_text(g);
  // The head waited for the slot: TTFB is the wait, TTFT - TTFB the engine's prefill.
  EXPECT_GT(g.at("ttfb_ms").at("p50").to_number<double>(), 500) << json::serialize(g.at("ttfb_ms"));
}

TEST(ReportAgainstSimulatedLlamaCpp, OneClientWithLongPromptsIsPrefillAndNotQueueing) {
  const auto g =
      simulated_llamacpp_group(R"({"engine":{"max_num_seqs":1,"step_per_prefill_token_s":0.002}})", 1, 3, 750, 2);
  EXPECT_EQ(g.at("ranking").as_array().at(0).at("candidate"), "prefill") << ranking_text(g);
  EXPECT_LT(score_of(g, "queueing"), 0.5) << ranking_text(g);
  EXPECT_LT(score_of(g, "transport"), 1.0) << ranking_text(g);
}

TEST(ReportAgainstSimulatedLlamaCpp, AsManyClientsAsSlotsWithLongOutputsIsNothingButDecode) {
  const auto g = simulated_llamacpp_group(R"({"engine":{"max_num_seqs":4,"step_base_s":0.02}})", 4, 1, 10, 100);
  for (const auto& c : g.at("ranking").as_array()) {
    if (c.at("candidate") == "decode") continue;
    EXPECT_LT(c.at("score").to_number<double>(), 1.0) << ranking_text(g);
  }
}

TEST(ReportAgainstSimulatedLlamaCpp, AnIdleEngineCrossesNothing) {
  const auto g = simulated_llamacpp_group(R"({"engine":{"max_num_seqs":4}})", 1, 6, 10, 8);
  for (const auto& c : g.at("ranking").as_array()) {
    if (c.at("candidate") == "workload") continue;  // one client with pauses may leave it idle
    EXPECT_LT(c.at("score").to_number<double>(), 1.0) << ranking_text(g);
  }
}

// A proxy in front of an engine nobody asked for output (model lists: what monitors and health
// checks send) left a ledger with nothing to rank: the report says so, with what it did read,
// and exits 4 (could not judge), not 0 and not a complaint about a --since/--until never given.
TEST(ReportRanking, ALedgerOfCallsThatGenerateNothingCannotBeJudged) {
  Stack s;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(http_get(s.proxy.port, "/v1/models").status, 200);
  s.stop_proxy();
  const auto r = run_cli_with_stderr("report --input " + s.ledger_path());
  EXPECT_EQ(r.exit_code, 4) << r.out;
  EXPECT_NE(r.out.find("none of the 3 observations is a request that generates output (models 3)"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("--since"), std::string::npos) << r.out;
}

// As RealLlamaCppVerdicts.ClientsThatGiveUpInTheQueueAreNotHiddenFromTtft: one slot held by a long
// answer, three clients (naming no model) that leave after 300 ms, before a first token could come.
TEST(ReportAgainstSimulatedLlamaCpp, ClientsThatGiveUpInTheQueueAreNotHiddenFromTtft) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json", R"({"engine":{"max_num_seqs":1,"step_base_s":0.02}})");
  Stack s({"--profile", dir + "/profile.json", "--imitate", "llamacpp"});
  std::thread holder(
      [&] { EXPECT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat(40, "holder")).status, 200); });
  // The slot is busy once the engine says so (its gauge, not a time).
  for (;;) {
    const auto m = read_exposition(http_get(s.sim.port, "/metrics").body);
    if (m.find("vllm:num_requests_running").value_or(0) >= 1) break;
  }
  std::vector<std::thread> quitters;
  for (int i = 0; i < 3; ++i) {
    quitters.emplace_back([&, i] {
      const auto r = chat_giving_up_after(s.proxy.port, chat(8, "quitter " + std::to_string(i)), 300);
      EXPECT_EQ(r.us_until("data: "), -1) << "a first event came: the slot was free";
    });
  }
  for (auto& t : quitters) t.join();
  holder.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat(4, "after")).status, 200);
  s.stop_proxy();
  const auto r = run_report({"--input", s.ledger_path(), "--format", "json", "--slo", "ttft_p95_ms=250"});
  EXPECT_EQ(r.exit_code, 3) << r.out;
  const auto doc = json::parse(r.out).as_object();
  const auto& groups = doc.at("result").at("groups").as_array();
  ASSERT_EQ(groups.size(), 1u) << r.out;
  const auto& g = groups.at(0).as_object();
  EXPECT_EQ(g.at("requests").to_number<int>(), 8);
  EXPECT_EQ(g.at("unnamed_model_requests").to_number<int>(), 3);
  EXPECT_EQ(g.at("left_before_first_token_ms").at("n").to_number<int>(), 3);
  const auto& slo = doc.at("result").at("slos").as_array().at(0).as_object();
  EXPECT_TRUE(slo.at("value_is_lower_bound").as_bool()) << json::serialize(slo);
}

// As RealLlamaCppVerdicts.ClientsThatDoNotStreamAreJudgedFromTheEnginesTimings: six clients that do
// not stream, two slots. llama.cpp's whole body carries its `timings` (the simulator's since the
// forty-sixth session: before, its bodies were vLLM's, without them), so the wait for a slot is read
// as what the engine did not spend on the request. The clients name a model the simulator does not
// serve: llama.cpp answers any name.
TEST(ReportAgainstSimulatedLlamaCpp, ClientsThatDoNotStreamAreJudgedFromTheEnginesTimings) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json", R"({"engine":{"max_num_seqs":2,"step_base_s":0.005}})");
  Stack s({"--profile", dir + "/profile.json", "--imitate", "llamacpp"});
  std::vector<std::thread> clients;
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 2; ++i) {
        const auto r =
            http_post(s.proxy.port, "/v1/chat/completions",
                      R"({"model":"real-llama","messages":[{"role":"user","content":"client )" + std::to_string(c) +
                          " request " + std::to_string(i) + R"("}],"max_tokens":60,"ignore_eos":true})");
        EXPECT_EQ(r.status, 200) << r.body;
      }
    });
  }
  for (auto& t : clients) t.join();
  s.stop_proxy();
  const auto g = only_group(s.ledger_path());
  EXPECT_EQ(g.at("streamed").to_number<int>(), 0) << json::serialize(g);
  EXPECT_EQ(g.at("token_sources").at("usage"), 12) << json::serialize(g.at("token_sources"));
  const auto& split = g.at("engine_split").as_object();
  EXPECT_EQ(split.at("source"), "llama.cpp timings (not streamed)") << json::serialize(split);
  EXPECT_EQ(split.at("requests").to_number<int>(), 12);
  EXPECT_EQ(g.at("ranking").as_array().at(0).at("candidate"), "queueing") << ranking_text(g);
  // The engine's own waits (its truth: scheduled - arrival), against the report's reading of them.
  std::vector<double> waits;
  for (const auto& line : read_lines(s.dir + "/truth.jsonl")) {
    const auto t = json::parse(line).as_object();
    waits.push_back(static_cast<double>(*parse_rfc3339(t.at("scheduled_at").as_string()) -
                                        *parse_rfc3339(t.at("arrival_at").as_string())) /
                    1000);
  }
  ASSERT_EQ(waits.size(), 12u);
  std::sort(waits.begin(), waits.end());
  const double truth_p50 = (waits[5] + waits[6]) / 2;
  ASSERT_GT(truth_p50, 100) << "four clients wait for two answers of 60 steps";
  EXPECT_NEAR(split.at("wait_ms").at("p50").to_number<double>(), truth_p50, 0.1 * truth_p50 + 10)
      << json::serialize(split);
  EXPECT_NEAR(g.at("engine_tpot_ms").at("p50").to_number<double>(), 5, 2) << json::serialize(g.at("engine_tpot_ms"));
}

// Load that came and went: one client asking short answers (ten), then four clients asking long
// ones (two each) of an engine with two slots. Returns when the second phase began (wall µs).
std::int64_t calm_then_busy(std::uint16_t port) {
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(http_post(port, "/v1/chat/completions", chat(20, "calm " + std::to_string(i), false)).status, 200);
  }
  const std::int64_t busy_from_us = SystemClock::instance().wall_us();
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < 2; ++i) {
        const auto r = http_post(port, "/v1/chat/completions",
                                 R"({"messages":[{"role":"user","content":"busy )" + std::to_string(c) + " " +
                                     std::to_string(i) + R"("}],"max_tokens":150,"ignore_eos":true,"stream":true})");
        EXPECT_EQ(r.status, 200);
      }
    });
  }
  for (auto& t : clients) t.join();
  return busy_from_us;
}

// The requests the engine's truth says waited (scheduled - arrival) longer than `over_us`.
int truth_waits_over(const std::string& truth, std::int64_t over_us) {
  int n = 0;
  for (const auto& line : read_lines(truth)) {
    const auto t = json::parse(line).as_object();
    const auto wait_us =
        *parse_rfc3339(t.at("scheduled_at").as_string()) - *parse_rfc3339(t.at("arrival_at").as_string());
    n += wait_us > over_us ? 1 : 0;
  }
  return n;
}

constexpr const char* kTwoQuickSlots = R"({"engine":{"max_num_seqs":2,"step_base_s":0.005}})";

// As RealLlamaCppVerdicts.AQueueThatCameWithTheLoadIsNamedAndDatedToItsPhase: the queue of the busy
// phase is named beside a verdict that does not cross, and its requests are those the simulator's
// truth says waited past the threshold.
TEST(ReportAgainstSimulatedLlamaCpp, AQueueThatCameWithTheLoadIsNamedAndDatedToItsPhase) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json", kTwoQuickSlots);
  Stack s({"--profile", dir + "/profile.json", "--imitate", "llamacpp"});
  const std::int64_t busy_from_us = calm_then_busy(s.proxy.port);
  s.stop_proxy();
  // A margin over the report's 500 ms: its wait adds the network and the proxy.
  const int waited = truth_waits_over(s.dir + "/truth.jsonl", 550'000);
  const auto g = only_group(s.ledger_path());
  EXPECT_LT(score_of(g, "queueing"), 1.0) << ranking_text(g);
  const auto& q = g.at("engine_split").at("queued_at_times");
  ASSERT_TRUE(q.is_object()) << ranking_text(g);
  EXPECT_GE(waited, 3);
  EXPECT_NEAR(q.at("requests").to_number<int>(), waited, 1) << json::serialize(q);
  EXPECT_GE(*parse_rfc3339(q.at("first_start").as_string()), busy_from_us) << json::serialize(q);
  EXPECT_GE(q.at("in_flight_p50").to_number<double>(), 2) << json::serialize(q);
  const auto md = run_report({"--input", s.ledger_path()});
  EXPECT_NE(md.out.find("Also, below: requests that waited for a slot at times (**Queue at times**)"),
            std::string::npos)
      << md.out;
}

// Streams that decoded slowly only while more of them shared the engine's batches: ten alone at
// 35 ms a token (a step of 5 ms and 30 ms for each sequence decoding), then six at once at about
// 185 ms. The median stream decoded within the decode threshold, so the verdict does not cross, and
// the report names the six beside it: as many as the simulator's truth says decoded slower than
// 100 ms a token, started in the busy phase with more requests in flight.
TEST(ReportAgainstSimulator, ADecodeSlowOnlyUnderLoadIsNamedBesideTheVerdict) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json",
             R"({"engine":{"max_num_seqs":16,"step_base_s":0.005,"step_per_decode_seq_s":0.03}})");
  Stack s({"--profile", dir + "/profile.json"});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat(6, "alone " + std::to_string(i))).status, 200);
  }
  const std::int64_t busy_from_us = SystemClock::instance().wall_us();
  concurrently(s.proxy.port, 6, 6, "together");
  s.stop_proxy();
  int slow = 0;  // by the engine's own clock: (last token - first token) / the tokens after the first
  for (const auto& line : read_lines(s.dir + "/truth.jsonl")) {
    const auto t = json::parse(line).as_object();
    const double decode_us = static_cast<double>(*parse_rfc3339(t.at("last_token_at").as_string()) -
                                                 *parse_rfc3339(t.at("first_token_at").as_string()));
    slow += decode_us / (t.at("completion_tokens").to_number<double>() - 1) > 100'000 ? 1 : 0;
  }
  EXPECT_EQ(slow, 6);
  const auto g = only_group(s.ledger_path());
  EXPECT_LT(score_of(g, "decode"), 1.0) << ranking_text(g);
  const auto& d = g.at("slow_decode_at_times");
  ASSERT_TRUE(d.is_object()) << ranking_text(g);
  EXPECT_EQ(d.at("requests").to_number<int>(), slow) << json::serialize(d);
  EXPECT_EQ(d.at("of").to_number<int>(), 16) << json::serialize(d);
  EXPECT_GE(*parse_rfc3339(d.at("first_start").as_string()), busy_from_us) << json::serialize(d);
  EXPECT_GT(d.at("in_flight_p50").to_number<double>(), d.at("others_in_flight_p50").to_number<double>());
  const auto md = run_report({"--input", s.ledger_path()});
  EXPECT_NE(md.out.find("**Decode slow at times**: 6 of 16 requests (38%) decoded slower than 100 ms a token"),
            std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("Decode slowed when more requests shared the engine's batches"), std::string::npos) << md.out;
}

// The same load in front of the vLLM-shaped simulator, whose lines carry no per-request split: the
// engine's queue-time histogram (scraped) counts the requests past its 0.5 s bucket, the same
// number its truth says waited that long, and the report names them beside its verdict.
TEST(ReportFromEngineCounters, TheQueueTimeHistogramNamesAQueueThatCameWithTheLoad) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/profile.json", kTwoQuickSlots);
  ScrapedStack s({"--profile", dir + "/profile.json", "--truth", dir + "/truth.jsonl"});
  calm_then_busy(s.proxy.port);
  s.stop_after_a_scrape();
  const int waited = truth_waits_over(dir + "/truth.jsonl", 500'000);
  const auto g = only_group(s.dir + "/ledger.jsonl");
  EXPECT_LT(score_of(g, "queueing"), 1.0) << ranking_text(g);
  const auto& q = g.at("engine_queue_time");
  ASSERT_TRUE(q.is_object()) << json::serialize(g);
  EXPECT_GE(waited, 3);
  EXPECT_EQ(q.at("over").to_number<int>(), waited) << json::serialize(q);
  EXPECT_EQ(q.at("over_bound_ms").to_number<double>(), 500) << json::serialize(q);
  const auto md = run_report({"--input", s.dir + "/ledger.jsonl"});
  EXPECT_NE(md.out.find(fmt::format("**Queue at times**: {} of the 18 requests the engine finished over", waited)),
            std::string::npos)
      << md.out;
}

// A proxy that scraped on for minutes after its traffic: the engine's gauges are read over the
// scrapes that bracket the report's requests, not diluted by the idle time after them (before, a
// sweep's ledger reported "above zero 0% of the time" over 1457.8 s for a 14.6 s run).
TEST(ReportFromEngineCounters, TheGaugesAreReadOverTheRequestsNotTheScrapesAfterThem) {
  const std::string dir = make_temp_dir();
  const std::string name = "llamacpp/llamacpp_b10309_small-random_np2_c1-4";
  write_file(dir + "/run.jsonl", read_fixture(name + ".jsonl"));
  std::string scrapes = read_fixture(name + ".scrape.jsonl");
  const auto gauge = [&](const std::string& ledger) {
    const auto out = run_report({"--input", ledger}).out;
    const auto at = out.find("the engine's waiting gauge");
    return at == std::string::npos ? std::string() : out.substr(at, out.find(';', at) - at);
  };
  write_file(dir + "/run.scrape.jsonl", scrapes);
  const std::string as_scraped = gauge(dir + "/run.jsonl");
  ASSERT_NE(as_scraped, "");
  // Half a minute of idle scrapes after the run, every 250 ms (the capture's interval): copies of
  // the last, later. The window takes one of them, the first at or after the last request's end.
  auto last = json::parse(read_lines(dir + "/run.scrape.jsonl").back()).as_object();
  for (int k = 1; k <= 120; ++k) {
    auto idle = last;
    idle["seq"] = last.at("seq").to_number<int>() + k;
    for (const char* key : {"scheduled_at", "scrape_started_at", "scrape_ended_at"}) {
      idle[key] = format_rfc3339_us(*parse_rfc3339(last.at(key).as_string()) + k * 250'000LL);
    }
    scrapes += json::serialize(idle) + "\n";
  }
  write_file(dir + "/run.scrape.jsonl", scrapes);
  const std::string with_idle = gauge(dir + "/run.jsonl");
  EXPECT_NE(as_scraped.find("over 13.7 s between scrapes 5 and 51: max 2, time-weighted mean 0.65, above zero 44%"),
            std::string::npos)
      << as_scraped;
  EXPECT_NE(with_idle.find("over 14.0 s between scrapes 5 and 52: max 2, time-weighted mean 0.64, above zero 43%"),
            std::string::npos)
      << with_idle;
}

TEST(ReportRanking, FaultsRankErrorsFirst) {
  Stack s;
  http_post(s.sim.port, "/scenario?name=faults", "");
  concurrently(s.proxy.port, 30, 4, "faulty");
  s.stop_proxy();
  EXPECT_EQ(ranking(s.ledger_path()).at(0), "errors");
}

TEST(ReportRanking, ASingleSlowClientWithPausesRanksWorkloadFirst) {
  Stack s;
  for (int i = 0; i < 6; ++i) {
    http_post(s.proxy.port, "/v1/chat/completions", chat(3, "pausing client " + std::to_string(i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the client's think time, the scenario itself
  }
  s.stop_proxy();
  EXPECT_EQ(ranking(s.ledger_path()).at(0), "workload");
}

TEST(Report, MarkdownCsvSloExitCodeAndBadInput) {
  Stack s;
  concurrently(s.proxy.port, 4, 3, "plain");
  s.stop_proxy();
  auto md = run_report({"--input", s.ledger_path()});
  EXPECT_EQ(md.exit_code, 0);
  EXPECT_NE(md.out.find("# modelperfobs report"), std::string::npos);
  EXPECT_NE(md.out.find("| TTFT |"), std::string::npos);
  auto csv = run_report({"--input", s.ledger_path(), "--format", "csv"});
  EXPECT_EQ(csv.out.substr(0, 15), "group,requests,");
  auto slo = run_report({"--input", s.ledger_path(), "--slo", "ttft_p95_ms=1,error_rate=0.5"});
  EXPECT_EQ(slo.exit_code, 3);
  EXPECT_NE(slo.out.find("**violated**"), std::string::npos);
  EXPECT_EQ(run_report({"--input", s.ledger_path(), "--slo", "ttft_p95_ms=60000"}).exit_code, 0);
  EXPECT_EQ(run_report({"--input", s.dir + "/no-such.jsonl"}).exit_code, 1);
  EXPECT_EQ(run_report({"--input", s.ledger_path(), "--slo", "nonsense"}).exit_code, 2);
}

// Issue 25, before and after: the two halves of one run are never a regression beyond a bound;
// an engine made slower is, and `--max-regression` turns it into exit 3 (a CI gate).
TEST(ReportBaseline, HalvesOfOneRunPassAndASlowerEngineFailsTheGate) {
  const std::string dir = make_temp_dir();
  std::string first, second;
  {
    Stack s;
    for (int batch = 0; batch < 4; ++batch) concurrently(s.proxy.port, 10, 4, "same " + std::to_string(batch));
    s.stop_proxy();
    std::istringstream lines(read_file(s.ledger_path()));
    std::string line;
    for (int i = 0; std::getline(lines, line); ++i) (i < 20 ? first : second) += line + "\n";
  }
  write_file(dir + "/first.jsonl", first);
  write_file(dir + "/second.jsonl", second);
  auto same = run_report({"--input", dir + "/second.jsonl", "--baseline", dir + "/first.jsonl", "--format", "json",
                          "--max-regression", "ttft_p50_ms=50%,e2e_p50_ms=50%"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  auto doc = json::parse(same.out).as_object();
  const auto& cmp = doc["result"].as_object()["comparison"].as_object();
  EXPECT_TRUE(cmp.at("gate_failures").as_array().empty());
  const auto& changes = cmp.at("groups").as_array().at(0).as_object().at("changes").as_array();
  EXPECT_EQ(changes.size(), 17u);
  for (const auto& c : changes) {
    const auto& metric = c.as_object().at("metric").as_string();
    if (metric == "ttft_p99_ms") {
      EXPECT_EQ(c.as_object().at("verdict"), "not enough data");  // 20 requests
    }
  }
  // Issue 38: a bound that cannot be judged is not a pass (it exited 0): exit 4, said on stderr.
  const auto unjudged =
      run_cli_with_stderr("report --input " + dir + "/second.jsonl --baseline " + dir +
                          "/first.jsonl --format json --output " + dir + "/r.json --max-regression ttft_p99_ms=10%");
  EXPECT_EQ(unjudged.exit_code, 4) << unjudged.out;
  EXPECT_NE(unjudged.out.find("could not judge a --max-regression bound (not enough data) (exit 4)"), std::string::npos)
      << unjudged.out;

  write_file(dir + "/slow.json", R"({"engine":{"step_base_s":0.08}})");
  Stack slow({"--profile", dir + "/slow.json"});
  for (int batch = 0; batch < 2; ++batch) concurrently(slow.proxy.port, 10, 4, "same " + std::to_string(batch));
  slow.stop_proxy();
  auto worse = run_report(
      {"--input", slow.ledger_path(), "--baseline", dir + "/first.jsonl", "--max-regression", "ttft_p50_ms=10%"});
  EXPECT_EQ(worse.exit_code, 3) << worse.out;
  EXPECT_NE(worse.out.find("## Before and after"), std::string::npos);
  EXPECT_NE(worse.out.find("ttft_p50_ms: +"), std::string::npos) << worse.out;
  // The same comparison on the page: its own section, a table per group with the worse rows marked.
  const std::string page = dir + "/worse.html";
  EXPECT_EQ(run_report({"--input", slow.ledger_path(), "--baseline", dir + "/first.jsonl", "--max-regression",
                        "ttft_p50_ms=10%", "--format", "html", "--output", page})
                .exit_code,
            3);
  const std::string html = read_file(page);
  EXPECT_NE(html.find("<h2>Against the baseline</h2>"), std::string::npos);
  const auto tables = table_headers(html);
  EXPECT_NE(std::find(tables.begin(), tables.end(), "metric|n base / new|baseline|new|change|interval|verdict"),
            tables.end());
  EXPECT_NE(html.find("<tr class=\"worse\"><td>ttft_p50_ms</td>"), std::string::npos);
  EXPECT_EQ(run_report({"--input", slow.ledger_path(), "--max-regression", "ttft_p50_ms=10%"}).exit_code, 2);
  EXPECT_EQ(run_report({"--input", slow.ledger_path(), "--baseline", dir + "/first.jsonl", "--max-regression",
                        "ttft_p51_ms=10%"})
                .exit_code,
            2);
}

TEST(ReportHtml, HeadlessChromiumDrawsEveryChart) {
  Stack s;
  for (int wave = 1; wave <= 3; ++wave) {  // rising concurrency and prompt length: a fit and a time series
    std::vector<std::future<HttpResponse>> fs;
    for (int i = 0; i < wave * 2; ++i) {
      std::string prompt;
      for (int w = 0; w < 50 * (i + 1); ++w) {
        prompt += 'q';
        prompt += std::to_string(wave * 1000 + i * 100 + w);
        prompt += ' ';
      }
      fs.push_back(std::async(std::launch::async, [&, prompt] {
        return http_post(s.proxy.port, "/v1/chat/completions", chat(4, prompt));
      }));
    }
    for (auto& f : fs) f.get();
  }
  s.stop_proxy();
  const std::string html = s.dir + "/report.html";
  ASSERT_EQ(run_report({"--input", s.ledger_path(), "--format", "html", "--output", html}).exit_code, 0);
  const std::string text = read_file(html);
  EXPECT_EQ(text.find("<script"), std::string::npos);  // self-contained, nothing to run
  const Dom dom = dump_dom(html, s.dir + "/chromium");
  EXPECT_EQ(dom.exit_code, 0);
  // What a person sees: every chart with its series, ticks on both axes and the legend beside the
  // plot; tables, not preformatted text (issue 25).
  const auto charts = charts_in(dom.text);
  EXPECT_EQ(chart_problems(charts), "");
  auto chart = [&](const std::string& prefix) -> const ChartSeen* {
    for (const auto& c : charts) {
      if (c.title.rfind(prefix, 0) == 0) return &c;
    }
    ADD_FAILURE() << "no chart '" << prefix << "' among: " << chart_titles(charts);
    return nullptr;
  };
  if (const auto* c = chart("Latency distributions")) {
    for (const char* name : {"TTFT", "TPOT", "ITL p95 per request"}) EXPECT_EQ(c->series.at(name), 12) << name;
  }
  if (const auto* c = chart("TTFT against prompt tokens")) {
    EXPECT_EQ(c->series.at("requests"), 12);  // one dot per request
    EXPECT_EQ(c->series.size(), 2u);          // and the fit's line
  }
  if (const auto* c = chart("End-to-end latency over time")) {
    EXPECT_EQ(c->series.at("requests"), 12);
  }
  if (const auto* c = chart("Requests in flight over time")) {
    EXPECT_EQ(c->series.at("in flight"), 24);  // a step up and down per request
    EXPECT_EQ(c->y_scale, "linear");
  }
  if (const auto* c = chart("Output tokens per second over time")) {
    EXPECT_EQ(c->series.at("output tok/s"), 30);
  }
  const auto tables = table_headers(dom.text);
  bool percentiles = false;
  for (const auto& t : tables) percentiles = percentiles || t == "ms|requests|p50|p90|p95|p99|max";
  EXPECT_TRUE(percentiles) << tables.size() << " tables";
  EXPECT_EQ(dom.count("<pre"), 0u);
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

TEST(Demo, RunsTheWholeChainAndLeavesItsFiles) {
  const std::string dir = make_temp_dir() + "/demo";
  ChildProcess demo({binary_path(), "demo", "--out", dir});
  std::string out;
  try {
    for (;;) out += demo.read_line(120000) + "\n";
  } catch (const std::exception&) {
    // the demo closed stdout: it has finished
  }
  ASSERT_EQ(demo.wait(), 0) << out;
  EXPECT_NE(out.find("phase 5/5: 48 concurrent"), std::string::npos);
  EXPECT_NE(out.find("# modelperfobs report"), std::string::npos);
  EXPECT_NE(out.find("Likely bottleneck:"), std::string::npos);
  EXPECT_NE(out.find("read_json_auto('" + dir + "/model-perf.jsonl')"), std::string::npos);
  const auto ledger = read_lines(dir + "/model-perf.jsonl");
  EXPECT_EQ(ledger.size(), 4u + 6 + 12 + 16 + 48);
  for (const auto& l : ledger) EXPECT_EQ(json::parse(l).as_object().at("outcome"), "ok");
  EXPECT_GE(read_lines(dir + "/truth.jsonl").size(), ledger.size());
  const auto report = json::parse(read_file(dir + "/report.json")).as_object();
  EXPECT_EQ(report.at("schema"), "modelperfobs.report.v1");
  // Every ledger line is an observation of the report (not just the file's existence).
  EXPECT_EQ(report.at("inputs").as_object().at("observations").to_number<std::size_t>(), ledger.size());
  const std::string html = read_file(dir + "/report.html");
  // One group: latency by load level (its five phases), distributions, TTFT vs prompt, e2e and in
  // flight over time, tok/s; every one drawn whole.
  const auto charts = charts_in(html);
  EXPECT_EQ(charts.size(), 6u) << chart_titles(charts);
  EXPECT_EQ(chart_problems(charts), "");
}

}  // namespace
}  // namespace mpo::test
