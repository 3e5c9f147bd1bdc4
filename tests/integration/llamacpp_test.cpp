// The proxy and the load generator in front of a real llama.cpp server (b10309, tiny random-weight
// model), as issue 17 found them failing: alternating streamed and non-streamed requests (llama.cpp
// closes its connection after every stream although it offers keep-alive), clients that leave at
// `data: [DONE]` (llama.cpp sends the chunked terminator in a later write), and a sweep at
// concurrency 8. Skipped, with the reason, where MPO_LLAMA_SERVER / MPO_LLAMA_MODEL are unset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <regex>
#include <thread>

#include "support/http_client.hpp"
#include "support/llama_server.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

const std::string kStreamed =
    R"({"model":"real-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":6,"stream":true})";
const std::string kNotStreamed =
    R"({"model":"real-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":6})";

std::string outcomes_text(const std::map<std::string, int>& counts) {
  std::string s = "outcomes:";
  for (const auto& [k, n] : counts) s += fmt::format(" {}={}", k, n);
  return s;
}

class RealLlamaCpp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = LlamaServer::unavailable()) GTEST_SKIP() << *why;
    dir_ = make_temp_dir();
    server_ = std::make_unique<LlamaServer>(dir_ + "/llama-server.log");
    proxy_ = std::make_unique<Proxy>(server_->url(), dir_ + "/ledger.jsonl");
  }

  // Stops the proxy (flushing its ledger) and counts the ledger's outcomes.
  std::map<std::string, int> outcomes(std::int64_t* retries = nullptr) {
    EXPECT_EQ(proxy_->process.terminate(), 0);
    std::map<std::string, int> out;
    for (const auto& line : read_lines(dir_ + "/ledger.jsonl")) {
      const auto o = json::parse(line).as_object();
      ++out[std::string(o.at("outcome").as_string())];
      if (retries) *retries += o.at("upstream_retries").as_int64();
    }
    return out;
  }

  double retries_metric() {
    const auto x = read_exposition(http_get(proxy_->admin_port, "/metrics").body);
    double n = 0;
    for (const char* cause : {"eof", "reset", "broken_pipe"}) {
      n += x.find("modelperfobs_upstream_retries_total", {fmt::format("cause=\"{}\"", cause)}).value_or(0);
    }
    return n;
  }

  std::string dir_;
  std::unique_ptr<LlamaServer> server_;
  std::unique_ptr<Proxy> proxy_;
};

TEST_F(RealLlamaCpp, AlternatingStreamedAndNonStreamedRequestsThroughTheProxyNeverFail) {
  int failed = 0;
  for (int i = 0; i < 100; ++i) {
    const auto s = http_post(proxy_->port, "/v1/chat/completions", kStreamed);
    if (s.status != 200 || !s.complete || s.body.find("[DONE]") == std::string::npos) ++failed;
    const auto n = http_post(proxy_->port, "/v1/chat/completions", kNotStreamed);
    if (n.status != 200) ++failed;
  }
  EXPECT_EQ(failed, 0);
  const double metric = retries_metric();
  std::int64_t retries = 0;
  const auto counts = outcomes(&retries);
  EXPECT_EQ(counts.size(), 1u) << outcomes_text(counts);
  EXPECT_EQ(counts.count("ok") ? counts.at("ok") : 0, 200) << outcomes_text(counts);
  EXPECT_EQ(metric, static_cast<double>(retries));
}

