// The Responses API and Anthropic Messages API through `modelperfobs proxy`, in front of
// `modelperfobs simulate` (and, for the shapes the simulator never sends, a scripted backend):
// what the client receives is what it receives directly, the ledger agrees with the simulator's
// truth, and every outcome the chat tests check holds for the two event-typed APIs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <future>
#include <map>
#include <ostream>
#include <regex>
#include <set>

#include "core/time.hpp"
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
double num(const json::value& v) { return v.to_number<double>(); }

struct Api {
  std::string name;  // the ledger's operation
  std::string path;
  // A streamed (or not) request for `max_tokens` tokens.
  std::string (*body)(int max_tokens, bool stream, const std::string& text, const std::string& extra);
};

std::string responses_body(int max_tokens, bool stream, const std::string& text, const std::string& extra) {
  return fmt::format(R"({{"input":[{{"role":"user","content":"{}"}}],"max_output_tokens":{},"stream":{}{}}})", text,
                     max_tokens, stream, extra);
}
std::string messages_body(int max_tokens, bool stream, const std::string& text, const std::string& extra) {
  return fmt::format(R"({{"messages":[{{"role":"user","content":"{}"}}],"max_tokens":{},"stream":{}{}}})", text,
                     max_tokens, stream, extra);
}

// How gtest names a parameter in test listings (ctest shows it).
void PrintTo(const Api& api, std::ostream* os) { *os << api.name; }

const Api kResponses{"responses", "/v1/responses", responses_body};
const Api kMessages{"messages", "/v1/messages", messages_body};

class ProxyApis : public ::testing::TestWithParam<Api> {};

// Ids and creation times differ between two requests; nothing else may.
std::string normalise(const std::string& body) {
  static const std::regex ids(R"((resp|msg|rs)_[0-9a-f-]+(_[0-9]+)?|"created_at":[0-9]+)");
  return std::regex_replace(body, ids, "ID");
}

TEST_P(ProxyApis, StreamedReachesTheClientUnchangedAndIsMeasuredLikeChat) {
  const Api& api = GetParam();
  Stack s({"--reasoning"});
  const std::string body = api.body(8, true, "Hello proxy", "");
  auto direct = http_post(s.sim.port, api.path, body);
  auto proxied = http_post(s.proxy.port, api.path, body);
  ASSERT_EQ(proxied.status, 200);
  EXPECT_EQ(normalise(proxied.body), normalise(direct.body));
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 1u);
  auto l = obj(lines[0]);
  EXPECT_EQ(l["operation"], api.name.c_str());
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["stream"], true);
  EXPECT_EQ(l["token_source"], "usage");
  EXPECT_EQ(l["completion_tokens"], 8);
  EXPECT_EQ(l["prompt_tokens"], 11);  // the same prompt as chat's "Hello proxy" test
  EXPECT_EQ(l["content_events"], 8);  // reasoning and text deltas, one token each
  EXPECT_EQ(l["response_model"], "sim-model");
  EXPECT_EQ(l["finish_reason"], api.name == "messages" ? "max_tokens" : "max_output_tokens");
  EXPECT_GT(num(l["ttft_ms"]), 0);
  EXPECT_GE(num(l["ttft_ms"]), num(l["ttfb_ms"]));
  EXPECT_GT(num(l["e2e_ms"]), num(l["ttft_ms"]));
  EXPECT_EQ(l["itl_p50_ms"].is_null(), false);
  if (api.name == "responses") {
    EXPECT_EQ(l["reasoning_tokens"], 3);  // the --reasoning share of 8
  }
  EXPECT_EQ(l["response_bytes"], proxied.body.size());
}

TEST_P(ProxyApis, NotStreamedIsRecordedWithUsageAndNoTtft) {
  const Api& api = GetParam();
  Stack s;
  auto r = http_post(s.proxy.port, api.path, api.body(5, false, "Hi", ""));
  ASSERT_EQ(r.status, 200);
  auto l = obj(s.stop_proxy().at(0));
  EXPECT_EQ(l["operation"], api.name.c_str());
  EXPECT_EQ(l["stream"], false);
  EXPECT_TRUE(l["ttft_ms"].is_null());
  EXPECT_EQ(l["completion_tokens"], 5);
  EXPECT_EQ(l["token_source"], "usage");
  EXPECT_EQ(l["outcome"], "ok");
}

