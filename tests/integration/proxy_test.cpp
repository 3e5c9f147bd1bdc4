// `modelperfobs proxy` in front of `modelperfobs simulate`, both real processes over loopback:
// forwarding, timing, token accounting, usage injection, every outcome, correlation, accuracy
// against the simulator's truth, SIGTERM and kill -9.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <future>
#include <regex>
#include <thread>

#include "core/uuid.hpp"
#include "support/canned_backend.hpp"
#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"
#include "support/sim_aborts.hpp"
#include "support/stack.hpp"
#include "support/through_proxy.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

json::object obj(const std::string& s) { return json::parse(s).as_object(); }

std::string chat(int max_tokens, const std::string& extra = "", const std::string& text = "Hello proxy") {
  return R"({"messages":[{"role":"user","content":")" + text + R"("}],"max_tokens":)" + std::to_string(max_tokens) +
         R"(,"stream":true)" + extra + "}";
}

// The proxy test's view of a Stack: ledger and truth as JSON.
struct ProxyStack : Stack {
  using Stack::Stack;
  std::vector<json::object> ledger() {
    std::vector<json::object> out;
    for (const auto& l : stop_proxy()) out.push_back(obj(l));
    return out;
  }
  std::vector<json::object> truth() {
    EXPECT_EQ(sim.process.terminate(), 0);
    std::vector<json::object> out;
    for (const auto& l : read_lines(dir + "/truth.jsonl")) out.push_back(obj(l));
    return out;
  }
};

std::string normalise_ids(const std::string& body) {
  static const std::regex ids(R"((chatcmpl|cmpl)-[0-9a-f-]+|"created":[0-9]+)");
  return std::regex_replace(body, ids, "ID");
}

double num(const json::value& v) { return v.to_number<double>(); }

TEST(Proxy, StreamedChatReachesTheClientAsTheBackendSentItAndIsRecorded) {
  ProxyStack s;
  const std::string body = chat(6, R"(,"stream_options":{"include_usage":true})");
  auto direct = http_post(s.sim.port, "/v1/chat/completions", body);
  auto proxied = http_post(s.proxy.port, "/v1/chat/completions", body);
  EXPECT_EQ(proxied.status, 200);
  EXPECT_EQ(normalise_ids(proxied.body), normalise_ids(direct.body));
  EXPECT_EQ(proxied.headers["x-accel-buffering"], "no");
  EXPECT_EQ(proxied.headers["content-type"], "text/event-stream; charset=utf-8");
  const std::string id = proxied.headers["x-fak-observation-id"];
  EXPECT_TRUE(is_uuid_v7(id)) << id;
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  auto& l = lines[0];
  EXPECT_EQ(l["schema"], "modelperfobs.observation.v1");
  EXPECT_EQ(l["observation_id"], id.c_str());
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["operation"], "chat");
  EXPECT_EQ(l["http_status"], 200);
  EXPECT_EQ(l["stream"], true);
  EXPECT_EQ(l["usage_requested"], true);
  EXPECT_EQ(l["completion_tokens"], 6);
  EXPECT_EQ(l["prompt_tokens"], 11);  // template 3 + "user" 1 + "Hell" "o" "prox" "y" 4 + primer 3
  EXPECT_EQ(l["content_events"], 6);
  EXPECT_EQ(l["token_source"], "usage");
  EXPECT_EQ(l["finish_reason"], "length");
  EXPECT_EQ(l["response_model"], "sim-model");
  EXPECT_GT(num(l["ttft_ms"]), 0);
  EXPECT_GE(num(l["ttft_ms"]), num(l["ttfb_ms"]));
  EXPECT_GT(num(l["e2e_ms"]), num(l["ttft_ms"]));
  EXPECT_NEAR(num(l["tpot_ms"]), (num(l["e2e_ms"]) - num(l["ttft_ms"])) / 5, 1e-6);
  EXPECT_EQ(l["response_bytes"], proxied.body.size());
}

TEST(Proxy, NonStreamedAndCompletionsAreRecordedWithUsageAndNoTtft) {
  ProxyStack s;
  auto r = http_post(s.proxy.port, "/v1/completions", R"({"prompt":"Hi","max_tokens":3})");
  ASSERT_EQ(r.status, 200);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["operation"], "text_completion");
  EXPECT_EQ(lines[0]["stream"], false);
  EXPECT_TRUE(lines[0]["ttft_ms"].is_null());
  EXPECT_EQ(lines[0]["completion_tokens"], 3);
  EXPECT_EQ(lines[0]["token_source"], "usage");
  EXPECT_GT(num(lines[0]["e2e_output_tokens_per_second"]), 0);
}

