// `modelperfobs attribute` against the simulator: a repeated prompt in its own window is an
// isolated window with a prefix-cache hit; overlapping requests are a cohort; preemption under KV
// pressure stays with the cohort; the ramp scenario's background traffic contaminates; a restart
// makes the window unavailable.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <thread>

#include "core/go_json.hpp"
#include "support/html_page.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

constexpr const char* kFast =
    R"({"engine":{"step_base_s":0.002,"step_per_prefill_token_s":0.00001,"step_per_decode_seq_s":0.00005}})";

json::object attribute_json(std::vector<std::string> args) {
  args.insert(args.begin(), "attribute");
  args.insert(args.end(), {"--format", "json"});
  auto run = run_cli(args);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  auto doc = json::parse(run.out).as_object();
  EXPECT_EQ(doc.at("schema"), "modelperfobs.attribution.v1");
  return doc;
}

const json::array& windows(const json::object& doc) { return doc.at("result").as_object().at("windows").as_array(); }

std::string chat(std::uint16_t port, const std::string& prompt, int max_tokens) {
  return http_post(port, "/v1/chat/completions",
                   json::serialize(
                       json::object{{"model", "sim-model"},
                                    {"max_tokens", max_tokens},
                                    {"ignore_eos", true},
                                    {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}}}),
                   {{"content-type", "application/json"}})
      .body;
}

// Waits (bounded) until the proxy has recorded `n` more snapshots: the next request starts in a new window.
void wait_snapshots(std::uint16_t sim_port, const std::string& file, std::size_t more) {
  const std::size_t target = read_lines(file).size() + more;
  for (int i = 0; i < 2000 && read_lines(file).size() < target; ++i) http_get(sim_port, "/v1/models");
}

bool contains(const json::value& array, const char* s) {
  for (const auto& v : array.as_array()) {
    if (v.as_string() == s) return true;
  }
  return false;
}

TEST(Attribute, AProbeOfARepeatedPromptIsolatesAPrefixCacheHit) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kFast);
  Simulator sim({"--profile", dir + "/p.json"});
  const auto doc = attribute_json({"--probe", fmt::format("http://127.0.0.1:{}/v1", sim.port), "--model", "sim-model"});
  ASSERT_EQ(windows(doc).size(), 2u);
  const auto& first = windows(doc)[0].as_object();
  const auto& second = windows(doc)[1].as_object();
  EXPECT_EQ(first.at("grade"), "isolated-window");
  EXPECT_EQ(second.at("grade"), "isolated-window");
  EXPECT_EQ(first.at("background_unobserved_requests").to_number<double>(), 0);
  EXPECT_EQ(first.at("counters").as_object().at("prefix_cache_hits").as_object().at("value").to_number<double>(), 0);
  const auto& row = second.at("requests").as_array()[0].as_object();
  EXPECT_TRUE(contains(row.at("causes"), "prefix-cache-hit"));
  EXPECT_GT(row.at("magnitudes").as_object().at("prefix_cache_hits").to_number<double>(), 0);
  EXPECT_EQ(doc.at("validity").as_object().at("valid"), true);
  EXPECT_EQ(second.at("server").as_object().at("engine"), "vllm");
}

TEST(Attribute, AProbeSpeakingTheResponsesApiIsolatesTheSameHit) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kFast);
  Simulator sim({"--profile", dir + "/p.json"});
  const auto doc = attribute_json(
      {"--probe", fmt::format("http://127.0.0.1:{}/v1", sim.port), "--model", "sim-model", "--api", "responses"});
  ASSERT_EQ(windows(doc).size(), 2u);
  const auto& second = windows(doc)[1].as_object();
  EXPECT_EQ(second.at("grade"), "isolated-window");
  const auto& row = second.at("requests").as_array()[0].as_object();
  EXPECT_TRUE(contains(row.at("causes"), "prefix-cache-hit"));
  EXPECT_EQ(doc.at("validity").as_object().at("valid"), true);
}

