// `modelperfobs cache-state-bench`: the hermetic run and its strict verification, and the engine
// adapter proved end to end against the simulator (and refusing to prove under foreign traffic).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <string>

#include "support/html_page.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

constexpr const char* kSmallKv =
    R"({"engine":{"num_gpu_blocks":64,"block_size":16,"max_model_len":1024,"step_base_s":0.001,)"
    R"("step_per_prefill_token_s":0.000001,"step_per_decode_seq_s":0.00001}})";

std::map<std::string, json::object> arms_of(const std::string& path) {
  std::map<std::string, json::object> out;
  const json::value doc = json::parse(read_file(path));  // kept alive for the loop
  for (const auto& a : doc.as_object().at("arms").as_array()) {
    out[std::string(a.as_object().at("label").as_string())] = a.as_object().at("transition_receipt").as_object();
  }
  return out;
}

TEST(CacheStateBench, HermeticRunProvesEveryTransitionAndVerifiesStrictly) {
  const std::string dir = make_temp_dir();
  const std::string report = dir + "/cache-state.json";
  ASSERT_EQ(run_cli({"cache-state-bench", "--output", report, "--html", dir + "/cache-state.html"}).exit_code, 0);
  for (const auto& [label, r] : arms_of(report)) EXPECT_EQ(r.at("result"), "proved") << label;
  // The page (issue 25): the verdict, one row per arm, the probes drawn.
  const std::string page = read_file(dir + "/cache-state.html");
  EXPECT_NE(page.find("<div class=\"verdict valid\">admitted: every arm proves its transition</div>"),
            std::string::npos);
  const auto charts = charts_in(page);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(chart_problems(charts), "");
  EXPECT_EQ(charts[0].series.size(), 5u);
  EXPECT_EQ(charts[0].series.at("warm_admit"), 2);  // a miss, then the hit
  std::size_t rows = 0;
  for (auto at = page.find("<td>fak_workflow_cache</td>"); at != std::string::npos;
       at = page.find("<td>fak_workflow_cache</td>", at + 1))
    ++rows;
  EXPECT_EQ(rows, 5u);
  auto ok = run_cli({"cache-state-bench", "--verify", report});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(ok.out.rfind("STATE_TRANSITION_WITNESS_OK arms=5 proved=5", 0), 0u) << ok.out;
  // Tampered: a probe that says the cold cache reused the prefix.
  std::string text = read_file(report);
  const auto at = text.find("\"reused\": false");
  ASSERT_NE(at, std::string::npos);
  write_file(dir + "/tampered.json", std::string(text).replace(at, 15, "\"reused\": true "));
  auto bad = run_cli({"cache-state-bench", "--verify", dir + "/tampered.json"});
  EXPECT_EQ(bad.exit_code, 3);
  EXPECT_EQ(bad.out.rfind("STATE_TRANSITION_WITNESS_INVALID", 0), 0u) << bad.out;
  // Unknown fields and trailing data are refused.
  write_file(dir + "/unknown.json", "{\"note\":1," + text.substr(1));
  EXPECT_EQ(run_cli({"cache-state-bench", "--verify", dir + "/unknown.json"}).exit_code, 1);
  write_file(dir + "/trailing.json", text + "{}");
  EXPECT_EQ(run_cli({"cache-state-bench", "--verify", dir + "/trailing.json"}).exit_code, 1);
}