TEST(Proxy, TtftStartsAtReasoningOrToolCallsNeverAtTheRolePrelude) {
  {
    ProxyStack s({"--reasoning"});
    auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(10, R"(,"ignore_eos":true)"));
    ASSERT_NE(r.body.find("reasoning_content"), std::string::npos);
    const double first_reasoning_ms = r.us_until("\"reasoning_content\"") / 1000.0;
    auto lines = s.ledger();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["content_events"], 10);  // reasoning events count as generated content
    EXPECT_LE(num(lines[0]["ttft_ms"]), first_reasoning_ms);
    EXPECT_EQ(lines[0]["token_source"], "estimated");  // no usage asked, none injected
    EXPECT_EQ(lines[0]["completion_tokens"], 10);
  }
  {
    ProxyStack s;
    auto r = http_post(s.proxy.port, "/v1/chat/completions",
                       chat(4, R"(,"tool_choice":"required","tools":[{"type":"function","function":{"name":"f"}}])"));
    auto lines = s.ledger();
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0]["content_events"], 4);
    EXPECT_EQ(lines[0]["finish_reason"], "tool_calls");
    EXPECT_GT(num(lines[0]["ttft_ms"]), 0);
  }
}

TEST(Proxy, CoalescedChunksAndContinuousUsageAreCountedFromUsage) {
  ProxyStack s({"--tokens-per-chunk", "4"});
  http_post(s.proxy.port, "/v1/chat/completions", chat(10, R"(,"stream_options":{"continuous_usage_stats":true})"));
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["content_events"], 3);  // 4 + 4 + 2 tokens
  EXPECT_EQ(lines[0]["completion_tokens"], 10);
  EXPECT_EQ(lines[0]["token_source"], "continuous_usage");
}

TEST(Proxy, UsageInjectionAsksForUsageAndHidesItFromClientsThatDidNot) {
  ProxyStack s({}, {"--usage", "inject"});
  auto hidden = http_post(s.proxy.port, "/v1/chat/completions", chat(5));
  EXPECT_EQ(hidden.body.find("\"usage\""), std::string::npos);
  EXPECT_NE(hidden.body.find("[DONE]"), std::string::npos);
  auto asked = http_post(s.proxy.port, "/v1/chat/completions", chat(5, R"(,"stream_options":{"include_usage":true})"));
  EXPECT_NE(asked.body.find("\"usage\""), std::string::npos);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["usage_injected"], true);
  EXPECT_EQ(lines[0]["usage_requested"], false);
  EXPECT_EQ(lines[0]["token_source"], "usage");
  EXPECT_EQ(lines[0]["completion_tokens"], 5);
  EXPECT_EQ(lines[0]["prompt_tokens"], 11);
  EXPECT_EQ(lines[1]["usage_injected"], false);
  EXPECT_EQ(lines[1]["token_source"], "usage");
}

// In front of llama.cpp (`simulate --imitate llamacpp`): asked for usage, it puts its `timings` on
// the usage chunk, not on the finish chunk where a client that did not ask gets them. The client
// keeps the timings (the chunk without its usage); the line has the usage.
TEST(Proxy, UsageInjectionKeepsLlamaCppsTimingsForTheClient) {
  ProxyStack s({"--imitate", "llamacpp"}, {"--usage", "inject"});
  auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(5));
  EXPECT_EQ(r.body.find("\"usage\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"timings\":{\"cache_n\""), std::string::npos) << r.body;
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["usage_injected"], true);
  EXPECT_EQ(lines[0]["token_source"], "usage");
  EXPECT_EQ(lines[0]["completion_tokens"], 5);
}

TEST(Proxy, AFullDiskKeepsTheLedgerToWholeLinesAndTheExitSaysHowManyWereLost) {
  // The ledger's file may not grow past 2,000 bytes (prlimit --fsize): room for one or two lines,
  // then every write fails as on a full disk. The proxy keeps serving, keeps the ledger to whole
  // lines, and says at exit how many it could not keep.
  const std::string dir = make_temp_dir();
  const std::string ledger = dir + "/ledger.jsonl", err = dir + "/stderr.txt";
  const std::string backend = "http://127.0.0.1:" + std::to_string(free_loopback_port());
  ChildProcess proxy({"/bin/sh", "-c",
                      "exec prlimit --fsize=2000 -- \"$0\" proxy --backend \"$1\" --listen 127.0.0.1:0 "
                      "--admin-listen 127.0.0.1:0 --ledger \"$2\" 2>\"$3\"",
                      binary_path(), backend, ledger, err});
  const std::string first = proxy.read_line();
  const auto at = first.find("listening on ");
  ASSERT_NE(at, std::string::npos) << first;
  const auto port =
      static_cast<std::uint16_t>(std::stoi(first.substr(first.find(':', first.find("127.0.0.1", at)) + 1)));
  constexpr int kRequests = 6;
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(http_post(port, "/v1/chat/completions", chat(3)).status, 502);
  EXPECT_EQ(proxy.terminate(), 0);  // not killed by SIGXFSZ
  const std::string text = read_file(ledger);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');  // no fragment of a line at the end
  const auto lines = read_lines(ledger);
  for (const auto& l : lines) EXPECT_EQ(obj(l)["outcome"], "upstream_unreachable");
  ASSERT_GE(lines.size(), 1u);
  ASSERT_LT(lines.size(), static_cast<std::size_t>(kRequests));
  EXPECT_NE(read_file(err).find(fmt::format("{} ledger line(s) could not be written", kRequests - lines.size())),
            std::string::npos)
      << read_file(err);
}