TEST(Attribute, SequentialRequestsAreIsolatedOverlappingOnesAreACohort) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kFast);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::string ledger = dir + "/model-perf.jsonl";
  const std::string snaps = dir + "/model-perf.scrape.jsonl";
  {
    Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), ledger,
                {"--scrape", fmt::format("http://127.0.0.1:{}/metrics", sim.port), "--scrape-interval", "50ms"});
    wait_snapshots(sim.port, snaps, 1);
    for (int i = 0; i < 3; ++i) {
      chat(proxy.port, fmt::format("sequential request number {}", i), 8);
      wait_snapshots(sim.port, snaps, 2);
    }
    // Four at once, each ~400 ms long (200 tokens at 2 ms a step): long enough to overlap however
    // late a loaded machine starts a thread (at 40 tokens, 80 ms each, a fresh clone's CI once saw
    // none overlap beside the sanitizer build).
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i)
      threads.emplace_back([&, i] { chat(proxy.port, fmt::format("overlapping {}", i), 200); });
    for (auto& t : threads) t.join();
    wait_snapshots(sim.port, snaps, 2);
    EXPECT_EQ(proxy.process.terminate(), 0);
  }
  const auto doc = attribute_json({"--ledger", ledger, "--window", "per-request"});
  int isolated = 0, cohort = 0;
  for (const auto& w : windows(doc)) {
    const auto& o = w.as_object();
    const auto observed = o.at("overlapping_observed_requests").to_number<double>();
    if (o.at("grade") == "isolated-window") {
      ++isolated;
      EXPECT_EQ(observed, 1);
    }
    if (o.at("grade") == "cohort-only") {
      ++cohort;
      EXPECT_GT(observed, 1);
      EXPECT_TRUE(o.contains("cohort"));
    }
  }
  EXPECT_EQ(isolated, 3) << json::serialize(doc);
  EXPECT_GE(cohort, 1);
  // fak's format: one line per window (the ledger given alone, as a user types it).
  auto fak = run_cli({"attribute", ledger, "--window", "per-request", "--format", "fak"});
  EXPECT_EQ(fak.exit_code, 0);
  EXPECT_EQ(read_lines(ledger).size(), 7u);
  EXPECT_NE(fak.out.find("\"schema\":\"fak-model-perf-attribution/1\""), std::string::npos);
  // The page (issue 25): the windows' table and a chart of them by grade.
  ASSERT_EQ(run_cli({"attribute", "--ledger", ledger, "--window", "per-request", "--format", "html", "--output",
                     dir + "/attribution.html"})
                .exit_code,
            0);
  const std::string page = read_file(dir + "/attribution.html");
  const auto charts = charts_in(page);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(chart_problems(charts), "");
  EXPECT_EQ(charts[0].series.at("isolated-window"), 3);
  const auto tables = table_headers(page);
  ASSERT_FALSE(tables.empty());
  EXPECT_EQ(tables[0], "from|to|grade|observed|background|causes|reason");

  // The JSON names its files with their digests; --verify grades them again and compares.
  const std::string out = dir + "/attribution.json";
  ASSERT_EQ(run_cli({"attribute", "--ledger", ledger, "--window", "per-request", "--format", "json", "--output", out})
                .exit_code,
            0);
  auto ok = run_cli({"attribute", "--verify", out});
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_NE(ok.out.find("attribute verify: OK: "), std::string::npos) << ok.out;
  // A document written before 2026-12-06 has no inputs.calls_left_out: graded again from every line.
  // Read back exactly: Boost.JSON 1.81's parser can land a double one unit in the last place off,
  // which the verify (reading with simdjson, correctly rounded) would rightly call an edit.
  auto old_read = mpo::parse_exact_json(read_file(out));
  ASSERT_TRUE(old_read.ok());
  auto old_doc = std::move(*old_read);
  EXPECT_TRUE(old_doc.at("inputs").as_object().contains("calls_left_out"));
  old_doc.at("inputs").as_object().erase("calls_left_out");
  write_file(dir + "/old.json", mpo::go_marshal_indent(old_doc));
  auto old = run_cli({"attribute", "--verify", dir + "/old.json"});
  EXPECT_EQ(old.exit_code, 0) << old.out;
  std::string text = read_file(out);
  const std::string isolated_grade = "\"grade\": \"isolated-window\"";
  const auto at = text.find(isolated_grade);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, isolated_grade.size(), "\"grade\": \"request-correlated\"");
  write_file(dir + "/edited.json", text);
  auto edited = run_cli({"attribute", "--verify", dir + "/edited.json"});
  EXPECT_EQ(edited.exit_code, 3);
  EXPECT_NE(edited.out.find(".grade: written \"request-correlated\", re-derived \"isolated-window\""),
            std::string::npos)
      << edited.out;
  // A ledger changed after grading: its digest no longer matches.
  write_file(ledger, read_file(ledger) + "\n");
  auto changed = run_cli({"attribute", "--verify", out});
  EXPECT_EQ(changed.exit_code, 3);
  EXPECT_NE(changed.out.find("inputs.ledger_sha256[0]: written"), std::string::npos) << changed.out;
}

