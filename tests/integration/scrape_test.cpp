// `modelperfobs scrape` against the simulator: the facts agree with the simulator's configuration
// and with what it served; snapshots are written as JSONL; a restart between two scrapes is a reset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "support/fixtures.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

struct Served {
  double prompt_tokens = 0;
  double completion_tokens = 0;
};

// Non-streamed chat requests; returns the token counts the responses' usage reported.
Served serve(std::uint16_t port, int n, const std::string& prompt) {
  Served s;
  for (int i = 0; i < n; ++i) {
    const std::string body =
        json::serialize(json::object{{"model", "sim-model"},
                                     {"max_tokens", 8 + i},
                                     {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}}});
    HttpResponse r = http_post(port, "/v1/chat/completions", body, {{"content-type", "application/json"}});
    EXPECT_EQ(r.status, 200) << r.body;
    auto usage = json::parse(r.body).as_object().at("usage").as_object();
    s.prompt_tokens += static_cast<double>(usage.at("prompt_tokens").as_int64());
    s.completion_tokens += static_cast<double>(usage.at("completion_tokens").as_int64());
  }
  return s;
}

json::object facts_of(const CliRun& run) {
  EXPECT_EQ(run.exit_code, 0) << run.out;
  auto doc = json::parse(run.out).as_object();
  EXPECT_EQ(doc.at("schema"), "modelperfobs.engine-facts.v1");
  json::object by_id;
  for (const auto& f : doc.at("result").as_object().at("facts").as_array()) {
    by_id[f.as_object().at("id").as_string()] = f;
  }
  by_id["_validity"] = doc.at("validity");
  by_id["_inputs"] = doc.at("inputs");
  return by_id;
}

double value(const json::object& facts, const char* id, const char* name) {
  return facts.at(id).as_object().at("values").as_object().at(name).as_object().at("value").to_number<double>();
}

std::string status(const json::object& facts, const char* id) {
  return std::string(facts.at(id).as_object().at("status").as_string());
}

std::string save_metrics(std::uint16_t port, const std::string& path) {
  HttpResponse r = http_get(port, "/metrics");
  EXPECT_EQ(r.status, 200);
  write_file(path, r.body);
  return path;
}

TEST(Scrape, LiveScrapesWriteSnapshotsAndFactsAgreeWithTheSimulator) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", R"({"engine":{"num_gpu_blocks":700,"block_size":16,"enable_prefix_caching":false}})");
  Simulator sim({"--profile", dir + "/p.json"});
  const Served served = serve(sim.port, 5, "tell me about the sea and the ships upon it");
  const std::string url = fmt::format("http://127.0.0.1:{}", sim.port);  // a bare origin: /metrics is added
  // The URL as a flag or, as a user types it, alone.
  const json::object facts = facts_of(run_cli({"scrape", "--url", url, "--format", "json", "--quiet"}));
  EXPECT_EQ(facts_of(run_cli({"scrape", url, "--format", "json", "--quiet"})).at("requests"), facts.at("requests"));

  // The simulator's configuration, as the engine states it.
  EXPECT_EQ(value(facts, "kv_pool_tokens", "kv_pool_tokens"), 700.0 * 16.0);
  EXPECT_EQ(value(facts, "kv_pool_tokens", "kv_cache_size_tokens"), 700.0 * 16.0);
  EXPECT_EQ(value(facts, "prefix_caching", "enabled"), 0.0);
  EXPECT_EQ(status(facts, "cached_prompt_fraction"), "stated");
  EXPECT_EQ(value(facts, "cached_prompt_fraction", "cached_prompt_fraction"), 0.0);
  // What it served, since it started.
  EXPECT_EQ(value(facts, "tokens", "generation_tokens"), served.completion_tokens);
  EXPECT_EQ(value(facts, "requests", "requests_finished"), 5.0);
  // The simulator publishes its FLOPs estimate and never moves it: not enabled, no number.
  EXPECT_EQ(status(facts, "estimated_flops"), "not_enabled");
  EXPECT_TRUE(facts.at("estimated_flops").as_object().at("values").as_object().empty());
  EXPECT_EQ(status(facts, "queueing_reason"), "stated");

  // Three scrapes of the idle engine: the window is their interval, with nothing served in it, so
  // the FLOPs counter cannot be judged there.
  const std::string out = dir + "/snap.jsonl";
  const json::object interval = facts_of(run_cli(
      {"scrape", "--url", url, "--count", "3", "--interval", "50ms", "--output", out, "--format", "json", "--quiet"}));
  EXPECT_TRUE(interval.at("_validity").as_object().at("valid").as_bool());
  EXPECT_GT(interval.at("_inputs").as_object().at("window_seconds").to_number<double>(), 0.05);
  EXPECT_EQ(value(interval, "tokens", "generation_tokens"), 0.0);
  EXPECT_EQ(status(interval, "estimated_flops"), "unavailable");

  const auto lines = read_lines(out);
  ASSERT_EQ(lines.size(), 3u);
  std::string instance;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    auto snap = json::parse(lines[i]).as_object();
    EXPECT_EQ(snap.at("schema"), "modelperfobs.scrape.v1");
    EXPECT_EQ(snap.at("seq").to_number<std::int64_t>(), static_cast<std::int64_t>(i + 1));
    EXPECT_TRUE(snap.at("status") == "ok" || snap.at("status") == "stale") << lines[i];
    EXPECT_EQ(snap.at("http_status").to_number<int>(), 200);
    const auto& server = snap.at("server").as_object();
    EXPECT_EQ(server.at("engine"), "vllm");
    EXPECT_EQ(server.at("generation"), "v1");
    if (i == 0) instance = std::string(server.at("instance_id").as_string());
    EXPECT_EQ(std::string(server.at("instance_id").as_string()), instance);
    const auto& signals = snap.at("signals").as_object();
    // What it served, as the engine counts it.
    EXPECT_EQ(signals.at("generation_tokens").as_object().at("value").to_number<double>(), served.completion_tokens);
    EXPECT_EQ(signals.at("prompt_tokens").as_object().at("value").to_number<double>(), served.prompt_tokens);
    EXPECT_EQ(signals.at("requests_finished").as_object().at("value").to_number<double>(), 5.0);
    EXPECT_EQ(signals.at("ttft_seconds").as_object().at("count").to_number<double>(), 5.0);
  }
}