TEST(Proxy, UnreachableBackendIsA502WithTheIdAndALedgerLine) {
  const std::string dir = make_temp_dir();
  Proxy proxy("http://127.0.0.1:" + std::to_string(free_loopback_port()), dir + "/ledger.jsonl");
  auto r = http_post(proxy.port, "/v1/chat/completions", chat(3), {{"X-Fak-Observation-ID", "agent-7.step:3"}});
  EXPECT_EQ(r.status, 502);
  EXPECT_EQ(r.headers["x-fak-observation-id"], "agent-7.step:3");
  EXPECT_EQ(obj(r.body)["error"].as_object()["type"], "upstream_unreachable");
  auto again = http_post(proxy.port, "/v1/models", "");  // still serving
  EXPECT_EQ(again.status, 502);
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  auto l = obj(lines[0]);
  EXPECT_EQ(l["outcome"], "upstream_unreachable");
  EXPECT_EQ(l["http_status"], 502);
  EXPECT_EQ(l["observation_id"], "agent-7.step:3");
  EXPECT_TRUE(l["ttft_ms"].is_null());
}

TEST(Proxy, BackendErrorsAreForwardedAndRecordedAsHttpError) {
  ProxyStack s;
  auto r =
      http_post(s.proxy.port, "/v1/chat/completions", R"({"model":"nope","messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(r.status, 404);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "http_error");
  EXPECT_EQ(lines[0]["http_status"], 404);
  EXPECT_EQ(lines[0]["error_type"], "NotFoundError");
  EXPECT_EQ(lines[0]["model"], "nope");
}

TEST(Proxy, BackendCuttingTheStreamEndsTheClientStreamTheSameWay) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/cut.json", R"({"scenarios":{"faults":{"error_share":0,"truncate_share":1,"stall_share":0}}})");
  ProxyStack s({"--profile", dir + "/cut.json"});
  http_post(s.sim.port, "/scenario?name=faults", "");
  auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(10, R"(,"ignore_eos":true)"));
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
  auto ok = http_get(s.proxy.port, "/v1/models");  // and keeps serving
  EXPECT_EQ(ok.status, 200);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["outcome"], "stream_truncated");
  EXPECT_EQ(lines[0]["content_events"], 5);  // partial timing and tokens are kept
  EXPECT_GT(num(lines[0]["ttft_ms"]), 0);
  EXPECT_EQ(lines[1]["outcome"], "ok");
}

TEST(Proxy, ClientDisconnectClosesTheUpstreamSoTheEngineAborts) {
  ProxyStack s;
  HttpRequest req;
  req.method = "POST";
  req.path = "/v1/chat/completions";
  req.body = chat(2000, R"(,"ignore_eos":true)");
  req.disconnect_after_body_bytes = 1;
  http(s.proxy.port, req);
  // The simulator counts the abort once the proxy has closed its upstream connection.
  EXPECT_EQ(wait_for_sim_aborts(s.sim.port, 1), 1);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "client_disconnected");
}

TEST(Proxy, AClientLeavingBeforeTheFirstByteClosesTheUpstreamBeforeTheEngineAnswers) {
  // The engine's first step takes 3 s. The client sends its request and closes while the engine is
  // still at it: only the proxy's watch on the client socket (a peek queued with the loop) can see
  // that, as nothing is written to the client before the first token. The engine then aborts the
  // request before sending any token, which the simulator's truth says.
  const std::string profile = make_temp_dir() + "/slow-first-step.json";
  write_file(profile, R"({"engine":{"step_base_s":3}})");
  ProxyStack s({"--profile", profile});
  const int fd = connect_loopback(s.proxy.port);
  ASSERT_GE(fd, 0);
  const std::string body = chat(4, R"(,"ignore_eos":true)");
  const std::string request = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: "
      "{}\r\n\r\n{}",
      body.size(), body);
  ASSERT_EQ(send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  // The engine has the request (the proxy forwarded it): now the client leaves.
  while (read_exposition(http_get(s.sim.port, "/metrics").body).find("vllm:num_requests_running").value_or(0) < 1) {
  }
  close(fd);
  EXPECT_EQ(wait_for_sim_aborts(s.sim.port, 1), 1);
  const auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("outcome"), "client_disconnected");
  EXPECT_TRUE(lines[0].at("ttft_ms").is_null());
  const auto truth = s.truth();
  ASSERT_EQ(truth.size(), 1u);
  EXPECT_EQ(truth[0].at("finish_reason"), "abort");
  // Without the watch the engine would have sent its first token 3 s on (the proxy would have
  // noticed the client gone only when writing it on).
  EXPECT_TRUE(truth[0].at("first_token_sent_at").is_null()) << json::serialize(truth[0]);
}