// Issue 37: without stream_options.include_usage the line's prompt tokens are llama.cpp's
// prompt_n + cache_n (its usage's prompt_tokens when asked for), so a prompt the prefix cache
// served is not recorded as 1 token.
TEST_F(RealLlamaCpp, APromptServedFromThePrefixCacheKeepsItsLengthWithoutUsage) {
  std::string text;
  for (int i = 0; i < 60; ++i) text += fmt::format("word{} ", i);
  const std::string plain =
      R"({"model":"real-llama","messages":[{"role":"user","content":")" + text + R"("}],"max_tokens":2,"stream":true})";
  const std::string with_usage = R"({"model":"real-llama","messages":[{"role":"user","content":")" + text +
                                 R"("}],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}})";
  for (const auto* body : {&plain, &plain, &with_usage}) {
    ASSERT_EQ(http_post(proxy_->port, "/v1/chat/completions", *body).status, 200);
  }
  ASSERT_EQ(proxy_->process.terminate(), 0);
  const auto lines = read_lines(dir_ + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  std::vector<json::object> l;
  for (const auto& line : lines) l.push_back(json::parse(line).as_object());
  const auto engine_prompt = l[2].at("prompt_tokens").as_int64();  // the engine's own usage
  EXPECT_GT(engine_prompt, 60);
  EXPECT_EQ(l[0].at("prompt_tokens").as_int64(), engine_prompt);
  EXPECT_EQ(l[1].at("prompt_tokens").as_int64(), engine_prompt);
  EXPECT_EQ(l[1].at("token_source"), "server_timings");
  // The second send found the first's prompt in the cache, and says how much.
  EXPECT_GT(l[1].at("cached_prompt_tokens").as_int64(), engine_prompt / 2);
  EXPECT_EQ(l[2].at("cached_prompt_tokens"), l[1].at("cached_prompt_tokens"));
}

