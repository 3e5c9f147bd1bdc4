// Agent workloads against the simulator (issue 41): a multi-turn sweep's live sessions send their
// turns in order after their think time, through the proxy, which numbers them; a KV pool too small
// for the live conversations is a cache cliff the report names with the engine's KV usage; a
// Mooncake-style trace keeps its arrival times and its shared blocks come from the prefix cache.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>

#include "core/time.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

struct Line {
  std::string session;
  std::int64_t turn = 0, started_us = 0, ended_us = 0, prompt = 0, cached = 0;
};

std::vector<Line> session_lines(const std::string& ledger) {
  std::vector<Line> out;
  for (const auto& text : read_lines(ledger)) {
    const auto o = json::parse(text).as_object();
    if (!o.at("turn").is_int64()) continue;
    Line l;
    l.session = std::string(o.at("session_id").as_string());
    EXPECT_EQ(o.at("session_source").as_string(), "header");
    l.turn = o.at("turn").as_int64();
    l.started_us = *parse_rfc3339(o.at("started_at").as_string());
    // The response's end as the proxy received it (started_at + e2e, on the kernel's receive
    // times): the client can have the last byte only after it. `ended_at` is when the proxy
    // finished the line, which a stalled loop or a paused machine puts later (seen: 1.9 ms, the
    // next turn then looking 298.1 ms after it).
    l.ended_us = l.started_us + static_cast<std::int64_t>(o.at("e2e_ms").to_number<double>() * 1000);
    if (o.at("prompt_tokens").is_int64()) l.prompt = o.at("prompt_tokens").as_int64();
    if (o.at("cached_prompt_tokens").is_int64()) l.cached = o.at("cached_prompt_tokens").as_int64();
    out.push_back(l);
  }
  return out;
}

