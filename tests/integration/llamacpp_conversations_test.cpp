// Agent workloads against the real llama.cpp server (b10309, small random-weight model; issue 41):
// a multi-turn sweep whose every turn finds the turn before it in llama.cpp's cache (its own
// cache_n), tool turns in the three APIs' shapes accepted, a host prompt cache too small for the
// live conversations named as the report's cache cliff, a context too small for the later turns
// failing each of them, and a Mooncake-style trace whose blocks are the tokens it says. Skipped, with the reason, where
// MPO_LLAMA_SERVER / MPO_LLAMA_SMALL_MODEL are unset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <map>

#include "support/llama_server.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

constexpr const char* kModel = "MPO_LLAMA_SMALL_MODEL";

struct Turn {
  std::int64_t prompt = 0, cached = 0;
  int status = 0;
};

// session -> turn -> what llama.cpp said of it, from a ledger's lines.
std::map<std::string, std::map<std::int64_t, Turn>> turns_of(const std::string& ledger) {
  std::map<std::string, std::map<std::int64_t, Turn>> out;
  for (const auto& line : read_lines(ledger)) {
    const auto o = json::parse(line).as_object();
    if (!o.at("turn").is_int64()) continue;
    Turn t;
    t.status = o.at("http_status").is_int64() ? static_cast<int>(o.at("http_status").as_int64()) : 0;
    if (o.at("prompt_tokens").is_int64()) t.prompt = o.at("prompt_tokens").as_int64();
    if (o.at("cached_prompt_tokens").is_int64()) t.cached = o.at("cached_prompt_tokens").as_int64();
    out[std::string(o.at("session_id").as_string())][o.at("turn").as_int64()] = t;
  }
  return out;
}

class RealLlamaCppConversations : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = LlamaServer::unavailable(kModel)) GTEST_SKIP() << *why;
    dir_ = make_temp_dir();
  }
  // A multi-turn sweep against `url` at `sessions` live sessions; its ledger's path.
  std::string sweep(const std::string& url, const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep",      "--url",      url + "/v1",  "--model",
                                     "real-llama", "--workload", "multi-turn", "--lateness-bound-ms",
                                     "200",        "--quiet",    "--output",   dir_ + "/" + name + ".json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = run_cli(args, 240000);
    EXPECT_NE(run.exit_code, 4) << run.out;  // something was measured
    return dir_ + "/" + name + ".ledger.jsonl";
  }
  std::string dir_;
};

TEST_F(RealLlamaCppConversations, EachTurnFindsTheWholeTurnBeforeItInTheCacheInEveryApi) {
  // As many slots as sessions: each conversation keeps its slot, so llama.cpp's cache holds its
  // last prompt. Half the turns after the first send a tool's result (the chat template of this
  // model renders no tool messages: those turns grow by the assistant's end only).
  LlamaServer server(dir_ + "/llama-server.log", {"-np", "2"}, kModel);
  for (const char* api : {"chat", "responses", "messages"}) {
    const auto ledger = sweep(server.url(), std::string("mt-") + api,
                              {"--api", api, "--sessions", "2", "--turns", "4", "--user-tokens", "20",
                               "--output-tokens", "8", "--tool-turns", "0.5", "--concurrencies", "2", "--seed", "3"});
    const auto sessions = turns_of(ledger);
    ASSERT_EQ(sessions.size(), 2u) << api;
    bool grew = false;
    for (const auto& [id, turns] : sessions) {
      ASSERT_EQ(turns.size(), 4u) << api << " " << id;
      for (const auto& [k, t] : turns) {
        EXPECT_EQ(t.status, 200) << api << " " << id << " turn " << k;
        if (k == 1) continue;
        const Turn& before = turns.at(k - 1);
        // llama.cpp's own count: the previous turn's whole prompt came from its cache.
        EXPECT_EQ(t.cached, before.prompt) << api << " " << id << " turn " << k;
        EXPECT_GT(t.prompt, before.prompt) << api << " " << id << " turn " << k;
        // A user turn: its 20 tokens, the answer's 8 before it and the template's own (each message
        // fitted to its length since the forty-sixth session); a tool turn grows by less.
        grew = grew || t.prompt > before.prompt + 25;
        // And no more: a turn's messages are the tokens asked for (unfitted, the 20 words were about
        // 58 tokens on this tokenizer and a user turn grew by about 90).
        EXPECT_LT(t.prompt, before.prompt + 50) << api << " " << id << " turn " << k;
      }
    }
    EXPECT_TRUE(grew) << api;
  }
}

