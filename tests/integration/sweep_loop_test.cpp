// Issue 38: sweeps a user can interrupt and gate on, run as a user runs them (a real `modelperfobs
// sweep` process against `simulate`): Ctrl-C once drains the point and exits 130 with a receipt
// marked interrupted, twice stops at once; a run that cannot measure anything stops within its first
// requests with the server's reason and a non-zero exit.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

double sim_metric(std::uint16_t sim_port, std::string_view name) {
  return read_exposition(http_get(sim_port, "/metrics").body).find(name).value_or(0);
}

// Waits (paced by round trips to the simulator, never by time) until `n` requests run in it.
void until_running(std::uint16_t sim_port, double n) {
  for (int i = 0; i < 20000 && sim_metric(sim_port, "vllm:num_requests_running") < n; ++i) {
  }
  ASSERT_GE(sim_metric(sim_port, "vllm:num_requests_running"), n);
}

// A sweep process (concurrency 2 then 4, 40 tokens a request) against a simulator whose engine
// takes `step_s` a step, its files in `dir` (stderr in sweep.err); ready once two requests run.
struct SweepInFlight {
  explicit SweepInFlight(double step_s)
      : dir(make_temp_dir()),
        sim([&] {
          write_file(dir + "/p.json", fmt::format(R"({{"engine":{{"step_base_s":{}}}}})", step_s));
          return std::vector<std::string>{"--profile", dir + "/p.json"};
        }()),
        process({binary_path(), "sweep", "--url", "http://127.0.0.1:" + std::to_string(sim.port) + "/v1", "--model",
                 "sim-model", "--concurrencies", "2,4", "--requests", "4", "--warmup", "0", "--output-tokens", "40",
                 "--ignore-eos", "--output", dir + "/sweep.json"},
                process::ChildOptions{dir + "/sweep.err"}) {
    until_running(sim.port, 2);
  }
  std::string dir;
  Simulator sim;
  ChildProcess process;
};

json::object receipt(const std::string& dir) { return json::parse(read_file(dir + "/sweep.json")).as_object(); }

TEST(SweepInterrupted, TheFirstCtrlCFinishesTheRequestsInFlightAndExits130) {
  SweepInFlight sweep(0.05);  // about 2 s a request
  const std::string& dir = sweep.dir;
  ::kill(sweep.process.pid(), SIGINT);
  EXPECT_EQ(sweep.process.wait(), 130) << read_file(dir + "/sweep.err");
  // The two requests in flight were drained, not cut; nothing further was sent.
  const auto lines = read_lines(dir + "/sweep.ledger.jsonl");
  ASSERT_EQ(lines.size(), 2u) << read_file(dir + "/sweep.err");
  for (const auto& l : lines) EXPECT_EQ(json::parse(l).at("outcome"), "ok") << l;
  const auto r = receipt(dir);
  const std::string why(r.at("load").at("interrupted").as_string());
  EXPECT_EQ(why.rfind("SIGINT during concurrency=2: no further request was sent", 0), 0u) << why;
  EXPECT_FALSE(r.at("validity").at("valid").as_bool());
  EXPECT_EQ(json::serialize(r.at("validity").at("reasons")).find("interrupted: SIGINT"), 2u)
      << json::serialize(r.at("validity"));
  EXPECT_EQ(r.at("points").as_array().size(), 1u);
  // The interrupted receipt verifies: its verdict follows from what it says.
  EXPECT_EQ(run_cli({"sweep", "verify", dir + "/sweep.json"}).exit_code, 0);
}