TEST_P(ProxyApis, LedgerAgreesWithTheSimulatorsTruthUnderConcurrency) {
  const Api& api = GetParam();
  Stack s;
  // A long prompt sent once first fills the prefix cache; every fourth request below repeats it, so
  // those hit the cache whatever order the concurrent ones are scheduled in.
  const std::string repeated(300, 'a');
  ASSERT_EQ(http_post(s.proxy.port, api.path, api.body(3, true, repeated, "")).status, 200);
  std::vector<std::future<HttpResponse>> fs;
  for (int i = 0; i < 16; ++i) {
    fs.push_back(std::async(std::launch::async, [&, i] {
      const std::string text = i % 4 == 0 ? repeated : "accuracy " + std::to_string(i);
      return http_post(s.proxy.port, api.path, api.body(3 + i % 5, true, text, ""));
    }));
  }
  for (auto& f : fs) EXPECT_EQ(f.get().status, 200);
  std::vector<json::object> lines;
  for (const auto& l : s.stop_proxy()) lines.push_back(obj(l));
  ASSERT_EQ(s.sim.process.terminate(), 0);
  std::map<std::string, json::object> truth;
  for (const auto& t : read_lines(s.dir + "/truth.jsonl")) {
    auto o = obj(t);
    truth[std::string(o["observation_id"].as_string())] = o;
  }
  ASSERT_EQ(lines.size(), 17u);
  int cached = 0;
  for (auto& l : lines) {
    auto& t = truth.at(std::string(l["observation_id"].as_string()));
    EXPECT_EQ(l["outcome"], "ok");
    EXPECT_EQ(l["completion_tokens"], t["completion_tokens"]);
    EXPECT_EQ(l["prompt_tokens"], t["prompt_tokens"]);
    EXPECT_EQ(l["cached_prompt_tokens"], t["cached_prompt_tokens"]);
    EXPECT_GE(num(l["ttft_ms"]), num(t["ttft_ms"]));
    cached += static_cast<int>(num(t["cached_prompt_tokens"]));
  }
  EXPECT_GT(cached, 0) << "no request hit the prefix cache: the cached-token mapping was not exercised";
}

TEST_P(ProxyApis, ABackendCuttingTheStreamIsStreamTruncatedWithPartialTiming) {
  const Api& api = GetParam();
  const std::string dir = make_temp_dir();
  write_file(dir + "/cut.json", R"({"scenarios":{"faults":{"error_share":0,"truncate_share":1,"stall_share":0}}})");
  Stack s({"--profile", dir + "/cut.json"});
  http_post(s.sim.port, "/scenario?name=faults", "");
  auto r = http_post(s.proxy.port, api.path, api.body(10, true, "cut", R"(,"ignore_eos":true)"));
  EXPECT_EQ(r.status, 200);
  EXPECT_FALSE(r.complete);
  auto l = obj(s.stop_proxy().at(0));
  EXPECT_EQ(l["outcome"], "stream_truncated");
  EXPECT_EQ(l["content_events"], 5);
  EXPECT_EQ(l["token_source"], "estimated");
  EXPECT_GT(num(l["ttft_ms"]), 0);
}

TEST_P(ProxyApis, An5xxFromTheBackendIsAnHttpErrorWithItsErrorType) {
  const Api& api = GetParam();
  const std::string dir = make_temp_dir();
  write_file(dir + "/err.json", R"({"scenarios":{"faults":{"error_share":1,"truncate_share":0,"stall_share":0}}})");
  Stack s({"--profile", dir + "/err.json"});
  http_post(s.sim.port, "/scenario?name=faults", "");
  auto r = http_post(s.proxy.port, api.path, api.body(4, true, "boom", ""));
  EXPECT_EQ(r.status, 500);
  auto l = obj(s.stop_proxy().at(0));
  EXPECT_EQ(l["outcome"], "http_error");
  EXPECT_EQ(l["error_type"], api.name == "messages" ? "api_error" : "InternalServerError");
}