TEST(Scrape, AnIntervalCountsOnlyWhatWasServedInIt) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  serve(sim.port, 2, "warm the engine up");
  const std::string before = save_metrics(sim.port, dir + "/before.prom");
  const std::string prompt(600, 'x');  // long and repeated: prefix-cache hits from the second on
  const Served served = serve(sim.port, 4, prompt);
  const std::string after = save_metrics(sim.port, dir + "/after.prom");
  const json::object facts =
      facts_of(run_cli({"scrape", "--file", before, "--file", after, "--format", "json", "--quiet"}));
  EXPECT_TRUE(facts.at("_validity").as_object().at("valid").as_bool());
  EXPECT_EQ(value(facts, "tokens", "generation_tokens"), served.completion_tokens);
  EXPECT_EQ(value(facts, "tokens", "prompt_tokens"), served.prompt_tokens);
  EXPECT_EQ(value(facts, "requests", "requests_finished"), 4.0);
  EXPECT_EQ(value(facts, "ttft_seconds", "count"), 4.0);
  EXPECT_EQ(status(facts, "prefix_cache_hit_rate"), "derived");
  EXPECT_GT(value(facts, "prefix_cache_hit_rate", "prefix_cache_hit_rate"), 0.5);
  EXPECT_EQ(status(facts, "prefill_rate_per_stream"), "derived");
}

TEST(Scrape, ARestartBetweenScrapesIsAResetWithNoInterval) {
  const std::string dir = make_temp_dir();
  std::string before;
  {
    Simulator first;
    serve(first.port, 3, "before the restart");
    before = save_metrics(first.port, dir + "/before.prom");
  }
  Simulator second;
  serve(second.port, 1, "after the restart");
  const std::string after = save_metrics(second.port, dir + "/after.prom");
  auto run = run_cli({"scrape", "--file", before, "--file", after, "--format", "json", "--quiet"});
  const json::object facts = facts_of(run);
  const auto& validity = facts.at("_validity").as_object();
  EXPECT_FALSE(validity.at("valid").as_bool());
  const std::string reason(validity.at("reasons").as_array().at(0).as_string());
  EXPECT_NE(reason.find("restarted"), std::string::npos) << reason;
  // Never a negative or a restarted count: the facts are since the second process started.
  EXPECT_EQ(value(facts, "requests", "requests_finished"), 1.0);
  EXPECT_FALSE(facts.at("_inputs").as_object().contains("window_seconds"));
}