TEST(Proxy, ValidClientIdsAreAdoptedAndSentUpstreamInvalidOnesReplaced) {
  ProxyStack s;
  http_post(s.proxy.port, "/v1/chat/completions", chat(2), {{"X-Fak-Observation-ID", "run-1.req_9"}});
  auto bad = http_post(s.proxy.port, "/v1/chat/completions", chat(2), {{"X-Fak-Observation-ID", "has space!"}});
  EXPECT_TRUE(is_uuid_v7(bad.headers["x-fak-observation-id"]));
  auto lines = s.ledger();
  auto truth = s.truth();
  ASSERT_EQ(truth.size(), 2u);
  EXPECT_EQ(truth[0]["observation_id"], "run-1.req_9");
  EXPECT_EQ(truth[0]["x_request_id"], "run-1.req_9");
  EXPECT_EQ(lines[0]["upstream_request_id"], "run-1.req_9");
  EXPECT_EQ(truth[1]["observation_id"], bad.headers["x-fak-observation-id"].c_str());
}

// The ledger's writer gives each written observation back to the proxy for a later request, its
// strings' buffers kept (issue 43): a line must carry nothing of the request before it. Streamed
// chats with a long client id and usage alternate with model lists (no id, no model, no tokens),
// one at a time, so that later requests fill observations earlier lines were rendered from.
TEST(Proxy, ALineCarriesNothingOfTheRequestsBeforeIt) {
  ProxyStack s;
  std::vector<std::string> ids;
  for (int i = 0; i < 30; ++i) {
    if (i % 2 == 0) {
      const std::string id = fmt::format("a-client-supplied-id-longer-than-a-short-string-{}", i);
      http_post(s.proxy.port, "/v1/chat/completions", chat(3, R"(,"stream_options":{"include_usage":true})"),
                {{"X-Fak-Observation-ID", id}});
      ids.push_back(id);
    } else {
      const auto r = http_get(s.proxy.port, "/v1/models");
      ASSERT_EQ(r.status, 200);
      ids.push_back(r.headers.at("x-fak-observation-id"));
    }
  }
  const auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 30u);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    EXPECT_EQ(l.at("observation_id"), ids[i].c_str()) << i;
    if (i % 2 == 0) {
      EXPECT_EQ(l.at("path"), "/v1/chat/completions") << i;
      EXPECT_EQ(l.at("completion_tokens"), 3) << i;
      EXPECT_EQ(l.at("finish_reason"), "length") << i;
      EXPECT_EQ(l.at("usage_requested"), true) << i;
      continue;
    }
    EXPECT_TRUE(is_uuid_v7(ids[i])) << ids[i];
    EXPECT_EQ(l.at("path"), "/v1/models") << i;
    EXPECT_EQ(l.at("method"), "GET") << i;
    EXPECT_EQ(l.at("operation"), "models") << i;
    EXPECT_EQ(l.at("stream"), false) << i;
    EXPECT_EQ(l.at("usage_requested"), false) << i;
    for (const char* unset : {"model", "response_model", "response_id", "finish_reason", "choices", "ttft_ms",
                              "prompt_tokens", "completion_tokens", "total_tokens", "content_events", "itl_p50_ms"}) {
      EXPECT_TRUE(l.at(unset).is_null()) << i << " " << unset << ": " << json::serialize(l.at(unset));
    }
    EXPECT_EQ(l.at("token_source"), "none") << i;
    EXPECT_EQ(l.at("request_bytes"), 0) << i;
  }
}