TEST_P(ProxyApis, AClientLeavingMidStreamIsADisconnectAndTheEngineAborts) {
  const Api& api = GetParam();
  Stack s;
  HttpRequest req;
  req.method = "POST";
  req.path = api.path;
  req.body = api.body(2000, true, "leave", R"(,"ignore_eos":true)");
  req.disconnect_after_body_bytes = 1;
  http(s.proxy.port, req);
  EXPECT_EQ(wait_for_sim_aborts(s.sim.port, 1), 1);
  auto l = obj(s.stop_proxy().at(0));
  EXPECT_EQ(l["outcome"], "client_disconnected");
}

// The two APIs as llama.cpp b10309 answers them (`simulate --imitate llamacpp`: no sequence numbers
// or ping, `response.completed` at the length limit with the engine's `timings` beside it, usage
// members in its order, ids "chatcmpl-" for Messages), streamed and not: the lines agree with the
// simulator's truth, and the Responses stream's line keeps the engine's timings, as in front of the
// real server (RealLlamaCpp.EveryApiStreamedAndNotIsMeasuredAndItsTokensAreTheEnginesOwn).
TEST_P(ProxyApis, LlamaCppsDialectIsMeasuredAsItsTruthSays) {
  const Api& api = GetParam();
  Stack s({"--imitate", "llamacpp"});
  const std::string repeated(200, 'b');
  for (const bool stream : {true, false}) {
    for (int i = 0; i < 2; ++i) {  // the second finds the first's prompt in the prefix cache
      const auto r = http_post(s.proxy.port, api.path, api.body(6, stream, repeated, R"(,"ignore_eos":true)"));
      ASSERT_EQ(r.status, 200) << r.body;
      if (stream) {
        EXPECT_EQ(r.body.find("sequence_number"), std::string::npos) << r.body;
      }
    }
  }
  const auto lines = s.stop_proxy();
  ASSERT_EQ(s.sim.process.terminate(), 0);
  std::map<std::string, json::object> truth;
  for (const auto& t : read_lines(s.dir + "/truth.jsonl")) {
    auto o = obj(t);
    truth[std::string(o["observation_id"].as_string())] = o;
  }
  ASSERT_EQ(lines.size(), 4u);
  int cached = 0;
  for (const auto& line : lines) {
    auto l = obj(line);
    auto& t = truth.at(std::string(l["observation_id"].as_string()));
    EXPECT_EQ(l["outcome"], "ok") << line;
    EXPECT_EQ(l["token_source"], "usage") << line;
    EXPECT_EQ(l["completion_tokens"], 6) << line;
    EXPECT_EQ(l["prompt_tokens"], t["prompt_tokens"]) << line;
    EXPECT_EQ(l["cached_prompt_tokens"], t["cached_prompt_tokens"]) << line;
    // llama.cpp's word for the limit: Messages' max_tokens; the Responses API "completed" either way.
    EXPECT_EQ(l["finish_reason"], api.name == "messages" ? "max_tokens" : "completed") << line;
    if (api.name == "messages") {
      EXPECT_EQ(std::string(l["response_id"].as_string()).rfind("chatcmpl-", 0), 0u) << line;
    }
    const bool timings = api.name == "responses" && l["stream"].as_bool();
    ASSERT_EQ(!l["server_timings"].is_null(), timings) << line;
    if (timings) {
      EXPECT_EQ(l["server_timings"].at("predicted_n"), 6) << line;
    }
    cached += static_cast<int>(num(t["cached_prompt_tokens"]));
  }
  EXPECT_GT(cached, 0) << "no request hit the prefix cache";
}

INSTANTIATE_TEST_SUITE_P(EventTypedApis, ProxyApis, ::testing::Values(kResponses, kMessages),
                         [](const ::testing::TestParamInfo<Api>& p) { return p.param.name; });

// ---- shapes the simulator never sends: a scripted backend ----

const std::string kResponsesEvents =
    "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"model\":\"m\"}}"
    "\n\nevent: response.output_text.delta\ndata: "
    "{\"type\":\"response.output_text.delta\",\"item_id\":\"i\",\"delta\":\"a\"}\n\n";
const std::string kMessagesEvents =
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\","
    "\"usage\":{\"input_tokens\":4,\"output_tokens\":0}}}\n\nevent: content_block_delta\ndata: "
    "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n";

json::object one_line(CannedBackend& backend, const Api& api, HttpResponse* client = nullptr,
                      std::map<std::string, std::string> headers = {}) {
  const auto lines = ledger_through(backend.port(), api.path, api.body(3, true, "x", ""), client, {}, headers);
  return lines.empty() ? json::object{} : obj(lines[0]);
}