CliRun sweep(const std::string& dir, std::uint16_t port, std::vector<std::string> extra) {
  std::vector<std::string> args = {"sweep",
                                   "--url",
                                   fmt::format("http://127.0.0.1:{}/v1", port),
                                   "--model",
                                   "sim-model",
                                   "--lateness-bound-ms",
                                   "200",
                                   "--quiet",
                                   "--output",
                                   dir + "/sweep.json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto run = run_cli(args, 180000);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return run;
}

json::object report_group(const std::string& ledger) {
  const auto run = run_cli({"report", ledger, "--format", "json"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  return json::parse(run.out).at("result").at("groups").as_array().at(0).as_object();
}

TEST(SweepConversations, LiveSessionsSendTheirTurnsInOrderAfterTheirThinkTime) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/proxy.jsonl");
  sweep(dir, proxy.port,
        {"--workload", "multi-turn", "--sessions", "6", "--turns", "4", "--user-tokens", "40", "--output-tokens", "8",
         "--think-time-ms", "300", "--concurrencies", "3"});
  ASSERT_EQ(proxy.process.terminate(), 0);

  const auto lines = session_lines(dir + "/proxy.jsonl");
  std::map<std::string, std::map<std::int64_t, Line>> sessions;
  for (const auto& l : lines) sessions[l.session][l.turn] = l;
  ASSERT_EQ(sessions.size(), 6u);
  for (const auto& [id, turns] : sessions) {
    ASSERT_EQ(turns.size(), 4u) << id;  // the proxy numbered turns 1-4 from X-Session-ID
    for (std::int64_t k = 2; k <= 4; ++k) {
      const auto gap = turns.at(k).started_us - turns.at(k - 1).ended_us;
      EXPECT_GE(gap, 299'000) << id << " turn " << k << ": sent before its think time passed";
      EXPECT_LT(gap, 2'000'000) << id << " turn " << k;
      EXPECT_GT(turns.at(k).prompt, turns.at(k - 1).prompt);
      // As the real engine does (llama.cpp b10309 finds the previous turn's whole prompt:
      // RealLlamaCppConversations.EachTurnFindsTheWholeTurnBefore...), each turn finds the turn
      // before it in the cache, in whole 16-token blocks as vLLM keeps them: all of the previous
      // prompt but its last partial block and the block its generation prompt changed.
      EXPECT_GE(turns.at(k).cached, (turns.at(k - 1).prompt / 16 - 1) * 16) << id << " turn " << k;
      EXPECT_LE(turns.at(k).cached, turns.at(k - 1).prompt) << id << " turn " << k;
    }
  }
  // Live conversations as the load generator saw them (its own ledger: the proxy finishes a line a
  // little after its client has the last byte and may already have sent the next session's first).
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> spans;
  for (const auto& l : session_lines(dir + "/sweep.ledger.jsonl")) {
    auto [it, fresh] = spans.try_emplace(l.session, l.started_us, l.ended_us);
    it->second.first = std::min(it->second.first, l.started_us);
    it->second.second = std::max(it->second.second, l.ended_us);
  }
  ASSERT_EQ(spans.size(), 6u);
  std::vector<std::pair<std::int64_t, int>> edges;  // session starts (+1) and ends (-1)
  for (const auto& [id, span] : spans) {
    edges.emplace_back(span.first, +1);
    edges.emplace_back(span.second, -1);
  }
  std::sort(edges.begin(), edges.end());
  int live = 0, most = 0;
  for (const auto& [at, d] : edges) most = std::max(most, live += d);
  EXPECT_EQ(most, 3);  // --concurrencies 3: three conversations at a time

  const auto receipt = json::parse(read_file(dir + "/sweep.json")).as_object();
  const auto& load = receipt.at("load").as_object();
  EXPECT_NE(std::string(load.at("sessions").as_string()).find("6 sessions of 4 turns (24 requests)"),
            std::string::npos);
  EXPECT_EQ(load.at("requests_per_point").as_int64(), 24);
  // Each message fitted to its length (a turn's prompt is theirs and the template's).
  EXPECT_EQ(std::string(load.at("prompt_lengths").as_string()).rfind("messages: each of the ", 0), 0u)
      << json::serialize(load);
  EXPECT_EQ(receipt.at("workload").at("requests").as_int64(), 24);

  const auto group = report_group(dir + "/proxy.jsonl");
  // 300 ms of think time between turns of a few tens of ms: the engine idles most of the time, and
  // the report says so of the later turns (the client's own time is not the engine's).
  const auto& bands = group.at("turns").at("bands").as_array();
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[1].at("likely_bottleneck"), "workload") << json::serialize(bands[1]);
  const auto& by_turn = group.at("turns").at("by_turn").as_array();
  ASSERT_EQ(by_turn.size(), 4u);
  EXPECT_FALSE(by_turn[0].as_object().contains("client_p50_ms") && !by_turn[0].at("client_p50_ms").is_null());
  for (std::size_t k = 1; k < 4; ++k) {
    EXPECT_GE(by_turn[k].at("client_p50_ms").to_number<double>(), 299.0) << k;
    EXPECT_GT(by_turn[k].at("cached_share").to_number<double>(), 0.2) << k;  // the turns before, from the cache
  }
}

TEST(SweepConversations, OpenLoopConversationsArriveAtTheRateAndSendTheirTurnsInOrder) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  sweep(dir, sim.port,
        {"--workload", "multi-turn", "--sessions", "5", "--turns", "3", "--user-tokens", "20", "--output-tokens", "4",
         "--rates", "10", "--arrival", "constant", "--warmup", "0"});
  std::map<std::string, std::map<std::int64_t, Line>> sessions;
  for (const auto& l : session_lines(dir + "/sweep.ledger.jsonl")) sessions[l.session][l.turn] = l;
  ASSERT_EQ(sessions.size(), 5u);
  std::vector<std::int64_t> starts;
  for (const auto& [id, turns] : sessions) {
    ASSERT_EQ(turns.size(), 3u) << id;
    for (std::int64_t k = 2; k <= 3; ++k) EXPECT_GE(turns.at(k).started_us, turns.at(k - 1).ended_us) << id;
    starts.push_back(turns.at(1).started_us);
  }
  std::sort(starts.begin(), starts.end());
  // Conversations start every 100 ms (constant arrivals at 10/s), whatever their turns take.
  EXPECT_NEAR(static_cast<double>(starts.back() - starts.front()) / 1000.0, 400.0, 60.0);
  const auto receipt = json::parse(read_file(dir + "/sweep.json")).as_object();
  EXPECT_NE(std::string(receipt.at("load").at("sessions").as_string()).find("sessions started per second"),
            std::string::npos);
}

TEST(SweepConversations, ChainedResponsesSendOnlyTheNewMessageAndTheServerHoldsTheConversation) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  // The header off: the proxy links the turns by previous_response_id alone.
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/proxy.jsonl", {"--session-header", "off"});
  sweep(dir, proxy.port,
        {"--workload", "multi-turn", "--sessions", "3", "--turns", "4", "--user-tokens", "30", "--output-tokens", "10",
         "--concurrencies", "3", "--api", "responses", "--chain-responses", "--warmup", "0"});
  ASSERT_EQ(proxy.process.terminate(), 0);
  struct Turn {
    std::int64_t prompt = 0, cached = 0, request_bytes = 0;
  };
  std::map<std::string, std::map<std::int64_t, Turn>> chains;
  for (const auto& text : read_lines(dir + "/proxy.jsonl")) {
    const auto o = json::parse(text).as_object();
    if (o.at("operation") != "responses") continue;
    ASSERT_EQ(o.at("outcome"), "ok") << text;
    EXPECT_EQ(o.at("session_source"), "previous_response_id");
    chains[std::string(o.at("session_id").as_string())][o.at("turn").as_int64()] = Turn{
        o.at("prompt_tokens").as_int64(), o.at("cached_prompt_tokens").as_int64(), o.at("request_bytes").as_int64()};
  }
  ASSERT_EQ(chains.size(), 3u);  // one chain per conversation, named by its first response
  for (const auto& [id, turns] : chains) {
    ASSERT_EQ(turns.size(), 4u) << id;
    for (std::int64_t k = 2; k <= 4; ++k) {
      // The body holds one new message; the prompt the server ran holds the whole conversation, its
      // earlier turns from the prefix cache.
      EXPECT_LT(turns.at(k).request_bytes, turns.at(1).request_bytes + 100) << id << " turn " << k;
      EXPECT_GT(turns.at(k).prompt, turns.at(k - 1).prompt + 30) << id << " turn " << k;
      EXPECT_GT(turns.at(k).cached, turns.at(k - 1).cached) << id << " turn " << k;
    }
  }
  const auto receipt = json::parse(read_file(dir + "/sweep.json")).as_object();
  EXPECT_NE(std::string(receipt.at("load").at("sessions").as_string()).find("previous_response_id"), std::string::npos);
  // A response the simulator does not hold is vLLM's 404.
  const auto missing =
      http_post(sim.port, "/v1/responses", R"({"model":"sim-model","input":"hi","previous_response_id":"resp_nope"})");
  EXPECT_EQ(missing.status, 404);
  EXPECT_NE(missing.body.find("Response with id 'resp_nope' not found."), std::string::npos) << missing.body;
}