TEST(Proxy, LedgerAgreesWithTheSimulatorsTruthAndNeverReportsTtftEarlier) {
  ProxyStack s;
  std::vector<std::future<HttpResponse>> fs;
  for (int i = 0; i < 24; ++i) {
    fs.push_back(std::async(std::launch::async, [&, i] {
      return http_post(s.proxy.port, "/v1/chat/completions",
                       chat(3 + i % 7, R"(,"stream_options":{"include_usage":true})", "accuracy " + std::to_string(i)));
    }));
  }
  for (auto& f : fs) f.get();
  auto lines = s.ledger();
  auto truth = s.truth();
  ASSERT_EQ(lines.size(), 24u);
  std::map<std::string, json::object> by_id;
  for (auto& t : truth) by_id[std::string(t["observation_id"].as_string())] = t;
  for (auto& l : lines) {
    auto& t = by_id.at(std::string(l["observation_id"].as_string()));
    EXPECT_EQ(l["completion_tokens"], t["completion_tokens"]);
    EXPECT_EQ(l["prompt_tokens"], t["prompt_tokens"]);
    EXPECT_GE(num(l["ttft_ms"]), num(t["ttft_ms"]));
    EXPECT_GE(num(l["in_flight_at_start"]), 0);
  }
}

TEST(Proxy, RequestBodiesOverTheLimitGet413AndALine) {
  ProxyStack s({}, {"--max-body", "100"});
  auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(2, "", std::string(200, 'x')));
  EXPECT_EQ(r.status, 413);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["http_status"], 413);
  EXPECT_EQ(lines[0]["outcome"], "proxy_error");
  EXPECT_EQ(lines[0]["timing_basis"], "loop");  // an answer of the proxy's own ends on its clock
}

TEST(Proxy, ARequestBodyOfManyReadsReachesTheEngineWhole) {
  // The proxy reads a Content-Length body itself (issue 43): one of 300 KB arrives in many reads
  // (the client's sends, the proxy's 16 KiB reads); the engine gets it all (a cut body is not JSON:
  // 400), and the line counts every byte. The padding is JSON whitespace: no tokens to count.
  ProxyStack s;
  const std::string body = "{" + std::string(300'000, ' ') + chat(2).substr(1);
  auto r = http_post(s.proxy.port, "/v1/chat/completions", body);
  EXPECT_EQ(r.status, 200) << r.body;
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "ok");
  EXPECT_EQ(lines[0]["request_bytes"], static_cast<std::int64_t>(body.size()));
}

TEST(Proxy, PipelinedRequestsInOneSendAreEachAnsweredInOrder) {
  // HTTP/1.1 lets a client send its next request before the answer to the last: three requests in
  // one send, so that the proxy reads them in one read. Each body is taken from the buffer without
  // the bytes of the next (issue 43: a body read with its head is taken at once), and each request
  // gets its answer, in order, and its own line. Bodies of different sizes; the last asks to close.
  ProxyStack s;
  const auto plain = [](int max_tokens, const std::string& text) {
    return R"({"messages":[{"role":"user","content":")" + text + R"("}],"max_tokens":)" + std::to_string(max_tokens) +
           R"(,"ignore_eos":true})";
  };
  const std::vector<std::string> bodies = {plain(1, "first"), plain(2, "second, a little longer"), plain(3, "third")};
  std::string bytes;
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    bytes += fmt::format(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
        "X-Fak-Observation-ID: pipelined-{}\r\n{}Content-Length: {}\r\n\r\n{}",
        i, i + 1 == bodies.size() ? "Connection: close\r\n" : "", bodies[i].size(), bodies[i]);
  }
  const int fd = connect_loopback(s.proxy.port);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
  const timeval wait_at_most{20, 0};  // a request lost would leave the connection open: fail, not hang
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait_at_most, sizeof wait_at_most);
  std::string answers;
  char chunk[4096];
  for (ssize_t n; (n = recv(fd, chunk, sizeof chunk, 0)) > 0;) answers.append(chunk, static_cast<std::size_t>(n));
  close(fd);
  // Three answers, in the order asked: each names the request's ID and carries its token count.
  std::vector<std::size_t> at;
  for (int i = 0; i < 3; ++i) at.push_back(answers.find(fmt::format("pipelined-{}", i)));
  ASSERT_NE(at[0], std::string::npos) << answers;
  ASSERT_NE(at[1], std::string::npos) << answers;
  ASSERT_NE(at[2], std::string::npos) << answers;
  EXPECT_LT(at[0], at[1]);
  EXPECT_LT(at[1], at[2]);
  std::size_t oks = 0;
  for (std::size_t p = answers.find("HTTP/1.1 200 "); p != std::string::npos; p = answers.find("HTTP/1.1 200 ", p + 1))
    ++oks;
  EXPECT_EQ(oks, 3u) << answers;
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i]["observation_id"], json::value(fmt::format("pipelined-{}", i)));
    EXPECT_EQ(lines[i]["outcome"], "ok");
    EXPECT_EQ(lines[i]["request_bytes"], static_cast<std::int64_t>(bodies[i].size()));
    EXPECT_EQ(lines[i]["completion_tokens"], static_cast<std::int64_t>(i + 1));
  }
}