TEST(Attribute, PreemptionUnderKvPressureStaysWithTheCohort) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json",
             R"({"engine":{"num_gpu_blocks":16,"block_size":16,"max_model_len":256,"enable_prefix_caching":false,)"
             R"("step_base_s":0.002,"step_per_prefill_token_s":0.00001,"step_per_decode_seq_s":0.00005}})");
  Simulator sim({"--profile", dir + "/p.json"});
  const std::string ledger = dir + "/model-perf.jsonl";
  {
    Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), ledger,
                {"--scrape", fmt::format("http://127.0.0.1:{}/metrics", sim.port), "--scrape-interval", "50ms"});
    wait_snapshots(sim.port, dir + "/model-perf.scrape.jsonl", 1);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back(
          [&, i] { chat(proxy.port, fmt::format("long request {} with a prompt of some words", i), 100); });
    }
    for (auto& t : threads) t.join();
    wait_snapshots(sim.port, dir + "/model-perf.scrape.jsonl", 2);
    EXPECT_EQ(proxy.process.terminate(), 0);
  }
  // One window around everything.
  const auto doc = attribute_json({"--ledger", ledger, "--window", "per-request"});
  bool preemption_in_cohort = false;
  for (const auto& w : windows(doc)) {
    const auto& o = w.as_object();
    if (o.contains("cohort") && contains(o.at("cohort").as_object().at("causes"), "preemption"))
      preemption_in_cohort = true;
    for (const auto& r : o.at("requests").as_array()) {
      EXPECT_FALSE(contains(r.as_object().at("causes"), "preemption")) << "a shared preemption is never a request's";
    }
  }
  EXPECT_TRUE(preemption_in_cohort) << json::serialize(doc);
}

TEST(Attribute, TheRampScenariosBackgroundTrafficContaminates) {
  const std::string dir = make_temp_dir();
  write_file(
      dir + "/p.json",
      R"({"engine":{"step_base_s":0.002,"step_per_prefill_token_s":0.00001,"step_per_decode_seq_s":0.00005},)"
      R"("scenarios":{"ramp":{"duration_s":0.5,"background_requests":32,"background_prompt_tokens":32,"background_output_tokens":8}}})");
  Simulator sim({"--profile", dir + "/p.json"});
  ASSERT_EQ(http_post(sim.port, "/scenario?name=ramp", "", {}).status, 200);
  const auto doc = attribute_json({"--probe", fmt::format("http://127.0.0.1:{}/v1", sim.port), "--model", "sim-model",
                                   "--repeat", "1", "--max-tokens", "64"});
  ASSERT_EQ(windows(doc).size(), 1u);
  const auto& w = windows(doc)[0].as_object();
  EXPECT_EQ(w.at("grade"), "contaminated");
  EXPECT_GT(w.at("background_unobserved_requests").to_number<double>(), 0);
  EXPECT_TRUE(w.at("requests").as_array()[0].as_object().at("causes").as_array().empty());
}