// `--require-tool-calls`: the turn before each tool turn asks the engine for the call, and the
// engine answers with one. llama.cpp holds a call back until its name (imitated by the simulator):
// those answers' first event is late by decode, not by a queue, and the sweep's TTFT leaves them out. In chat
// and in the Responses (its function_call item) and Messages (a tool_use block) APIs.
void required_tool_calls_through_the_proxy(const std::string& api) {
  const std::string dir = make_temp_dir();
  // Steps of 4 ms: llama.cpp holds back 11 tokens before the name "lookup" (9 + its length / 3).
  write_file(dir + "/p.json", R"({"engine":{"step_base_s":0.004}})");
  Simulator sim({"--imitate", "llamacpp", "--profile", dir + "/p.json"});
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/proxy.jsonl");
  // Every turn after the first a tool's result: turns 1-3 of each conversation are answered by a call.
  sweep(dir, proxy.port,
        {"--workload", "multi-turn", "--sessions", "4", "--turns", "4", "--user-tokens", "20", "--output-tokens", "40",
         "--tool-turns", "1", "--require-tool-calls", "--concurrencies", "2", "--warmup", "0", "--api", api});
  ASSERT_EQ(proxy.process.terminate(), 0);

  std::size_t calls = 0, texts = 0;
  for (const auto& text : read_lines(dir + "/proxy.jsonl")) {
    const auto o = json::parse(text).as_object();
    if (!o.at("turn").is_int64()) continue;
    ASSERT_EQ(o.at("outcome"), "ok") << text;
    const bool last_turn = o.at("turn").as_int64() == 4;
    EXPECT_EQ(o.at("first_output"), last_turn ? "content" : "tool_calls") << text;
    if (last_turn) {
      ++texts;
      EXPECT_TRUE(o.at("tpot_ms").is_double()) << text;
    } else {
      ++calls;
      // The call's first event came after the tokens held back before its name: no TPOT from it.
      EXPECT_TRUE(o.at("tpot_ms").is_null()) << text;
      EXPECT_GT(o.at("ttft_ms").to_number<double>(), 10 * 4) << text;
    }
  }
  EXPECT_EQ(calls, 12u);
  EXPECT_EQ(texts, 4u);

  const auto receipt = json::parse(read_file(dir + "/sweep.json")).as_object();
  const auto& point = receipt.at("points").as_array().at(0).at("tracks").as_array().at(0).as_object();
  std::size_t sample_calls = 0;
  for (const auto& sv : point.at("samples").as_array()) {
    const auto& sample = sv.as_object();
    if (sample.contains("first_output") && sample.at("first_output") == "tool_calls") ++sample_calls;
  }
  EXPECT_EQ(sample_calls, 12u) << json::serialize(point.at("samples"));
  EXPECT_EQ(point.at("stats").at("tool_call_first").as_int64(), 12);
  const auto md = read_file(dir + "/sweep.md");
  EXPECT_NE(md.find("began with a tool call (their first event waited for the tokens the engine holds back before a "
                    "call's name): 12 of 16 at concurrency 2."),
            std::string::npos)
      << md;
  EXPECT_NE(std::string(receipt.at("load").at("workload_source").as_string()).find("required (tool_choice)"),
            std::string::npos)
      << json::serialize(receipt.at("load"));

  // The report judges the calls from the engine's timings, not from their late first events.
  const auto group = report_group(dir + "/proxy.jsonl");
  EXPECT_EQ(group.at("tool_call_first").as_int64(), 12);
  EXPECT_EQ(group.at("ttft_ms").at("n").as_int64(), 4);
}