TEST(ProxyApisAgainstScriptedBackends, ABodyThatEndsWithoutTheTerminalEventIsStreamTruncated) {
  for (const auto& [api, events] : {std::pair{kResponses, kResponsesEvents}, std::pair{kMessages, kMessagesEvents}}) {
    CannedBackend backend({write_step(kSseHead + http_chunk(events) + "0\r\n\r\n")});
    HttpResponse client;
    auto l = one_line(backend, api, &client);
    EXPECT_TRUE(client.complete) << api.name;  // the framing was fine: the API's own end was missing
    EXPECT_EQ(l["outcome"], "stream_truncated") << api.name;
    EXPECT_EQ(l["error_type"], "stream_truncated") << api.name;
    EXPECT_EQ(l["content_events"], 1) << api.name;
    EXPECT_GT(num(l["ttft_ms"]), 0) << api.name;
  }
}

TEST(ProxyApisAgainstScriptedBackends, AResetMidStreamIsUpstreamReset) {
  for (const auto& [api, events] : {std::pair{kResponses, kResponsesEvents}, std::pair{kMessages, kMessagesEvents}}) {
    CannedBackend backend({write_step(kSseHead + http_chunk(events)), pause_step(50), reset_step()});
    auto l = one_line(backend, api);
    EXPECT_EQ(l["outcome"], "upstream_reset") << api.name;
    EXPECT_EQ(l["content_events"], 1) << api.name;
  }
}

TEST(ProxyApisAgainstScriptedBackends, GarbageIsForwardedUnchangedAndMarkedMalformed) {
  const std::string responses =
      kResponsesEvents + "<html>oops</html>\n\n" +
      "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n";
  const std::string messages =
      kMessagesEvents + "<html>oops</html>\n\n" + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  for (const auto& [api, events] : {std::pair{kResponses, responses}, std::pair{kMessages, messages}}) {
    CannedBackend backend({write_step(kSseHead + http_chunk(events) + "0\r\n\r\n")});
    HttpResponse client;
    auto l = one_line(backend, api, &client);
    EXPECT_EQ(client.body, events) << api.name;
    EXPECT_EQ(l["outcome"], "malformed_stream") << api.name;
  }
}

TEST(ProxyApisAgainstScriptedBackends, ErrorEventsAreStreamErrorsWithTheirTypeAndMessage) {
  const std::string anthropic = kMessagesEvents +
                                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                                "\"message\":\"Overloaded\"}}\n\n";
  const std::string failed = kResponsesEvents +
                             "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":"
                             "\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":"
                             "\"engine died\"}}}\n\n";
  for (const auto& [api, events, type, message] : {std::tuple{kMessages, anthropic, "overloaded_error", "Overloaded"},
                                                   std::tuple{kResponses, failed, "server_error", "engine died"}}) {
    CannedBackend backend({write_step(kSseHead + http_chunk(events) + "0\r\n\r\n")});
    auto l = one_line(backend, api);
    EXPECT_EQ(l["outcome"], "stream_error") << api.name;
    EXPECT_EQ(l["error_type"], type) << api.name;
    EXPECT_EQ(l["error_message"], message) << api.name;
  }
}

TEST(ProxyApisAgainstScriptedBackends, AnthropicHeadersPassThroughUntouched) {
  CannedBackend backend({write_step(
      kSseHead + http_chunk(kMessagesEvents + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") +
      "0\r\n\r\n")});
  auto l = one_line(backend, kMessages, nullptr,
                    {{"anthropic-version", "2023-06-01"},
                     {"x-api-key", "sk-ant-test-123"},
                     {"anthropic-beta", "prompt-caching-2024-07-31"}});
  const std::string head = backend.last_request();
  EXPECT_NE(head.find("anthropic-version: 2023-06-01\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("x-api-key: sk-ant-test-123\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("anthropic-beta: prompt-caching-2024-07-31\r\n"), std::string::npos) << head;
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["operation"], "messages");
}

TEST(ProxyApisAgainstScriptedBackends, EmbeddingsRerankAndScoreAreRecordedWithPromptTokensAndNoTtft) {
  const std::string body = R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]}],)"
                           R"("model":"e5","usage":{"prompt_tokens":7,"total_tokens":7}})";
  const std::string response = fmt::format(
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", body.size(), body);
  for (const auto& [path, operation] :
       {std::pair{"/v1/embeddings", "embeddings"}, std::pair{"/v1/rerank", "rerank"}, std::pair{"/score", "score"}}) {
    CannedBackend backend({write_step(response)});
    const auto lines = ledger_through(backend.port(), path, R"({"model":"e5","input":"hello"})");
    ASSERT_EQ(lines.size(), 1u);
    auto l = obj(lines[0]);
    EXPECT_EQ(l["operation"], operation);
    EXPECT_EQ(l["outcome"], "ok");
    EXPECT_EQ(l["prompt_tokens"], 7);
    EXPECT_TRUE(l["ttft_ms"].is_null());
    EXPECT_TRUE(l["completion_tokens"].is_null());
    EXPECT_EQ(l["response_model"], "e5");
  }
}