TEST(SweepInterrupted, ASecondCtrlCStopsAtOnceAndTheLedgerStaysWhole) {
  SweepInFlight sweep(0.5);  // about 20 s a request
  const std::string& dir = sweep.dir;
  ::kill(sweep.process.pid(), SIGINT);
  // The first was taken (the note says so) before the second is sent.
  for (int i = 0; i < 20000 && read_file(dir + "/sweep.err").find("interrupted (SIGINT)") == std::string::npos; ++i) {
    http_get(sweep.sim.port, "/v1/models");
  }
  ::kill(sweep.process.pid(), SIGINT);
  EXPECT_EQ(sweep.process.wait(), 130) << read_file(dir + "/sweep.err");
  const auto lines = read_lines(dir + "/sweep.ledger.jsonl");
  ASSERT_EQ(lines.size(), 2u) << read_file(dir + "/sweep.err");
  for (const auto& l : lines) {
    const auto o = json::parse(l).as_object();
    EXPECT_NE(o.at("outcome"), "ok") << l;
    EXPECT_NE(json::serialize(o.at("error_message")).find("interrupted: the sweep was stopped (a second Ctrl-C)"),
              std::string::npos)
        << l;
  }
  const std::string why(receipt(dir).at("load").at("interrupted").as_string());
  EXPECT_NE(why.find("a second SIGINT closed those still in flight"), std::string::npos) << why;
}

TEST(SweepStopsEarly, AModelTheServerDoesNotServeStopsWithinItsFirstRequestsWithTheServersReason) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  const auto run =
      run_cli_with_stderr("sweep --url http://127.0.0.1:" + std::to_string(sim.port) +
                          "/v1 --model wrong-model --concurrencies 1,2 --requests 32 --output " + dir + "/sweep.json");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("stopped early: the first 8 requests all failed; the last: HTTP 404 The model "
                         "`wrong-model` does not exist."),
            std::string::npos)
      << run.out;
  // Why, grouped as the point ends, in the server's own words.
  EXPECT_NE(run.out.find("failed: 7 x HTTP 404: The model `wrong-model` does not exist."), std::string::npos)
      << run.out;
  // And again in the summary (the receipt's markdown, printed at the end and written beside it).
  EXPECT_NE(read_file(dir + "/sweep.md")
                .find("## Failed requests\n\n- concurrency 1: 7 x HTTP 404: The model `wrong-model` does not exist."),
            std::string::npos)
      << read_file(dir + "/sweep.md");
  EXPECT_LE(read_lines(dir + "/sweep.ledger.jsonl").size(), 9u);
  EXPECT_NE(json::serialize(receipt(dir).at("load").at("interrupted")).find("stopped early"), std::string::npos);
}

TEST(SweepStopsEarly, NothingMeasuredIsNotAPass) {
  // Every request past its timeout: the sweep ran, measured nothing, and says it could not judge.
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json",
             R"({"scenarios":{"faults":{"error_share":0,"truncate_share":0,"stall_share":1,"stall_s":3}}})");
  Simulator sim({"--profile", dir + "/p.json"});
  ASSERT_EQ(http_post(sim.port, "/scenario?name=faults", "").status, 200);
  const auto run = run_cli_with_stderr("sweep --url http://127.0.0.1:" + std::to_string(sim.port) +
                                       "/v1 --model sim-model --concurrencies 2 --requests 2 --warmup 0 --timeout 1s "
                                       "--quiet --output " +
                                       dir + "/sweep.json");
  EXPECT_EQ(run.exit_code, 4) << run.out;
  EXPECT_NE(run.out.find("no request succeeded, so nothing was measured (exit 4)"), std::string::npos) << run.out;
}