TEST(Attribute, ARestartBetweenScrapesMakesTheWindowUnavailable) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kFast);
  const std::uint16_t port = free_loopback_port();
  const std::vector<std::string> sim_args = {
      binary_path(), "simulate", "--listen", fmt::format("127.0.0.1:{}", port), "--profile", dir + "/p.json"};
  auto sim = std::make_unique<ChildProcess>(sim_args);
  sim->read_line();
  const std::string ledger = dir + "/model-perf.jsonl";
  const std::string snaps = dir + "/snaps.jsonl";
  const std::string metrics = fmt::format("http://127.0.0.1:{}/metrics", port);
  {
    Proxy proxy(fmt::format("http://127.0.0.1:{}", port), ledger);
    ASSERT_EQ(run_cli({"scrape", "--url", metrics, "--output", snaps, "--format", "none", "--quiet"}).exit_code, 0);
    chat(proxy.port, "before the restart", 8);
    ASSERT_EQ(sim->terminate(), 0);
    sim = std::make_unique<ChildProcess>(sim_args);
    sim->read_line();
    ASSERT_EQ(run_cli({"scrape", "--url", metrics, "--output", snaps, "--format", "none", "--quiet"}).exit_code, 0);
    EXPECT_EQ(proxy.process.terminate(), 0);
  }
  const auto doc = attribute_json({"--ledger", ledger, "--scrapes", snaps});
  ASSERT_EQ(windows(doc).size(), 1u);
  const auto& w = windows(doc)[0].as_object();
  EXPECT_EQ(w.at("grade"), "unavailable");
  EXPECT_NE(std::string(w.at("reason").as_string()).find("server instance changed"), std::string::npos);
  EXPECT_EQ(w.at("overlapping_observed_requests").to_number<double>(), 1);
  EXPECT_EQ(doc.at("validity").as_object().at("valid"), false);
  // A scrape that failed is unavailable too, and says why.
  ASSERT_EQ(sim->terminate(), 0);
  EXPECT_EQ(run_cli({"scrape", "--url", metrics, "--output", snaps, "--format", "none", "--quiet"}).exit_code, 1);
  const auto failed = attribute_json({"--ledger", ledger, "--scrapes", snaps});
  ASSERT_EQ(windows(failed).size(), 2u);
  EXPECT_NE(std::string(windows(failed)[1].as_object().at("reason").as_string()).find("metrics scrape failed"),
            std::string::npos);
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

// Issue 37: `attribute --ledger <a sweep's ledger>` failed ("cannot read snapshots
// ...ledger.scrape.jsonl") although the sweep had scraped the engine: the sweep now keeps its
// snapshots beside its ledger, as the proxy does.
TEST(Attribute, ASweepsLedgerFindsTheSnapshotsTheSweepTook) {
  const auto dir = make_temp_dir();
  write_file(dir + "/p.json", kFast);
  Simulator sim({"--profile", dir + "/p.json"});
  const auto url = fmt::format("http://127.0.0.1:{}", sim.port);
  const auto run = run_cli({"sweep", "--url", url + "/v1", "--metrics-url", url + "/metrics", "--model", "sim-model",
                            "--concurrencies", "1,2", "--requests", "4", "--warmup", "0", "--output-tokens", "4",
                            "--quiet", "--output", dir + "/sweep.json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto snaps = read_lines(dir + "/sweep.ledger.scrape.jsonl");
  EXPECT_GE(snaps.size(), 5u);  // identity, then before and after each point
  EXPECT_EQ(json::parse(snaps.front()).at("schema"), "modelperfobs.scrape.v1");
  const auto doc = attribute_json({"--ledger", dir + "/sweep.ledger.jsonl"});
  EXPECT_FALSE(windows(doc).empty());
  // Without --metrics-url there is nothing to keep, and no file.
  const auto plain =
      run_cli({"sweep", "--url", url + "/v1", "--model", "sim-model", "--concurrencies", "1", "--requests", "2",
               "--warmup", "0", "--output-tokens", "2", "--quiet", "--output", dir + "/plain.json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_FALSE(std::filesystem::exists(dir + "/plain.ledger.scrape.jsonl"));
}

TEST(Attribute, AProbeOfTheOriginWithoutV1StopsAndSaysWhatItMeant) {
  // Issue 22: without /v1 the probes went to /chat/completions, got 404s, and windows were graded
  // from the failed requests (cohort-only, exit 0).
  Simulator sim;
  const std::string origin = fmt::format("http://127.0.0.1:{}", sim.port);
  const auto r = run_cli_with_stderr("attribute --probe " + origin + " --model sim-model");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("probe request 1 to " + origin + "/chat/completions answered HTTP 404"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(did you mean " + origin + "/v1?)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no window is graded from a failed probe"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cohort-only"), std::string::npos) << r.out;
}

TEST(Attribute, AProbeOfADeadServerStopsWithoutAHintAboutV1) {
  const std::string url = fmt::format("http://127.0.0.1:{}/v1", free_loopback_port());
  const auto r = run_cli_with_stderr("attribute --probe " + url + " --model m --metrics-url " + url + "/metrics");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("did you mean"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cohort-only"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mpo::test