TEST(Proxy, ConnectionsOverTheLimitGet503AndALine) {
  ProxyStack s({}, {"--max-connections", "1"});
  HttpRequest held;  // occupies the only connection with a long stream
  held.method = "POST";
  held.path = "/v1/chat/completions";
  held.body = chat(40, R"(,"ignore_eos":true)");
  auto first = std::async(std::launch::async, [&] { return http(s.proxy.port, held); });
  Exposition x;
  for (int i = 0; i < 5000; ++i) {
    x = read_exposition(http_get(s.proxy.admin_port, "/metrics").body);
    if (x.find("modelperfobs_requests_in_flight").value_or(0) == 1) break;
  }
  auto refused = http_post(s.proxy.port, "/v1/chat/completions", chat(2));
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(first.get().status, 200);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["http_status"], 503);
  EXPECT_EQ(lines[0]["outcome"], "proxy_error");
  EXPECT_EQ(lines[1]["outcome"], "ok");
}

TEST(Proxy, AdminMetricsCountRequestsByOutcome) {
  ProxyStack s;
  http_post(s.proxy.port, "/v1/chat/completions", chat(3, R"(,"stream_options":{"include_usage":true})"));
  const auto x = read_exposition(http_get(s.proxy.admin_port, "/metrics").body);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"outcome=\"ok\"", "code=\"200\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(x.find("modelperfobs_generation_tokens_total"), 3);
  EXPECT_EQ(http_get(s.proxy.admin_port, "/healthz").status, 200);
}

TEST(Proxy, SigtermDuring200InFlightStreamsWritesEveryLine) {
  ProxyStack s({}, {"--drain-timeout", "60"});
  std::vector<std::future<HttpResponse>> fs;
  for (int i = 0; i < 200; ++i) {
    fs.push_back(std::async(std::launch::async, [&, i] {
      return http_post(s.proxy.port, "/v1/chat/completions",
                       chat(20, R"(,"ignore_eos":true)", "drain " + std::to_string(i)));
    }));
  }
  Exposition x;
  for (int i = 0; i < 5000; ++i) {
    x = read_exposition(http_get(s.proxy.admin_port, "/metrics").body);
    if (x.find("modelperfobs_requests_in_flight").value_or(0) == 200) break;
  }
  ASSERT_EQ(x.find("modelperfobs_requests_in_flight"), 200);
  auto lines = s.ledger();  // SIGTERM now, with 200 streams in flight
  int complete = 0;
  for (auto& f : fs) complete += f.get().complete ? 1 : 0;
  EXPECT_EQ(complete, 200);
  ASSERT_EQ(lines.size(), 200u);
  for (auto& l : lines) EXPECT_EQ(l["outcome"], "ok");
}