TEST(SweepConversations, RequiredToolCallsAreAnsweredWithCallsAndLeftOutOfTheSweepsTtft) {
  for (const char* api : {"chat", "responses", "messages"}) {
    SCOPED_TRACE(api);
    required_tool_calls_through_the_proxy(api);
  }
}

TEST(SweepConversations, AKvPoolTooSmallForTheLiveConversationsIsACliffWithTheKvCacheFull) {
  const std::string dir = make_temp_dir();
  // 160 blocks of 16 tokens: six conversations growing by about 90 tokens a turn fill it by turn 5.
  write_file(dir + "/p.json", R"({"engine":{"num_gpu_blocks":160,"block_size":16,"max_model_len":2048,)"
                              R"("step_base_s":0.002}})");
  Simulator sim({"--profile", dir + "/p.json"});
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/proxy.jsonl",
              {"--scrape", fmt::format("http://127.0.0.1:{}/metrics", sim.port), "--scrape-interval", "50ms"});
  sweep(dir, proxy.port,
        {"--workload", "multi-turn", "--sessions", "6", "--turns", "10", "--user-tokens", "60", "--output-tokens", "20",
         "--concurrencies", "6"});
  ASSERT_EQ(proxy.process.terminate(), 0);
  const auto group = report_group(dir + "/proxy.jsonl");
  const auto& cliff = group.at("turns").at("cache_cliff");
  ASSERT_TRUE(cliff.is_object()) << json::serialize(group.at("turns"));
  EXPECT_GE(cliff.at("share_before").to_number<double>(), 0.3);
  EXPECT_LT(cliff.at("share_after").to_number<double>(), 0.5 * cliff.at("share_before").to_number<double>());
  ASSERT_TRUE(cliff.as_object().contains("kv_usage_max_after")) << json::serialize(cliff);
  EXPECT_GE(cliff.at("kv_usage_max_after").to_number<double>(), 0.9);
  const auto md = run_cli({"report", dir + "/proxy.jsonl"});
  EXPECT_NE(md.out.find("the engine's KV cache"), std::string::npos) << md.out;
  // Past the cliff every turn prefills its whole conversation again: the band from the cliff on has
  // a likely bottleneck of its own.
  const auto& bands = group.at("turns").at("bands").as_array();
  ASSERT_EQ(bands.size(), 3u) << json::serialize(group.at("turns").at("bands"));
  EXPECT_EQ(bands[2].at("first_turn").as_int64(), cliff.at("from_turn").as_int64());
  ASSERT_TRUE(bands[2].at("likely_bottleneck").is_string()) << json::serialize(bands[2]);
  const std::string late(bands[2].at("likely_bottleneck").as_string());
  EXPECT_TRUE(late == "prefill" || late == "queueing") << late;
  EXPECT_NE(md.out.find("Likely bottleneck by band of turns"), std::string::npos);
}