TEST(ProxyApisAgainstScriptedBackends, UnknownEventTypesAreIgnoredAndCountedOnTheAdminMetrics) {
  const std::string events = kResponsesEvents +
                             "event: response.brand_new.delta\ndata: {\"type\":\"response.brand_new.delta\","
                             "\"delta\":\"zzz\"}\n\n" +
                             "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{}}\n\n";
  CannedBackend backend({write_step(kSseHead + http_chunk(events) + "0\r\n\r\n")});
  const std::string dir = make_temp_dir();
  Proxy proxy("http://127.0.0.1:" + std::to_string(backend.port()), dir + "/ledger.jsonl");
  auto r = http_post(proxy.port, "/v1/responses", responses_body(3, true, "x", ""));
  EXPECT_EQ(r.body, events);
  Exposition x;
  for (int i = 0; i < 200 && !x.find("modelperfobs_stream_unknown_events_total", {"responses"}); ++i) {
    x = read_exposition(http_get(proxy.admin_port, "/metrics").body);  // the line may be a moment behind
  }
  EXPECT_EQ(x.find("modelperfobs_stream_unknown_events_total", {"responses"}), 1);
  EXPECT_EQ(proxy.process.terminate(), 0);
  auto l = obj(read_lines(dir + "/ledger.jsonl").at(0));
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["content_events"], 1);
}

}  // namespace
}  // namespace mpo::test

namespace mpo::test {
namespace {

// Sessions (docs/FORMATS.md "Sessions"): each line names the conversation its request belongs to
// and its turn, from the session header, a Responses chain or an end-user identity (a digest).
TEST(ProxySessions, EachLineCarriesItsConversationAndTurn) {
  Stack s;
  auto chat = [](const std::string& extra) {
    return R"({"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2)" + extra + "}";
  };
  for (const char* session : {"agent-1", "agent-1", "agent-2", "agent-1"}) {
    ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat(""), {{"X-Session-ID", session}}).status, 200);
  }
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat(R"(,"user":"alice@example.com")")).status, 200);
  }
  ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions", chat("")).status, 200);
  // A Responses conversation: the second turn continues the first by its id, streamed.
  auto first = http_post(s.proxy.port, "/v1/responses", responses_body(2, false, "turn one", ""));
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string first_id(obj(first.body)["id"].as_string());
  auto second =
      http_post(s.proxy.port, "/v1/responses",
                responses_body(2, true, "turn two", fmt::format(R"(,"previous_response_id":"{}")", first_id)));
  ASSERT_EQ(second.status, 200) << second.body;
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 9u);
  std::vector<json::object> l;
  for (const auto& line : lines) l.push_back(obj(line));
  auto session = [](const json::object& o) {
    return o.at("session_id").is_null() ? std::string("-") : std::string(o.at("session_id").as_string());
  };
  EXPECT_EQ(session(l[0]), "agent-1");
  EXPECT_EQ(l[0]["turn"], 1);
  EXPECT_EQ(l[0]["session_source"], "header");
  EXPECT_EQ(l[1]["turn"], 2);
  EXPECT_EQ(session(l[2]), "agent-2");
  EXPECT_EQ(l[2]["turn"], 1);
  EXPECT_EQ(l[3]["turn"], 3);
  // The user is a digest in the line, the same for both of her requests; her address is nowhere.
  EXPECT_EQ(l[4]["session_source"], "user");
  EXPECT_EQ(session(l[4]).rfind("sha256:", 0), 0u);
  EXPECT_EQ(session(l[5]), session(l[4]));
  EXPECT_EQ(l[5]["turn"], 2);
  for (const auto& line : lines) EXPECT_EQ(line.find("alice"), std::string::npos) << line;
  EXPECT_TRUE(l[6]["session_id"].is_null());
  EXPECT_TRUE(l[6]["turn"].is_null());
  EXPECT_EQ(session(l[7]), first_id);  // a chain is named by its first response
  EXPECT_EQ(l[7]["turn"], 1);
  EXPECT_EQ(session(l[8]), first_id);
  EXPECT_EQ(l[8]["turn"], 2);
  EXPECT_EQ(l[8]["session_source"], "previous_response_id");
  // The report counts the requests of each turn: four first turns, three second, one third.
  const auto report = run_cli({"report", s.ledger_path(), "--format", "json"});
  ASSERT_EQ(report.exit_code, 0) << report.out;
  const auto doc = json::parse(report.out).as_object();
  const auto& by_turn = doc.at("result").at("groups").at(0).at("turns").at("by_turn").as_array();
  ASSERT_EQ(by_turn.size(), 3u) << report.out;
  EXPECT_EQ(by_turn[0].at("requests"), 4);
  EXPECT_EQ(by_turn[1].at("requests"), 3);
  EXPECT_EQ(by_turn[2].at("turn"), 3);
  EXPECT_EQ(by_turn[2].at("requests"), 1);
  // The page draws TTFT and the cached share by turn, a point per turn (TTFT only where streamed).
  const auto page = run_cli({"report", s.ledger_path(), "--format", "html"});
  ASSERT_EQ(page.exit_code, 0);
  EXPECT_NE(page.out.find(R"(data-title="TTFT by turn")"), std::string::npos);
  EXPECT_NE(page.out.find(R"(data-name="cached share" data-kind="line-dots" data-points="3")"), std::string::npos);
}