TEST(Proxy, AfterKill9EveryLineWrittenBeforeIsReadable) {
  ProxyStack s;
  for (int i = 0; i < 5; ++i) http_post(s.proxy.port, "/v1/chat/completions", chat(2));
  // Lines are written off the request path; wait until the writer has them on disk.
  Exposition x;
  for (int i = 0; i < 5000; ++i) {
    x = read_exposition(http_get(s.proxy.admin_port, "/metrics").body);
    if (x.find("modelperfobs_ledger_lines_written_total").value_or(0) == 5) break;
  }
  kill(s.proxy.process.pid(), SIGKILL);
  const auto lines = read_lines(s.dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 5u);
  for (const auto& l : lines) EXPECT_EQ(obj(l)["outcome"], "ok");
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

std::string chunk(const std::string& s) { return http_chunk(s); }

// Runs one streamed request through a proxy in front of `backend`; returns the ledger line.
json::object through(CannedBackend& backend, HttpResponse* client = nullptr, std::vector<std::string> args = {}) {
  const auto lines = ledger_through(backend.port(), "/v1/chat/completions", chat(3), client, std::move(args));
  return lines.empty() ? json::object{} : obj(lines[0]);
}

TEST(ProxyAgainstMisbehavingBackends, GarbageInAStreamIsForwardedUnchangedAndMarkedMalformed) {
  const std::string garbage =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n<html>oops</html>\n\ndata: [DONE]\n\n";
  CannedBackend backend({write_step(kSseHead + chunk(garbage) + "0\r\n\r\n")});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_EQ(client.body, garbage);
  EXPECT_EQ(l["outcome"], "malformed_stream");
  EXPECT_EQ(l["content_events"], 1);
}

TEST(ProxyAgainstMisbehavingBackends, ResetMidStreamEndsTheClientStreamAndIsUpstreamReset) {
  CannedBackend backend({write_step(kSseHead + chunk("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")),
                         pause_step(50), reset_step()});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_FALSE(client.complete);
  EXPECT_EQ(l["outcome"], "upstream_reset");
  EXPECT_EQ(l["content_events"], 1);
  EXPECT_EQ(l["token_source"], "estimated");
}

// Which read of the client's brought the byte at `at` of the raw response.
std::size_t arrival_index(const HttpResponse& r, std::size_t at) {
  for (std::size_t i = 0; i < r.arrivals.size(); ++i) {
    if (r.arrivals[i].second > at) return i;
  }
  return r.arrivals.size();
}

TEST(ProxyHttpDetails, TheHeadIsNotHeldBackWhenOnlyChunkFramingCameWithIt) {
  // The backend sends its head and a chunk-size line, then thinks for a while before the data:
  // the client must have the head (status, headers) before the data comes, not with it.
  const std::string event = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
  const std::string sized = chunk(event);
  const auto size_line_end = sized.find("\r\n") + 2;
  CannedBackend backend({write_step(kSseHead + sized.substr(0, size_line_end)), pause_step(300),
                         write_step(sized.substr(size_line_end) + "0\r\n\r\n")});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_EQ(client.status, 200);
  EXPECT_TRUE(client.complete);
  EXPECT_EQ(client.body, event);
  const auto head_end = client.raw.find("\r\n\r\n");
  const auto data_at = client.raw.find("data:");
  ASSERT_NE(data_at, std::string::npos);
  EXPECT_LT(arrival_index(client, head_end), arrival_index(client, data_at));
  EXPECT_EQ(l["outcome"], "ok");
}

TEST(ProxyAgainstMisbehavingBackends, AResetAfterTheHeadAndAChunkSizeLineStillGivesTheClientTheHead) {
  // Only framing came with the head, then the backend reset: the client gets the head and a
  // response that ends as the backend's did, and the line says so.
  CannedBackend backend({write_step(std::string(kSseHead) + "40\r\n"), pause_step(50), reset_step()});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_EQ(client.status, 200);
  EXPECT_FALSE(client.complete);
  EXPECT_EQ(l["outcome"], "upstream_reset");
  EXPECT_EQ(l["http_status"], 200);
  EXPECT_EQ(l["content_events"], 0);
}

TEST(ProxyHttpDetails, EventsLeaveAsTheyComeNeverHeldForLaterOnes) {
  // Three events with pauses between them: each reaches the client before the backend sends the
  // next (never buffered or coalesced). Engines often flush the head with the first event and the
  // last event with the final chunk: such a read leaves in one write, the same bytes arriving.
  const std::string e1 = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
  const std::string e2 = "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n";
  const std::string e3 = "data: [DONE]\n\n";
  CannedBackend backend({write_step(kSseHead + chunk(e1)), pause_step(200), write_step(chunk(e2)), pause_step(200),
                         write_step(chunk(e3) + "0\r\n\r\n")});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_TRUE(client.complete);
  EXPECT_EQ(client.body, e1 + e2 + e3);
  const auto at = [&](const std::string& needle) { return arrival_index(client, client.raw.find(needle)); };
  EXPECT_LT(at("\"a\""), at("\"b\""));
  EXPECT_LT(at("\"b\""), at("[DONE]"));
  EXPECT_EQ(at("\r\n\r\n"), at("\"a\""));
  EXPECT_EQ(at("[DONE]"), at("\r\n0\r\n\r\n"));
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["content_events"], 2);
  EXPECT_GE(num(l["itl_p50_ms"]), 150);  // the proxy's own clock saw the pause too
}

TEST(ProxyAgainstMisbehavingBackends, CloseBeforeTheResponseHeadIsA502UpstreamReset) {
  CannedBackend backend({close_step()});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_EQ(client.status, 502);
  EXPECT_EQ(l["outcome"], "upstream_reset");
  EXPECT_EQ(l["http_status"], 502);
}

TEST(ProxyAgainstMisbehavingBackends, NoResponseInTimeIsA504UpstreamTimeout) {
  CannedBackend backend({pause_step(3000)});
  HttpResponse client;
  auto l = through(backend, &client, {"--response-timeout", "0.3"});
  EXPECT_EQ(client.status, 504);
  EXPECT_EQ(l["outcome"], "upstream_timeout");
}

TEST(ProxyAgainstMisbehavingBackends, SilenceInsideAStreamOverTheIdleTimeoutIsUpstreamTimeout) {
  CannedBackend backend(
      {write_step(kSseHead + chunk("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")), pause_step(3000)});
  HttpResponse client;
  auto l = through(backend, &client, {"--stream-idle-timeout", "0.3"});
  EXPECT_FALSE(client.complete);
  EXPECT_EQ(l["outcome"], "upstream_timeout");
  EXPECT_GT(l["ttft_ms"].to_number<double>(), 0);
}