TEST(CacheStateBench, EngineAdapterProvesTransitionsAgainstTheSimulator) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kSmallKv);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::string report = dir + "/engine.json";
  const auto run =
      run_cli({"cache-state-bench", "--backend", "vllm", "--url", fmt::format("http://127.0.0.1:{}/v1", sim.port),
               "--model", "sim-model", "--output", report});
  EXPECT_EQ(run.exit_code, 0);
  auto arms = arms_of(report);
  for (const char* t : {"cold_start", "warm_admit", "explicit_invalidate", "pressure_evict"}) {
    EXPECT_EQ(arms[t].at("result"), "proved") << t << ": " << json::serialize(arms[t]);
    EXPECT_EQ(arms[t].at("layer"), "process_local_kv");
  }
  EXPECT_EQ(arms["natural_expiry"].at("result"), "unsupported");
  // Warm: the first probe missed after the reset, the second reused the pinned prefix's blocks.
  const auto& probes = arms["warm_admit"].at("probes").as_array();
  EXPECT_EQ(probes[0].as_object().at("reused"), false);
  EXPECT_GT(probes[1].as_object().at("reused_tokens").to_number<double>(), 0);
  // Counters vLLM does not publish are absent (null), not zero.
  EXPECT_TRUE(arms["cold_start"].at("pre_metrics").as_object().at("evictions").is_null());
  EXPECT_EQ(run_cli({"cache-state-bench", "--verify", report}).exit_code, 0);
  // Layers with no safe mechanism are typed and reported unsupported.
  const auto ext =
      run_cli({"cache-state-bench", "--backend", "vllm", "--url", fmt::format("http://127.0.0.1:{}/v1", sim.port),
               "--model", "sim-model", "--layer", "external_shared_kv", "--output", dir + "/ext.json"});
  EXPECT_EQ(ext.exit_code, 1);
  for (const auto& [label, r] : arms_of(dir + "/ext.json")) EXPECT_EQ(r.at("result"), "unsupported") << label;
}

TEST(CacheStateBench, TheEngineAdapterSpeaksTheMessagesApi) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kSmallKv);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::string report = dir + "/engine.json";
  const auto run = run_cli({"cache-state-bench", "--backend", "vllm", "--url",
                            fmt::format("http://127.0.0.1:{}/v1", sim.port), "--model", "sim-model", "--api",
                            "messages", "--transitions", "cold_start,warm_admit", "--output", report});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  auto arms = arms_of(report);
  EXPECT_EQ(arms["warm_admit"].at("result"), "proved") << json::serialize(arms["warm_admit"]);
  EXPECT_GT(arms["warm_admit"].at("probes").as_array()[1].as_object().at("reused_tokens").to_number<double>(), 0);
}

TEST(CacheStateBench, ForeignTrafficExcludesTheArms) {
  const std::string dir = make_temp_dir();
  write_file(
      dir + "/p.json",
      R"({"engine":{"num_gpu_blocks":1024,"block_size":16,"step_base_s":0.002,)"
      R"("step_per_prefill_token_s":0.00001,"step_per_decode_seq_s":0.00005},)"
      R"("scenarios":{"ramp":{"duration_s":0.2,"background_requests":8,"background_prompt_tokens":16,"background_output_tokens":64}}})");
  Simulator sim({"--profile", dir + "/p.json"});
  ASSERT_EQ(http_post(sim.port, "/scenario?name=ramp", "", {}).status, 200);
  // The ramp adds its first background requests at the engine's next scenario tick (up to 100 ms
  // later): wait until the engine runs them, or a quick first arm would see no foreign traffic.
  auto running = [&] {
    const std::string text = http_get(sim.port, "/metrics").body;
    const auto at = text.find("\nvllm:num_requests_running{");
    return at == std::string::npos ? 0.0 : std::stod(text.substr(text.find("} ", at) + 2));
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (running() == 0 && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_GT(running(), 0);
  const std::string report = dir + "/engine.json";
  const auto run =
      run_cli({"cache-state-bench", "--backend", "vllm", "--url", fmt::format("http://127.0.0.1:{}/v1", sim.port),
               "--model", "sim-model", "--transitions", "cold_start,warm_admit", "--output", report});
  EXPECT_EQ(run.exit_code, 1);
  for (const auto& [label, r] : arms_of(report)) {
    EXPECT_EQ(r.at("result"), "transition_unproved") << label;
    EXPECT_EQ(r.at("reason"), "concurrent_traffic_contamination") << label;
  }
  auto v = run_cli({"cache-state-bench", "--verify", report});
  EXPECT_EQ(v.exit_code, 3);
  EXPECT_EQ(v.out.rfind("STATE_TRANSITION_WITNESS_EXCLUDED", 0), 0u) << v.out;
}

}  // namespace
}  // namespace mpo::test