TEST(ProxySessions, TheSessionHeaderCanBeRenamedOrTurnedOff) {
  Stack s({}, {"--session-header", "X-Conversation"});
  const std::string body = R"({"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
  ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions", body, {{"X-Conversation", "c-1"}}).status, 200);
  ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions", body, {{"X-Session-ID", "ignored"}}).status, 200);
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(obj(lines[0])["session_id"], "c-1");
  EXPECT_TRUE(obj(lines[1])["session_id"].is_null());
  Stack off({}, {"--session-header", "off"});
  ASSERT_EQ(http_post(off.proxy.port, "/v1/chat/completions", body, {{"X-Session-ID", "s"}}).status, 200);
  const auto off_lines = off.stop_proxy();
  ASSERT_EQ(off_lines.size(), 1u);
  EXPECT_TRUE(obj(off_lines[0])["session_id"].is_null());
}

// A request for several choices (`n`), as vLLM serves one and the simulator imitates: a sequence a
// choice, their chunks interleaved by index, one usage for all. The line counts every choice and its
// tokens, agrees with the simulator's truth (a line a choice), and times each choice's gaps apart:
// read across choices, one step's tokens of two choices would look 0 ms apart.
TEST(ProxyChoices, ARequestForSeveralChoicesIsCountedWholeAndTimedChoiceByChoice) {
  Stack s;
  auto r = http_post(s.proxy.port, "/v1/chat/completions",
                     R"({"messages":[{"role":"user","content":"three answers"}],"max_tokens":12,"n":3,)"
                     R"("ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200);
  std::set<std::int64_t> indices, finished;
  std::int64_t usage_tokens = -1;
  for (const auto& d : r.sse_data()) {
    if (d == "[DONE]") continue;
    auto o = obj(d);
    for (const auto& c : o["choices"].as_array()) {
      const auto i = c.as_object().at("index").as_int64();
      indices.insert(i);
      if (!c.as_object().at("finish_reason").is_null()) finished.insert(i);
    }
    if (const auto* u = o.if_contains("usage"); u && u->is_object())
      usage_tokens = u->as_object().at("completion_tokens").as_int64();
  }
  EXPECT_EQ(indices, (std::set<std::int64_t>{0, 1, 2}));
  EXPECT_EQ(finished, indices);
  EXPECT_EQ(usage_tokens, 36);
  // And whole: two completions, their text and one usage for both.
  auto whole = http_post(s.proxy.port, "/v1/completions",
                         R"({"prompt":"two completions","max_tokens":5,"n":2,)"
                         R"("ignore_eos":true})");
  ASSERT_EQ(whole.status, 200);
  auto body = obj(whole.body);
  ASSERT_EQ(body["choices"].as_array().size(), 2u);
  EXPECT_EQ(body["choices"].as_array()[1].as_object()["index"], 1);
  EXPECT_EQ(body["usage"].as_object()["completion_tokens"], 10);

  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 2u);
  auto streamed = obj(lines[0]);
  EXPECT_EQ(streamed["choices"], 3) << lines[0];
  EXPECT_EQ(streamed["completion_tokens"], 36) << lines[0];
  EXPECT_EQ(streamed["content_events"], 36) << lines[0];
  auto not_streamed = obj(lines[1]);
  EXPECT_EQ(not_streamed["choices"], 2) << lines[1];
  EXPECT_EQ(not_streamed["completion_tokens"], 10) << lines[1];

  EXPECT_EQ(s.sim.process.terminate(), 0);
  std::vector<json::object> truth;
  for (const auto& l : read_lines(s.dir + "/truth.jsonl")) truth.push_back(obj(l));
  ASSERT_EQ(truth.size(), 5u);  // a line a choice
  std::set<std::int64_t> truth_choices;
  double per_token_ms = 1e9;
  for (const auto& t : truth) {
    if (t.at("response_id") != streamed["response_id"]) continue;
    truth_choices.insert(t.at("choice").as_int64());
    EXPECT_EQ(t.at("completion_tokens"), 12);
    const auto ms = [&](const char* k) { return static_cast<double>(*parse_rfc3339(t.at(k).as_string())) / 1000.0; };
    per_token_ms = std::min(per_token_ms, (ms("last_token_at") - ms("first_token_at")) / 11);
  }
  EXPECT_EQ(truth_choices, (std::set<std::int64_t>{0, 1, 2}));
  // Each choice's pace is the engine's step, as its own truth says; not 0 from reading across choices.
  EXPECT_GT(num(streamed["itl_p50_ms"]), 0.5 * per_token_ms) << lines[0];
  EXPECT_NEAR(num(streamed["tpot_ms"]), per_token_ms, 0.5 * per_token_ms) << lines[0];
}