TEST(ProxyHttpDetails, AChunkedBodyReachesTheClientAsTheBackendFramedIt) {
  // Issue 43: the backend's chunked body is relayed as it came, not decoded and framed again: an
  // event split across two chunks, a chunk extension, an upper-case size and a trailer all reach the
  // client byte for byte, and the line still reads the events inside.
  const std::string half1 = "data: {\"choices\":[{\"delta\":{\"content\":";  // 38 bytes: 0x26
  const std::string half2 = "\"a\"}}]}\n\n";
  ASSERT_EQ(half1.size(), 0x26u);
  const std::string body = "26;source=engine\r\n" + half1 + "\r\n" + chunk(half2) +
                           "3D\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n\r\n" +
                           "0\r\nX-Engine-Trailer: 1\r\n\r\n";
  CannedBackend backend({write_step(kSseHead + body.substr(0, 30)), pause_step(50), write_step(body.substr(30))});
  HttpResponse client;
  auto l = through(backend, &client);
  EXPECT_TRUE(client.complete);
  const auto head_end = client.raw.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  EXPECT_EQ(client.raw.substr(head_end + 4), body);
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["content_events"], 2);
}

TEST(ProxyHttpDetails, AStreamWhoseUsageIsStrippedIsFramedAgain) {
  // With `--usage inject` the proxy removes the usage event the client did not ask for: those bytes
  // cannot go as they came, so the body is framed again (and stays a well-formed chunked body).
  const std::string events =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n"
      "data: [DONE]\n\n";
  CannedBackend backend({write_step(kSseHead + chunk(events) + "0\r\n\r\n")});
  HttpResponse client;
  auto l = through(backend, &client, {"--usage", "inject"});
  EXPECT_TRUE(client.complete);
  EXPECT_EQ(client.body.find("\"usage\""), std::string::npos);
  EXPECT_NE(client.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(l["token_source"], "usage");
  EXPECT_EQ(l["completion_tokens"], 1);
}

TEST(ProxyAgainstMisbehavingBackends, AnErrorEventInAStreamIsRecordedAsAStreamError) {
  const std::string body =
      "data: {\"error\":{\"message\":\"engine died\",\"type\":\"InternalServerError\",\"code\":500}}\n\n";
  CannedBackend backend({write_step(kSseHead + chunk(body) + "0\r\n\r\n")});
  auto l = through(backend);
  EXPECT_EQ(l["outcome"], "stream_error");
  EXPECT_EQ(l["error_type"], "InternalServerError");
  EXPECT_EQ(l["error_message"], "engine died");
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

TEST(ProxyHttpDetails, ExpectContinueIsAnsweredAndTheRequestGoesThrough) {
  ProxyStack s;
  auto r = http_post(s.proxy.port, "/v1/chat/completions", chat(2), {{"Expect", "100-continue"}});
  EXPECT_EQ(r.interim_responses, 1);
  EXPECT_EQ(r.status, 200);
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["outcome"], "ok");
}

TEST(ProxyHttpDetails, HeadResponsesAreNotWaitedOnForABody) {
  CannedBackend backend({write_step("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n"),
                         pause_step(3000)});
  const std::string dir = make_temp_dir();
  Proxy proxy("http://127.0.0.1:" + std::to_string(backend.port()), dir + "/ledger.jsonl",
              {"--stream-idle-timeout", "2"});
  HttpRequest head;
  head.method = "HEAD";
  head.path = "/v1/models";
  auto r = http(proxy.port, head, 1500);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-length"], "42");
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(obj(lines[0])["outcome"], "ok");
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

TEST(ProxyWithCurl, CurlStreamsThroughTheProxyAndGetsWhatItGetsDirectly) {
  ProxyStack s;
  const std::string body = chat(5, R"(,"stream_options":{"include_usage":true})");
  auto curl = [&](std::uint16_t port) {
    ChildProcess p({"/usr/bin/curl", "-sN", "http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions", "-H",
                    "Content-Type: application/json", "-d", body});
    std::string out;
    try {
      for (;;) out += p.read_line() + "\n";
    } catch (const std::exception&) {
      // curl closed its stdout: the stream ended
    }
    EXPECT_EQ(p.wait(), 0);
    return out;
  };
  const std::string direct = curl(s.sim.port);
  const std::string proxied = curl(s.proxy.port);
  EXPECT_NE(proxied.find("data: [DONE]"), std::string::npos);
  EXPECT_EQ(normalise_ids(proxied), normalise_ids(direct));
  auto lines = s.ledger();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["completion_tokens"], 5);
}

}  // namespace
}  // namespace mpo::test