// Issue 42: on a terminal a sweep says what goes wrong while it goes wrong: the progress line
// counts the point's ok and failed requests and names the latest failure's class.
TEST(SweepProgress, OnATerminalTheProgressLineCountsFailuresAndNamesTheLatest) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", R"({"scenarios":{"faults":{"error_share":0.3,"truncate_share":0,"stall_share":0}}})");
  Simulator sim({"--profile", dir + "/p.json"});
  ASSERT_EQ(http_post(sim.port, "/scenario?name=faults", "").status, 200);
  const auto run = run_cli_on_terminal(
      "sweep --url http://127.0.0.1:" + std::to_string(sim.port) +
      "/v1 --model sim-model --concurrencies 2 --requests 24 --warmup 0 --output-tokens 4 --output " + dir +
      "/sweep.json");
  std::smatch m;
  const std::regex progress(R"(\[[#.]+\] (\d+)/24  ok (\d+)  failed ([1-9]\d*) \(http_error 500\))");
  ASSERT_TRUE(std::regex_search(run.out, m, progress)) << run.out;
  EXPECT_EQ(std::stoi(m[1]), std::stoi(m[2]) + std::stoi(m[3]));  // every finished request is ok or failed
  // The last progress line of the point agrees with the ledger.
  std::size_t failed = 0;
  for (const auto& line : read_lines(dir + "/sweep.ledger.jsonl")) {
    if (json::parse(line).at("outcome").as_string() != "ok") ++failed;
  }
  EXPECT_NE(run.out.find("24/24  ok " + std::to_string(24 - failed) + "  failed " + std::to_string(failed)),
            std::string::npos)
      << run.out;
  // Off a terminal there is no progress line (the per-point lines say it as each point ends).
  const auto plain = run_cli_with_stderr(
      "sweep --url http://127.0.0.1:" + std::to_string(sim.port) +
      "/v1 --model sim-model --concurrencies 2 --requests 8 --warmup 0 --output-tokens 4 --output " + dir +
      "/plain.json");
  EXPECT_EQ(plain.out.find("  ok "), std::string::npos) << plain.out;
}

// Fitting a prompt to its length asks the server's tokenizer a few times, not a binary search's
// dozen: each ask is a round trip to the server (thirty-ninth session: 95 asks for 8 prompts of
// 200-2,000 tokens against the simulator, 33 now; against llama.cpp 22 calls a prompt, 11 now).
// Counted through a proxy, whose ledger has a line for each; the prompts are as exact as before.
TEST(SweepPromptLengths, EachPromptIsFittedInAFewTokenizerCalls) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  Proxy proxy("http://127.0.0.1:" + std::to_string(sim.port), dir + "/proxy.jsonl");
  const auto run = run_cli({"sweep", "--url", "http://127.0.0.1:" + std::to_string(proxy.port) + "/v1", "--model",
                            "sim-model", "--concurrencies", "1", "--requests", "8", "--warmup", "0", "--input-tokens",
                            "uniform:200,2000", "--output-tokens", "4", "--quiet", "--output", dir + "/sweep.json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  ASSERT_EQ(proxy.process.terminate(), 0);  // its ledger's writer writes every line before it exits
  std::size_t tokenize = 0, chats = 0;
  for (const auto& line : read_lines(dir + "/proxy.jsonl")) {
    const auto path = json::parse(line).at("path");
    tokenize += path == "/tokenize" ? 1 : 0;
    chats += path == "/v1/chat/completions" ? 1 : 0;
  }
  EXPECT_EQ(chats, 8u);
  EXPECT_LE(tokenize, 6 * chats) << tokenize << " tokenize calls for " << chats << " prompts";
  const auto r = receipt(dir);  // kept: the loop below walks into it
  for (const auto& s : r.at("points").as_array().at(0).at("tracks").as_array().at(0).at("samples").as_array()) {
    EXPECT_EQ(s.at("usage").at("prompt_tokens"), s.at("prompt_tokens_estimate")) << json::serialize(s);
  }
}

// Issue 38: prompt lengths are what was asked, as the server's tokenizer counts them (the simulator
// offers vLLM's POST /tokenize; the real llama-server's routes are tested in llamacpp_test.cpp).
TEST(SweepPromptLengths, EachPromptIsTheLengthAskedForAsTheServerCountsIt) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  const auto run =
      run_cli({"sweep", "--url", "http://127.0.0.1:" + std::to_string(sim.port) + "/v1", "--model", "sim-model",
               "--concurrencies", "1,2", "--requests", "8", "--input-tokens", "uniform:20,100",
               "--shared-prefix-tokens", "10", "--output-tokens", "4", "--quiet", "--output", dir + "/sweep.json"});
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto r = receipt(dir);
  EXPECT_EQ(r.at("load").at("prompt_lengths"),
            "exact: vLLM POST /tokenize (messages, the chat template applied); the shared prefix fitted to 10 tokens");
  std::size_t checked = 0;
  for (const auto& p : r.at("points").as_array()) {
    const auto& tp = p.at("tracks").as_array().at(0).as_object();
    for (const auto& s : tp.at("samples").as_array()) {
      EXPECT_EQ(s.at("usage").at("prompt_tokens"), s.at("prompt_tokens_estimate")) << json::serialize(s);
      ++checked;
    }
    EXPECT_TRUE(tp.at("evidence").as_object().contains("tokens"));
  }
  EXPECT_GE(checked, 16u);
  EXPECT_EQ(run_cli({"sweep", "verify", dir + "/sweep.json"}).exit_code, 0);
  // The receipt given to `report` in place of its ledger is named as such, with the ledger's path.
  const auto wrong = run_cli_with_stderr("report " + dir + "/sweep.json");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("sweep.json is one fak.serving-sweep.v1 document, not a ledger (one JSON object per line): "
                           "its requests are in the sweep's ledger, " +
                           dir + "/sweep.ledger.jsonl"),
            std::string::npos)
      << wrong.out;
  // Asked not to: the words as they are, the chat template's tokens on top.
  const auto rough =
      run_cli({"sweep", "--url", "http://127.0.0.1:" + std::to_string(sim.port) + "/v1", "--model", "sim-model",
               "--concurrencies", "1", "--requests", "4", "--input-tokens", "40", "--output-tokens", "4",
               "--approximate-input-tokens", "--quiet", "--output", dir + "/rough.json"});
  ASSERT_EQ(rough.exit_code, 0) << rough.out;
  const auto rr = json::parse(read_file(dir + "/rough.json")).as_object();
  EXPECT_FALSE(rr.at("load").as_object().contains("prompt_lengths"));
  const auto& t = rr.at("points").as_array().at(0).at("tracks").as_array().at(0).at("evidence").at("tokens");
  EXPECT_GT(t.at("input_min").to_number<std::int64_t>(), 40) << json::serialize(t);
}