TEST_F(RealLlamaCppConversations, AHostCacheTooSmallForTheLiveConversationsIsTheCliffTheReportNames) {
  // One slot, three live conversations: each turn's prompt comes back from llama.cpp's host-memory
  // prompt cache (--cache-ram 16 MiB) while the three saved prompts fit; from about 600 tokens each
  // (about 9 KiB of KV per token on this model) they no longer do, and every turn is computed anew.
  LlamaServer server(dir_ + "/llama-server.log", {"-np", "1", "-c", "2048", "--cache-ram", "16"}, kModel);
  Proxy proxy(server.url(), dir_ + "/proxy.jsonl");
  sweep("http://127.0.0.1:" + std::to_string(proxy.port), "cliff",
        {"--sessions", "3", "--turns", "8", "--user-tokens", "125", "--output-tokens", "10", "--concurrencies", "3"});
  ASSERT_EQ(proxy.process.terminate(), 0);
  const auto report = run_cli({"report", dir_ + "/proxy.jsonl", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.out;
  const auto doc = json::parse(report.out);
  const auto& group = doc.at("result").at("groups").as_array().at(0).as_object();
  ASSERT_TRUE(group.at("turns").is_object()) << report.out;
  const auto& turns = group.at("turns").as_object();
  ASSERT_EQ(turns.at("by_turn").as_array().size(), 8u);
  ASSERT_TRUE(turns.at("cache_cliff").is_object()) << json::serialize(turns);
  const auto& cliff = turns.at("cache_cliff").as_object();
  const auto from = cliff.at("from_turn").as_int64();
  EXPECT_GE(from, 4) << json::serialize(cliff);
  EXPECT_LE(from, 6) << json::serialize(cliff);
  EXPECT_GE(cliff.at("share_before").to_number<double>(), 0.5);
  EXPECT_LT(cliff.at("share_after").to_number<double>(), 0.2);
  // Judged by band: past the cliff each turn computes its whole prompt while the other two wait for
  // the one slot (llama.cpp's own prompt_ms says how long of the TTFT was that wait).
  const auto& bands = turns.at("bands").as_array();
  ASSERT_EQ(bands.size(), 3u) << json::serialize(turns.at("bands"));
  EXPECT_EQ(bands[2].at("first_turn").as_int64(), from);
  ASSERT_TRUE(bands[2].at("likely_bottleneck").is_string()) << json::serialize(bands[2]);
  const std::string late(bands[2].at("likely_bottleneck").as_string());
  EXPECT_TRUE(late == "queueing" || late == "prefill") << late;
  // The engine's log says why: it dropped saved prompts to make room.
  EXPECT_NE(read_file(dir_ + "/llama-server.log").find("removing oldest entry"), std::string::npos);
  const auto md = run_cli({"report", dir_ + "/proxy.jsonl"});
  EXPECT_NE(md.out.find(fmt::format("**Cache cliff**: turn {} onward", from)), std::string::npos) << md.out;
}

TEST_F(RealLlamaCppConversations, ASmallContextFailsEveryTurnPastItAndTheTableSaysFromWhichTurn) {
  // -c 512, one slot: turns of about 145 tokens more each (125 of the user's, 10 of the answer's,
  // the template's own); the fourth (about 560) no longer fits and llama.cpp refuses it, and every
  // later one.
  LlamaServer server(dir_ + "/llama-server.log", {"-np", "1", "-c", "512"}, kModel);
  Proxy proxy(server.url(), dir_ + "/proxy.jsonl");
  sweep("http://127.0.0.1:" + std::to_string(proxy.port), "context",
        {"--sessions", "2", "--turns", "6", "--user-tokens", "125", "--output-tokens", "10", "--concurrencies", "2"});
  ASSERT_EQ(proxy.process.terminate(), 0);
  const auto report = run_cli({"report", dir_ + "/proxy.jsonl", "--format", "json"});
  const auto doc = json::parse(report.out);
  const auto& by_turn = doc.at("result").at("groups").as_array().at(0).at("turns").at("by_turn").as_array();
  ASSERT_EQ(by_turn.size(), 6u) << report.out;
  std::int64_t first_failing = 0;
  for (const auto& t : by_turn) {
    const auto errors = t.at("errors").as_int64(), requests = t.at("requests").as_int64();
    if (first_failing == 0 && errors > 0) first_failing = t.at("turn").as_int64();
    if (first_failing != 0) {
      EXPECT_EQ(errors, requests) << json::serialize(t);  // every turn past it fails
    }
  }
  EXPECT_GE(first_failing, 3);
  EXPECT_LE(first_failing, 5);
  const auto& failure = doc.at("result").at("groups").as_array().at(0).at("turns").at("failure_cliff");
  ASSERT_TRUE(failure.is_object()) << report.out;
  EXPECT_EQ(failure.at("from_turn").as_int64(), first_failing);
  const auto md = run_cli({"report", dir_ + "/proxy.jsonl"});
  EXPECT_NE(md.out.find(fmt::format("**Failure cliff**: turn {} onward: every request failed", first_failing)),
            std::string::npos)
      << md.out;
  EXPECT_NE(read_file(dir_ + "/proxy.jsonl").find("exceeds the available context size (512 tokens)"),
            std::string::npos);
  // The errors candidate says what the engine answered, its status, type and words.
  const auto& kinds = doc.at("result").at("groups").as_array().at(0).at("failures").as_array();
  ASSERT_EQ(kinds.size(), 1u) << report.out;
  EXPECT_EQ(kinds[0].at("http_status").as_int64(), 400);
  EXPECT_EQ(kinds[0].at("error_type"), "exceed_context_size_error");
  EXPECT_NE(md.out.find("requests ended http_error: HTTP 400 exceed_context_size_error ("), std::string::npos)
      << md.out;
  EXPECT_NE(md.out.find("exceeds the available context size (512 tokens), try increasing it\""), std::string::npos)
      << md.out;
}

TEST_F(RealLlamaCppConversations, ATracesBlocksAreTheTokensItSaysAndSharedBlocksAreCached) {
  // Written for this test in Mooncake's trace format (docs/FORMATS.md "Traces"): blocks of
  // 64 tokens; the second request repeats the first's two blocks and adds one.
  const std::string trace = dir_ + "/trace.jsonl";
  std::ofstream(trace)
      << "{\"timestamp\": 0, \"input_length\": 128, \"output_length\": 4, \"hash_ids\": [1, 2]}\n"
         "{\"timestamp\": 400, \"input_length\": 180, \"output_length\": 4, \"hash_ids\": [1, 2, 3]}\n";
  LlamaServer server(dir_ + "/llama-server.log", {"-np", "1"}, kModel);
  const auto run =
      run_cli({"sweep",    "--url",    server.url() + "/v1",   "--model", "real-llama",          "--workload",
               "trace",    trace,      "--trace-block-tokens", "64",      "--replay-speeds",     "1",
               "--warmup", "0",        "--prompt-salt",        "none",    "--lateness-bound-ms", "200",
               "--quiet",  "--output", dir_ + "/trace.json"},
              120000);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  std::vector<Turn> lines;
  for (const auto& line : read_lines(dir_ + "/trace.ledger.jsonl")) {
    const auto o = json::parse(line).as_object();
    lines.push_back({o.at("prompt_tokens").as_int64(), o.at("cached_prompt_tokens").as_int64(), 200});
  }
  ASSERT_EQ(lines.size(), 2u);
  // Single-token words: the prompt is the trace's length plus the chat template's and the point
  // marker's few tokens, and the shared 128 tokens (with the template's opening) come from the cache.
  EXPECT_GE(lines[0].prompt, 128);
  EXPECT_LE(lines[0].prompt, 128 + 20);
  EXPECT_GE(lines[1].prompt, 180);
  EXPECT_LE(lines[1].prompt, 180 + 20);
  EXPECT_GE(lines[1].cached, 128);
  EXPECT_LT(lines[1].cached, lines[1].prompt);
}

}  // namespace
}  // namespace mpo::test