// The same requests as llama.cpp b10309 answers them (`simulate --imitate llamacpp`): each choice's
// finish in a chunk of its own and a usage of its own (chat: a usage chunk after each finish;
// completions: the usage on each finish chunk, asked for or not). The line adds the choices' usages
// (the prompt once), as against the real server (RealLlamaCppVerdicts.ARequestForSeveralChoices...).
TEST(ProxyChoices, LlamaCppsShapeOfSeveralChoicesIsCountedTheSame) {
  Stack s({"--imitate", "llamacpp"});
  auto chat = http_post(s.proxy.port, "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"three answers"}],"max_tokens":6,"n":3,)"
                        R"("ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(chat.status, 200);
  int usage_chunks = 0;
  for (const auto& d : chat.sse_data()) {
    if (d != "[DONE]" && obj(d).contains("usage")) ++usage_chunks;
  }
  EXPECT_EQ(usage_chunks, 3);  // one a choice, 6 tokens each
  auto completion = http_post(s.proxy.port, "/v1/completions",
                              R"({"prompt":"two completions","max_tokens":5,"n":2,"ignore_eos":true,"stream":true})");
  ASSERT_EQ(completion.status, 200);
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 2u);
  auto c = obj(lines[0]);
  EXPECT_EQ(c["choices"], 3) << lines[0];
  EXPECT_EQ(c["completion_tokens"], 18) << lines[0];
  EXPECT_EQ(c["content_events"], 18) << lines[0];
  EXPECT_EQ(c["token_source"], "usage") << lines[0];
  auto p = obj(lines[1]);
  EXPECT_EQ(p["choices"], 2) << lines[1];
  EXPECT_EQ(p["completion_tokens"], 10) << lines[1];
  EXPECT_EQ(num(p["total_tokens"]), num(p["prompt_tokens"]) + 10) << lines[1];
}

}  // namespace
}  // namespace mpo::test