// An agent's conversation (issue 41): each turn sends the whole conversation so far, the model's
// earlier answers included, under one X-Session-ID. The ledger numbers the turns, and llama.cpp's
// own count of prompt tokens served from its cache (usage / timings.cache_n) grows turn by turn:
// each turn finds the previous turn's whole prompt in the slot.
TEST_F(RealLlamaCpp, AConversationsTurnsAreNumberedAndFindTheEarlierTurnsInTheCache) {
  json::array messages;
  messages.push_back(
      json::object{{"role", "system"}, {"content", "You answer briefly. Context: " + std::string(200, 'x')}});
  for (int turn = 1; turn <= 4; ++turn) {
    std::string question;
    for (int i = 0; i < 20; ++i) question += fmt::format("t{}q{} ", turn, i);
    messages.push_back(json::object{{"role", "user"}, {"content", question}});
    json::object body{{"model", "real-llama"},
                      {"messages", messages},
                      {"max_tokens", 8},
                      {"stream", true},
                      {"stream_options", json::object{{"include_usage", true}}}};
    const auto r =
        http_post(proxy_->port, "/v1/chat/completions", json::serialize(body), {{"X-Session-ID", "agent-7"}});
    ASSERT_EQ(r.status, 200) << r.body;
    // The answer, as the client saw it, becomes the next turn's assistant message.
    std::string answer;
    static const std::regex content(R"re("content":"((?:[^"\\]|\\.)*)")re");
    for (std::sregex_iterator it(r.body.begin(), r.body.end(), content), end; it != end; ++it) answer += (*it)[1].str();
    messages.push_back(json::object{{"role", "assistant"}, {"content", answer}});
  }
  ASSERT_EQ(proxy_->process.terminate(), 0);
  const auto lines = read_lines(dir_ + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  std::int64_t previous_prompt = 0, previous_cached = -1;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto l = json::parse(lines[i]).as_object();
    EXPECT_EQ(l.at("session_id"), "agent-7");
    EXPECT_EQ(l.at("turn").as_int64(), static_cast<std::int64_t>(i + 1));
    const auto prompt = l.at("prompt_tokens").as_int64();
    const auto cached = l.at("cached_prompt_tokens").as_int64();
    std::cout << fmt::format("turn {}: prompt {} tokens, {} from the cache\n", i + 1, prompt, cached);
    EXPECT_GT(prompt, previous_prompt) << "turn " << i + 1 << " carries the conversation so far";
    if (i > 0) {
      // At least the previous turn's prompt came from the cache (the engine's count), and more each turn.
      EXPECT_GE(cached, previous_prompt / 2) << "turn " << i + 1 << ": " << lines[i];
      EXPECT_GT(cached, previous_cached) << "turn " << i + 1;
    }
    previous_prompt = prompt;
    previous_cached = cached;
  }
  // The report's view by turn states the same shares, and no cliff: each turn found the last.
  const auto report = run_cli({"report", dir_ + "/ledger.jsonl", "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.out;
  const auto turns = json::parse(report.out).at("result").at("groups").at(0).at("turns");
  const auto& by_turn = turns.at("by_turn").as_array();
  ASSERT_EQ(by_turn.size(), 4u) << report.out;
  for (std::size_t i = 1; i < by_turn.size(); ++i) {
    EXPECT_GT(by_turn[i].at("cached_share").to_number<double>(), by_turn[i - 1].at("cached_share").to_number<double>());
  }
  EXPECT_TRUE(turns.at("cache_cliff").is_null());
}

TEST_F(RealLlamaCpp, ClientsThatLeaveAtDoneAreOk) {
  int before_terminator = 0;
  for (int i = 0; i < 100; ++i) {
    const auto r = chat_leaving_after(proxy_->port, kStreamed, "data: [DONE]");
    ASSERT_NE(r.raw.find("data: [DONE]"), std::string::npos);
    if (!r.complete) ++before_terminator;
  }
  const auto counts = outcomes();
  EXPECT_EQ(counts.count("client_disconnected"), 0u) << outcomes_text(counts);
  EXPECT_EQ(counts.count("ok") ? counts.at("ok") : 0, 100) << outcomes_text(counts);
  // Not asserted (it depends on timing), but said: how often the client left before the terminator.
  std::cout << "clients that left before the chunked terminator: " << before_terminator << " of 100\n";
}

TEST_F(RealLlamaCpp, ASweepAtConcurrency8ThroughTheProxyHasNoFailedRequest) {
  const auto run = run_cli({"sweep", "--url", fmt::format("http://127.0.0.1:{}/v1", proxy_->port), "--model",
                            "real-llama", "--concurrencies", "8", "--requests", "100", "--input-tokens", "16",
                            "--output-tokens", "8", "--quiet", "--output", dir_ + "/sweep.json"},
                           180000);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  int sweep_failed = 0, sweep_lines = 0;
  for (const auto& line : read_lines(dir_ + "/sweep.ledger.jsonl")) {
    ++sweep_lines;
    if (json::parse(line).at("outcome") != "ok") ++sweep_failed;
  }
  EXPECT_GE(sweep_lines, 100);
  EXPECT_EQ(sweep_failed, 0);
  const auto counts = outcomes();
  EXPECT_EQ(counts.size(), 1u) << "every proxied request should be ok: " << outcomes_text(counts);
  EXPECT_GE(counts.count("ok") ? counts.at("ok") : 0, 100);
}

// The engine's own counts, read from what the client received (independently of the proxy's
// readers): chat's usage chunk, the Responses API's response.completed (or body) usage, Anthropic's
// message_start + message_delta (or body) usage, each as that API defines it.
struct EngineCounts {
  std::int64_t prompt = -1, completion = -1;
};

EngineCounts engine_counts(const std::string& api, const std::string& body, bool stream) {
  EngineCounts c;
  auto take = [&](const json::object& o) {
    const json::object* u = nullptr;
    if (auto* r = o.if_contains("response"); r && r->is_object() && r->as_object().contains("usage")) {
      if (r->as_object().at("usage").is_object()) u = &r->as_object().at("usage").as_object();
    } else if (auto* m = o.if_contains("message"); m && m->is_object()) {
      u = &m->as_object().at("usage").as_object();
    } else if (auto* d = o.if_contains("usage"); d && d->is_object()) {
      u = &d->as_object();
    }
    if (u == nullptr) return;
    auto get = [&](const char* k) { return u->contains(k) ? u->at(k).as_int64() : 0; };
    if (api == "chat") {
      c.prompt = get("prompt_tokens");
      c.completion = get("completion_tokens");
    } else if (api == "responses") {
      c.prompt = get("input_tokens");
      c.completion = get("output_tokens");
    } else if (o.contains("message") || !stream) {  // message_start, or the whole message
      c.prompt = get("input_tokens") + get("cache_read_input_tokens") + get("cache_creation_input_tokens");
      if (!stream) c.completion = get("output_tokens");
    } else {  // message_delta
      c.completion = get("output_tokens");
    }
  };
  if (!stream) {
    take(json::parse(body).as_object());
    return c;
  }
  std::size_t at = 0;
  while ((at = body.find("data: ", at)) != std::string::npos) {
    const auto end = body.find('\n', at);
    const std::string data = body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") continue;
    take(json::parse(data).as_object());
  }
  return c;
}

TEST_F(RealLlamaCpp, EveryApiStreamedAndNotIsMeasuredAndItsTokensAreTheEnginesOwn) {
  struct Case {
    std::string api, path, body;
    bool stream;
  };
  std::vector<Case> cases;
  for (bool stream : {true, false}) {
    const std::string st = stream ? "true" : "false";
    cases.push_back({"chat", "/v1/chat/completions",
                     R"({"model":"real-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":6,)"
                     R"("stream_options":{"include_usage":true},"stream":)" +
                         st + "}",
                     stream});
    if (!stream) cases.back().body = kNotStreamed;
    cases.push_back({"responses", "/v1/responses",
                     R"({"model":"real-llama","input":"Say hello","max_output_tokens":6,"stream":)" + st + "}",
                     stream});
    cases.push_back({"messages", "/v1/messages",
                     R"({"model":"real-llama","messages":[{"role":"user","content":"Say hello"}],"max_tokens":6,)"
                     R"("stream":)" +
                         st + "}",
                     stream});
  }
  std::vector<EngineCounts> expected;
  for (const auto& c : cases) {
    const auto r = http_post(proxy_->port, c.path, c.body, {{"anthropic-version", "2023-06-01"}});
    ASSERT_EQ(r.status, 200) << c.api << " " << r.body;
    expected.push_back(engine_counts(c.api, r.body, c.stream));
    ASSERT_GT(expected.back().prompt, 0) << c.api << " stream=" << c.stream << ": no usage in " << r.body;
    ASSERT_GE(expected.back().completion, 1) << c.api << " stream=" << c.stream;
  }
  EXPECT_EQ(proxy_->process.terminate(), 0);
  const auto lines = read_lines(dir_ + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto l = json::parse(lines[i]).as_object();
    const std::string what = fmt::format("{} stream={}: {}", cases[i].api, cases[i].stream, lines[i]);
    EXPECT_EQ(l.at("operation"), cases[i].api.c_str()) << what;
    EXPECT_EQ(l.at("outcome"), "ok") << what;
    EXPECT_EQ(l.at("token_source"), "usage") << what;
    EXPECT_EQ(l.at("prompt_tokens").as_int64(), expected[i].prompt) << what;
    EXPECT_EQ(l.at("completion_tokens").as_int64(), expected[i].completion) << what;
    EXPECT_EQ(l.at("response_model"), "real-llama") << what;
    if (cases[i].stream) {
      EXPECT_GT(l.at("ttft_ms").to_number<double>(), 0) << what;
      // One event per token, except where llama.cpp holds back a token that ends mid-character.
      EXPECT_GE(l.at("content_events").as_int64(), 1) << what;
      EXPECT_LE(l.at("content_events").as_int64(), expected[i].completion) << what;
    } else {
      EXPECT_TRUE(l.at("ttft_ms").is_null()) << what;
    }
  }
}

// The issue's case on the real engine: llama.cpp keeps each slot's prompt and serves the longest
// common prefix from it (timings.cache_n, usage cached_tokens). A sweep whose points send the same
// prompts measures that cache from the second point on; ours marks each point's prompts, so every
// point's cached share stays at the chat template's few tokens.
class RealLlamaCppSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = LlamaServer::unavailable()) GTEST_SKIP() << *why;
    dir_ = make_temp_dir();
  }
  json::object sweep(const LlamaServer& server, std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args = {"sweep", "--url", server.url() + "/v1", "--model", "real-llama", "--concurrencies",
                                     "1,2,4", "--requests", "8", "--input-tokens", "120", "--output-tokens", "4",
                                     "--batch-capacity", "4", "--capacity-source", "llama-server -np 4",
                                     // What these tests judge is the cache; on a 2-core machine
                                     // running other tests a send can be a few ms late, which the
                                     // default 1 ms bound calls client_saturated (CI run of stop 44).
                                     "--lateness-bound-ms", "200", "--quiet", "--output", dir_ + "/" + name + ".json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto run = run_cli(args, 180000);
    EXPECT_EQ(run.exit_code, 0) << run.out;
    return json::parse(read_file(dir_ + "/" + name + ".json")).as_object();
  }
  static const json::object& point(const json::object& receipt, int c) {
    for (const auto& p : receipt.at("points").as_array())
      if (p.at("concurrency").to_number<int>() == c) return p.at("tracks").as_array()[0].as_object();
    throw std::runtime_error("no point");
  }
  // The verdict's reason and the cache evidence, for a failure message.
  static std::string why(const json::object& tp) {
    std::string out;
    if (const auto* code = tp.if_contains("reason_code")) out += json::serialize(*code) + " ";
    if (const auto* reason = tp.if_contains("reason")) out += json::serialize(*reason) + " ";
    return out + json::serialize(tp.at("evidence").at("cache"));
  }
  static double share(const json::object& tp) {
    return tp.at("evidence").at("cache").at("cached_share").to_number<double>();
  }
  std::string dir_;
};

TEST_F(RealLlamaCppSweep, PointsSendTheirOwnPromptsAndTheCarryoverIsCaughtWhenTheyDoNot) {
  LlamaServer server(dir_ + "/llama.log");
  const auto fresh = sweep(server, {}, "fresh");
  for (int c : {1, 2, 4}) {
    const auto& tp = point(fresh, c);
    EXPECT_EQ(tp.at("status"), "valid") << c << ": " << why(tp);
    EXPECT_LT(share(tp), 0.2) << c;
  }
  const auto same = sweep(server, {"--same-prompts-every-point"}, "same");
  for (int c : {2, 4}) {
    const auto& tp = point(same, c);
    EXPECT_EQ(tp.at("reason_code"), "cache_carryover") << c;
    EXPECT_GT(share(tp), 0.8) << c;
  }
}

// Issue 38: a second sweep of the same workload on the same live server met the prefix cache the
// first had filled (99.5% of its prompt tokens at concurrency 1: cache_carryover). Each run now
// salts its prompts: the rerun is valid and `sweep compare` takes both (same workload digest).
TEST_F(RealLlamaCppSweep, ASecondRunOfTheSameSweepIsValidAndComparable) {
  LlamaServer server(dir_ + "/llama.log");  // llama.cpp's host-memory prompt cache on, as by default
  const auto first = sweep(server, {}, "first");
  const auto second = sweep(server, {}, "second");
  for (const auto* run : {&first, &second}) {
    for (int c : {1, 2, 4}) {
      const auto& tp = point(*run, c);
      EXPECT_EQ(tp.at("status"), "valid") << c << ": " << why(tp);
      EXPECT_LT(share(tp), 0.2) << c;
    }
  }
  EXPECT_EQ(first.at("workload").at("digest"), second.at("workload").at("digest"));
  EXPECT_NE(first.at("load").at("prompt_salt"), second.at("load").at("prompt_salt"));
  const auto compare = run_cli({"sweep", "compare", dir_ + "/first.json", dir_ + "/second.json", "--format", "json"});
  EXPECT_EQ(compare.exit_code, 0) << compare.out;
  // Without a salt the rerun repeats the first run's prompts: caught, and the verdict says what to do.
  const auto unsalted_a = sweep(server, {"--prompt-salt", "none"}, "unsalted-a");
  const auto unsalted_b = sweep(server, {"--prompt-salt", "none"}, "unsalted-b");
  const auto& again = point(unsalted_b, 1);
  EXPECT_EQ(again.at("reason_code"), "cache_carryover") << why(again);
  EXPECT_NE(json::serialize(again.at("reason"))
                .find("--reset-cache-between-points (llama.cpp: start it with "
                      "--slot-save-path DIR and --cache-ram 0)"),
            std::string::npos)
      << why(again);
}

// Issue 38: `--input-tokens 64` gave prompts of 177-192 tokens on the Llama tokenizer. The prompts
// are now fitted with llama.cpp's own tokenizer, its chat template included: 64 by its own count.
TEST_F(RealLlamaCppSweep, InputTokensAreWhatTheEngineCounts) {
  LlamaServer server(dir_ + "/llama.log");
  auto run = [&](std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args = {"sweep",
                                     "--url",
                                     server.url() + "/v1",
                                     "--model",
                                     "real-llama",
                                     "--concurrencies",
                                     "1,2,4",
                                     "--requests",
                                     "8",
                                     "--input-tokens",
                                     "64",
                                     "--output-tokens",
                                     "4",
                                     "--quiet",
                                     "--output",
                                     dir_ + "/" + name + ".json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto cli = run_cli(args, 180000);
    EXPECT_EQ(cli.exit_code, 0) << cli.out;
    return json::parse(read_file(dir_ + "/" + name + ".json")).as_object();
  };
  const auto r = run({}, "exact");
  EXPECT_EQ(r.at("load").at("prompt_lengths").as_string().rfind("exact: llama.cpp POST /apply-template", 0), 0u)
      << json::serialize(r.at("load"));
  for (int c : {1, 2, 4}) {
    const auto& tokens = point(r, c).at("evidence").at("tokens");
    EXPECT_EQ(tokens.at("input_min"), 64) << c << json::serialize(tokens);
    EXPECT_EQ(tokens.at("input_max"), 64) << c << json::serialize(tokens);
  }
  // Without the tokenizer, as before: four-letter words are about three tokens each on Llama's.
  const auto rough = run({"--approximate-input-tokens"}, "rough");
  EXPECT_GT(point(rough, 1).at("evidence").at("tokens").at("input_min").to_number<std::int64_t>(), 100);
  // A shared prefix of 40 tokens, fitted as such (before, its 40 words were about 110 tokens of a
  // 64-token prompt's 180): every prompt 64 tokens, and the engine served each one after the first
  // from its cache for at least the prefix.
  const auto prefixed = run({"--shared-prefix-tokens", "40", "--concurrencies", "1"}, "prefixed");
  EXPECT_NE(prefixed.at("load").at("prompt_lengths").as_string().find("; the shared prefix fitted to 40 tokens"),
            std::string::npos)
      << json::serialize(prefixed.at("load"));
  const auto& pt = point(prefixed, 1).at("evidence").at("tokens");
  EXPECT_EQ(pt.at("input_min"), 64) << json::serialize(pt);
  EXPECT_EQ(pt.at("input_max"), 64) << json::serialize(pt);
  std::size_t served_from_cache = 0, requests = 0;
  const auto& samples = point(prefixed, 1).at("samples").as_array();
  for (const auto& s : samples) {
    ++requests;
    const auto& u = s.at("usage").as_object();
    if (u.contains("cached_tokens") && u.at("cached_tokens").to_number<std::int64_t>() >= 40) ++served_from_cache;
  }
  EXPECT_GE(served_from_cache + 1, requests) << json::serialize(samples);
  // The other APIs too (before the forty-sixth session only chat was fitted: 276 to 301 tokens for
  // 100 asked): the Responses and Messages APIs' input as chat's template makes it, the completions
  // API's joined prompt as a prompt.
  for (const std::string api : {"responses", "messages", "completions"}) {
    const auto a = run({"--api", api, "--concurrencies", "2"}, api);
    EXPECT_EQ(a.at("load").at("prompt_lengths").as_string().rfind("exact: llama.cpp POST /", 0), 0u)
        << api << json::serialize(a.at("load"));
    const auto& tokens = point(a, 2).at("evidence").at("tokens");
    EXPECT_EQ(tokens.at("input_min"), 64) << api << json::serialize(tokens);
    EXPECT_EQ(tokens.at("input_max"), 64) << api << json::serialize(tokens);
  }
}

// Issue 38: the loop a CI pipeline runs: measure, change the engine, measure again, gate. One slot
// instead of four for four clients is a real regression (requests wait for the slot): exit 3. A
// bound the data cannot judge (a p99 from 24 requests) is not a pass: exit 4. The requests are
// decode-bound (short prompts, 256 output tokens): behind one slot a request waits for the others'
// whole answers, tens of ms each. With 200-token prompts and 16 output tokens the wait was a few ms
// against a prefill the four slots batch anyway, and a CI run (stop 46's check) measured TTFT p50
// 30.7 ms before and 32.4 ms after: no significant change, exit 0.
TEST_F(RealLlamaCppSweep, ACiGateFailsOnASlowerEngineAndCannotPassWhatItCannotJudge) {
  auto measure = [&](std::vector<std::string> server_args, const std::string& name) {
    LlamaServer server(dir_ + "/" + name + ".log", std::move(server_args));
    const auto cli = run_cli(
        {"sweep", "--url", server.url() + "/v1", "--model", "real-llama", "--concurrencies", "4", "--requests", "24",
         "--input-tokens", "32", "--output-tokens", "256", "--quiet", "--output", dir_ + "/" + name + ".json"},
        180000);
    EXPECT_EQ(cli.exit_code, 0) << cli.out;
    return dir_ + "/" + name + ".ledger.jsonl";
  };
  const std::string before = measure({}, "before");
  const std::string after = measure({"-np", "1"}, "after");
  auto gate = [&](const std::string& bound) {
    return run_cli_with_stderr("report --input " + after + " --baseline " + before + " --format json --output " + dir_ +
                               "/gate.json --max-regression " + bound);
  };
  const auto regressed = gate("ttft_p50_ms=20%");
  EXPECT_EQ(regressed.exit_code, 3) << regressed.out;
  EXPECT_NE(regressed.out.find("a significant regression beyond --max-regression (exit 3)"), std::string::npos)
      << regressed.out;
  const auto unjudged = gate("ttft_p99_ms=20%");
  EXPECT_EQ(unjudged.exit_code, 4) << unjudged.out;
}

// Issue 38: llama.cpp answers any model name as its own; a sweep with a wrong --model ran to the end
// and was found model_identity_mismatch afterwards. It now stops at the first answer, exit 1.
TEST_F(RealLlamaCppSweep, AWrongModelStopsAtTheFirstAnswer) {
  LlamaServer server(dir_ + "/llama.log");
  const auto run =
      run_cli_with_stderr("sweep --url " + server.url() +
                          "/v1 --model wrong-name --concurrencies 1,2 --requests 16 --output " + dir_ + "/wrong.json");
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find("stopped early: the server answered as model 'real-llama', not 'wrong-name'"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("run with --model real-llama"), std::string::npos) << run.out;
  EXPECT_LE(read_lines(dir_ + "/wrong.ledger.jsonl").size(), 2u);
}

// With no capacity declared, the sweep asks the server: llama.cpp's GET /props states its slots
// (four here), and the receipt names that as the capacity's source; the points up to it are valid
// (before: capacity_unknown at every point, nothing valid for claims).
TEST_F(RealLlamaCppSweep, WithNoCapacityDeclaredTheServersOwnSlotsAreTheCapacity) {
  LlamaServer server(dir_ + "/llama.log");
  const auto run = run_cli({"sweep", "--url", server.url() + "/v1", "--model", "real-llama", "--concurrencies", "2,4",
                            "--requests", "4", "--input-tokens", "40", "--output-tokens", "4", "--lateness-bound-ms",
                            "200", "--quiet", "--output", dir_ + "/own.json"},
                           180000);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const auto receipt = json::parse(read_file(dir_ + "/own.json")).as_object();
  const auto& contract = receipt.at("contracts").as_array().at(0).as_object();
  EXPECT_EQ(contract.at("batch_capacity").to_number<int>(), 4);
  const std::string source(contract.at("capacity_source").as_string());
  EXPECT_TRUE(source.starts_with("llama.cpp b")) << source;
  EXPECT_TRUE(source.ends_with(" GET /props total_slots")) << source;
  for (int c : {2, 4}) EXPECT_EQ(point(receipt, c).at("status"), "valid") << c << ": " << why(point(receipt, c));
}

TEST_F(RealLlamaCppSweep, SlotsAreErasedBetweenPointsWhenTheServerAllowsIt) {
  {
    // Without --slot-save-path llama.cpp refuses slot actions: the sweep stops before its first point.
    LlamaServer plain(dir_ + "/plain.log");
    const auto run = run_cli_with_stderr("sweep --url " + plain.url() +
                                         "/v1 --model real-llama --concurrencies 1,2 --requests 2 "
                                         "--reset-cache-between-points --quiet --output " +
                                         dir_ + "/refused.json");
    EXPECT_EQ(run.exit_code, 1) << run.out;
    EXPECT_NE(run.out.find("start llama-server with --slot-save-path DIR"), std::string::npos) << run.out;
  }
  std::filesystem::create_directories(dir_ + "/slots");
  // llama.cpp also keeps prompts in host memory (--cache-ram, 8 GiB by default), which slot erase
  // leaves alone: with it on, the points after a reset are still served from it (and caught as
  // cache_carryover, as this test found the first time it ran).
  LlamaServer server(dir_ + "/llama.log", {"--slot-save-path", dir_ + "/slots", "--cache-ram", "0"});
  const auto reset =
      sweep(server, {"--same-prompts-every-point", "--reset-cache-between-points", "--warmup", "0"}, "reset");
  for (int c : {1, 2, 4}) {
    const auto& tp = point(reset, c);
    EXPECT_EQ(tp.at("status"), "valid") << c << ": " << why(tp);
    EXPECT_EQ(tp.at("evidence").at("cache").at("reset").at("method"),
              "llama.cpp slot erase (GET /slots, POST /slots/ID?action=erase)");
  }
}

// Issue 37: cache-state-bench against llama.cpp printed mechanism_failed four times with the reason
// only in the JSON, and never tried the slot erase the sweep already used there.
TEST_F(RealLlamaCppSweep, CacheStateBenchUsesTheSlotEraseAndSaysWhyAMechanismFailed) {
  auto bench = [&](const LlamaServer& server, const std::string& name) {
    return run_cli_with_stderr("cache-state-bench --backend vllm --url " + server.url() +
                               "/v1 --model real-llama --transitions cold_start --output " + dir_ + "/" + name);
  };
  {
    LlamaServer plain(dir_ + "/plain.log");
    const auto run = bench(plain, "refused.json");
    EXPECT_EQ(run.exit_code, 1) << run.out;
    EXPECT_NE(run.out.find("cold_start           mechanism_failed (prefix-cache reset: "), std::string::npos)
        << run.out;
    EXPECT_NE(run.out.find("POST /reset_prefix_cache: HTTP 404"), std::string::npos) << run.out;
    EXPECT_NE(run.out.find("start llama-server with --slot-save-path DIR, and --cache-ram 0"), std::string::npos)
        << run.out;
  }
  std::filesystem::create_directories(dir_ + "/slots");
  LlamaServer server(dir_ + "/llama.log", {"--slot-save-path", dir_ + "/slots", "--cache-ram", "0"});
  const auto run = bench(server, "erased.json");
  const auto doc = json::parse(read_file(dir_ + "/erased.json")).as_object();
  const auto& receipt = doc.at("arms").as_array().at(0).at("transition_receipt").as_object();
  EXPECT_EQ(receipt.at("mechanism").at("name"), "llama.cpp slot erase (GET /slots, POST /slots/ID?action=erase)")
      << run.out;
  EXPECT_TRUE(receipt.at("mechanism").at("exit_ok").as_bool());
  // After the erase the pinned prefix is computed again: nothing of it is reused.
  EXPECT_EQ(receipt.at("probes").as_array().at(0).at("reused_tokens").as_int64(), 0);
  // llama.cpp publishes no process start time: the counter epoch is its /props media marker, drawn
  // when the process starts, the same before and after (no restart).
  const auto& pre_epoch = receipt.at("pre_metrics").at("counter_epoch").as_string();
  EXPECT_TRUE(pre_epoch.starts_with("llama.cpp /props media_marker=<__media_")) << pre_epoch;
  EXPECT_EQ(receipt.at("post_metrics").at("counter_epoch").as_string(), pre_epoch);
  EXPECT_NE(receipt.at("reason"), "counter_reset");
  // What still keeps the arm unproved is said in words.
  EXPECT_NE(run.out.find("the engine's /metrics publishes no request counter"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace mpo::test