// Every API's prompts are fitted (forty-sixth session; before, chat's only): the Responses and
// Messages APIs' input as the chat template makes it, the completions API's joined prompt counted as
// a prompt (vLLM's /tokenize with `prompt`).
TEST(SweepPromptLengths, EveryApisPromptIsTheLengthAskedFor) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  for (const std::string api : {"responses", "messages", "completions"}) {
    const auto run = run_cli({"sweep",
                              "--url",
                              "http://127.0.0.1:" + std::to_string(sim.port) + "/v1",
                              "--model",
                              "sim-model",
                              "--api",
                              api,
                              "--concurrencies",
                              "1",
                              "--requests",
                              "6",
                              "--input-tokens",
                              "uniform:20,100",
                              "--shared-prefix-tokens",
                              "10",
                              "--output-tokens",
                              "4",
                              "--quiet",
                              "--output",
                              dir + "/" + api + ".json"});
    ASSERT_EQ(run.exit_code, 0) << api << run.out;
    const auto r = json::parse(read_file(dir + "/" + api + ".json")).as_object();
    const std::string route = api == "completions" ? "exact: vLLM POST /tokenize (prompt)"
                                                   : "exact: vLLM POST /tokenize (messages, the chat template applied)";
    EXPECT_EQ(std::string(r.at("load").at("prompt_lengths").as_string()),
              route + "; the shared prefix fitted to 10 tokens")
        << api;
    std::size_t checked = 0;
    for (const auto& s : r.at("points").as_array().at(0).at("tracks").as_array().at(0).at("samples").as_array()) {
      EXPECT_EQ(s.at("usage").at("prompt_tokens"), s.at("prompt_tokens_estimate")) << api << json::serialize(s);
      ++checked;
    }
    EXPECT_GE(checked, 6u) << api;
  }
}

}  // namespace
}  // namespace mpo::test