TEST(Scrape, AFailedScrapeIsRecordedAndExitsNonZero) {
  const std::string dir = make_temp_dir();
  const std::string out = dir + "/snap.jsonl";
  const std::uint16_t port = free_loopback_port();  // nothing listens there
  auto run = run_cli({"scrape", "--url", fmt::format("http://127.0.0.1:{}/metrics", port), "--output", out, "--quiet"});
  EXPECT_EQ(run.exit_code, 1);
  const auto lines = read_lines(out);
  ASSERT_EQ(lines.size(), 1u);
  auto snap = json::parse(lines[0]).as_object();
  EXPECT_EQ(snap.at("status"), "unreachable");
  EXPECT_FALSE(snap.contains("signals"));
  EXPECT_NE(std::string(snap.at("error").as_string()).find("cannot connect"), std::string::npos);
}

TEST(Scrape, ProxyRecordsEngineSnapshotsBesideItsLedger) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  const std::string ledger = dir + "/run/model-perf.jsonl";
  std::size_t snapshots = 0;
  Served served;
  {
    Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), ledger,
                {"--scrape", fmt::format("http://127.0.0.1:{}/metrics", sim.port), "--scrape-interval", "50ms"});
    served = serve(proxy.port, 3, "through the proxy");
    // Wait (bounded) until a snapshot shows what was served: evidence, not a sleep.
    bool seen = false;
    for (int i = 0; i < 400 && !seen; ++i) {
      for (const std::string& line : read_lines(dir + "/run/model-perf.scrape.jsonl")) {
        auto snap = json::parse(line).as_object();
        if (snap.contains("signals") &&
            snap.at("signals").as_object().at("generation_tokens").as_object().at("value").to_number<double>() ==
                served.completion_tokens) {
          seen = true;
        }
      }
      if (!seen) http_get(sim.port, "/v1/models");  // a round trip paces the loop
    }
    EXPECT_TRUE(seen);
    EXPECT_EQ(proxy.process.terminate(), 0);
  }
  const auto lines = read_lines(dir + "/run/model-perf.scrape.jsonl");
  snapshots = lines.size();
  EXPECT_GE(snapshots, 2u);
  std::uint64_t last_seq = 0;
  for (const std::string& line : lines) {
    auto snap = json::parse(line).as_object();  // every line whole after SIGTERM
    EXPECT_EQ(snap.at("schema"), "modelperfobs.scrape.v1");
    EXPECT_EQ(snap.at("seq").to_number<std::uint64_t>(), last_seq + 1);
    last_seq = snap.at("seq").to_number<std::uint64_t>();
  }
  EXPECT_EQ(read_lines(ledger).size(), 3u);

  // The recorded snapshots give the engine's facts over the run.
  const auto first = json::parse(lines.front()).as_object();
  const json::object facts =
      facts_of(run_cli({"scrape", "--snapshots", dir + "/run/model-perf.scrape.jsonl", "--format", "json", "--quiet"}));
  EXPECT_TRUE(facts.at("_validity").as_object().at("valid").as_bool());
  if (first.at("signals").as_object().at("requests_finished").as_object().at("value").to_number<double>() == 0) {
    EXPECT_EQ(value(facts, "requests", "requests_finished"), 3.0);  // the first snapshot came before them
  }
}

// The progress line names the engine and its generation where it has one, and nothing where it has
// none ("ok llama.cpp , 2216 bytes" had a stray space before the comma until the thirty-ninth session).
TEST(Scrape, EachScrapesProgressLineNamesTheEngine) {
  auto run = run_cli_with_stderr("scrape --format none --file " +
                                 fixture_path("llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("scrape 1: ok llama.cpp, 2216 bytes, "), std::string::npos) << run.out;
  run = run_cli_with_stderr("scrape --format none --file " +
                            fixture_path("vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom"));
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("scrape 1: ok vllm v1, 51036 bytes, "), std::string::npos) << run.out;
}

TEST(Scrape, UsageErrorsExitTwo) {
  EXPECT_EQ(run_cli({"scrape"}).exit_code, 2);
  EXPECT_EQ(run_cli({"scrape", "--url", "http://127.0.0.1:1", "--interval", "soon"}).exit_code, 2);
  EXPECT_EQ(run_cli({"scrape", "--url", "ftp://x"}).exit_code, 2);
}

}  // namespace
}  // namespace mpo::test