TEST(SweepConversations, ATraceKeepsItsArrivalsAndItsSharedBlocksAreCached) {
  const std::string dir = make_temp_dir();
  // Written for this test in Mooncake's trace format (docs/FORMATS.md "Traces"), blocks of
  // 32 tokens: every request starts with blocks 5 and 6, the last two also share block 7.
  write_file(dir + "/trace.jsonl",
             "{\"timestamp\": 0, \"input_length\": 64, \"output_length\": 4, \"hash_ids\": [5, 6]}\n"
             "{\"timestamp\": 300, \"input_length\": 96, \"output_length\": 4, \"hash_ids\": [5, 6, 8]}\n"
             "{\"timestamp\": 600, \"input_length\": 90, \"output_length\": 4, \"hash_ids\": [5, 6, 7]}\n"
             "{\"timestamp\": 900, \"input_length\": 128, \"output_length\": 4, \"hash_ids\": [5, 6, 7, 9]}\n");
  Simulator sim;
  sweep(dir, sim.port,
        {"--workload", "trace", dir + "/trace.jsonl", "--trace-block-tokens", "32", "--replay-speeds", "1,2",
         "--prompt-salt", "none"});
  const auto receipt = json::parse(read_file(dir + "/sweep.json")).as_object();
  EXPECT_NE(std::string(receipt.at("load").at("workload_source").as_string())
                .find("(4 requests, 5 blocks of 32 tokens, 7 of 12 block uses shared)"),
            std::string::npos);
  for (const auto& p : receipt.at("points").as_array()) {
    const double speed = p.at("rate_rps").to_number<double>();
    const auto& samples = p.at("tracks").as_array()[0].at("samples").as_array();
    ASSERT_EQ(samples.size(), 4u);
    for (std::size_t i = 0; i < 4; ++i) {
      // Each arrival when the trace says, played `speed` times faster.
      EXPECT_NEAR(samples[i].at("scheduled_offset_ms").to_number<double>(), 300.0 * static_cast<double>(i) / speed,
                  1.0);
      EXPECT_LT(samples[i].at("sent_offset_ms").to_number<double>() -
                    samples[i].at("scheduled_offset_ms").to_number<double>(),
                200.0);
    }
  }
  // The simulator caches whole 16-token blocks: each later request finds at least the two shared
  // 32-token blocks, and the fourth also block 7.
  std::vector<std::int64_t> cached;
  for (const auto& text : read_lines(dir + "/sweep.ledger.jsonl")) {
    const auto o = json::parse(text).as_object();
    if (o.at("sweep_point").as_string() == "rate=1") cached.push_back(o.at("cached_prompt_tokens").as_int64());
  }
  ASSERT_EQ(cached.size(), 4u);
  EXPECT_EQ(cached[0], 0);
  EXPECT_GE(cached[1], 64 - 16);
  EXPECT_GE(cached[2], 64 - 16);
  EXPECT_GE(cached[3], 90 - 16);
}

}  // namespace
}  // namespace mpo::test
