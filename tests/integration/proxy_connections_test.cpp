// Issue 17: the proxy in front of backends that close keep-alive connections at their own times
// (llama.cpp closes after every streamed response while offering keep-alive), and clients that
// leave as soon as they have read a stream's terminal event. Real processes over loopback: the
// proxy, `simulate --stream-end llamacpp`, and a scripted backend that closes at the worst moment.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "support/canned_backend.hpp"
#include "support/http_client.hpp"
#include "support/keep_alive_backend.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"
#include "support/stack.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

const std::string kStreamed = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":4,"stream":true})";
const std::string kNotStreamed = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":4})";
// For the simulator: two tokens keep each exchange short (its engine steps take milliseconds).
const std::string kShortStreamed = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":2,"stream":true})";
const std::string kShortNotStreamed = R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":2})";

struct Ledger {
  std::vector<json::object> lines;
  std::map<std::string, int> outcomes;
  std::int64_t retries = 0;
};

Ledger read_ledger(const std::string& path) {
  Ledger l;
  for (const auto& text : read_lines(path)) {
    auto o = json::parse(text).as_object();
    ++l.outcomes[std::string(o.at("outcome").as_string())];
    l.retries += o.at("upstream_retries").as_int64();
    l.lines.push_back(std::move(o));
  }
  return l;
}

std::string outcomes_text(const Ledger& l) {
  std::string s;
  for (const auto& [k, n] : l.outcomes) s += fmt::format("{}={} ", k, n);
  return s;
}

double retries_metric(const Proxy& proxy, const char* cause) {
  const auto x = read_exposition(http_get(proxy.admin_port, "/metrics").body);
  return x.find("modelperfobs_upstream_retries_total", {fmt::format("cause=\"{}\"", cause)}).value_or(-1);
}

// A streamed then a non-streamed chat request, each on a new client connection; returns how many
// of the pair failed (a status other than 200, or a stream without its end).
// The sockets process `pid` holds open to 127.0.0.1:`port` (any TCP state: CLOSE_WAIT included),
// from /proc/net/tcp's inodes and the process's descriptors.
int sockets_to(pid_t pid, std::uint16_t port) {
  std::set<std::string> inodes;
  std::ifstream tcp("/proc/net/tcp");
  std::string line;
  std::getline(tcp, line);  // the header
  while (std::getline(tcp, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    in >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
    if (remote.size() > 5 && std::stoul(remote.substr(remote.size() - 4), nullptr, 16) == port) inodes.insert(inode);
  }
  int n = 0;
  for (const auto& fd : std::filesystem::directory_iterator(fmt::format("/proc/{}/fd", pid))) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.starts_with("socket:[") && inodes.count(target.substr(8, target.size() - 9)) > 0) ++n;
  }
  return n;
}

// Waits (up to 10 s) for the proxy to hold no socket to the backend; returns how many it holds.
int sockets_to_backend_after_wait(pid_t pid, std::uint16_t port) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int n = sockets_to(pid, port);
  while (n > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    n = sockets_to(pid, port);
  }
  return n;
}

int send_pair(std::uint16_t port, const std::string& streamed = kStreamed,
              const std::string& not_streamed = kNotStreamed) {
  int failed = 0;
  const auto s = http_post(port, "/v1/chat/completions", streamed);
  if (s.status != 200 || !s.complete || s.body.find("[DONE]") == std::string::npos) ++failed;
  const auto n = http_post(port, "/v1/chat/completions", not_streamed);
  if (n.status != 200) ++failed;
  return failed;
}

// A proxy in front of a scripted backend on `port`, with its ledger in a fresh folder.
struct Fronted {
  Fronted(std::uint16_t port, std::vector<std::string> args = {})
      : dir(make_temp_dir()), proxy(fmt::format("http://127.0.0.1:{}", port), dir + "/ledger.jsonl", std::move(args)) {}
  // Stops the proxy (flushing the ledger) and reads its lines.
  Ledger stop() {
    EXPECT_EQ(proxy.process.terminate(), 0);
    return read_ledger(dir + "/ledger.jsonl");
  }
  std::string dir;
  Proxy proxy;
};

// A keep-alive client's socket can look readable with nothing to read (the request was read by
// recvmsg outside Asio's reactor): the proxy took that for the client leaving, cut the request
// (client_disconnected) and the load generator sent it again on a fresh connection, so the ledger
// had 5-150 lines more than requests sent. The watch now peeks before it believes a close.
TEST(ProxyClientConnections, KeepAliveClientsAreNeverTakenForGone) {
  Stack s;
  const auto dir = make_temp_dir();
  const auto run = run_cli(
      {"sweep", "--url", fmt::format("http://127.0.0.1:{}/v1", s.proxy.port), "--model", "sim-model", "--concurrencies",
       "20", "--requests", "100", "--warmup", "0", "--input-tokens", "32", "--output-tokens", "50", "--ignore-eos",
       // No POST /tokenize calls through the proxy: the ledger holds the streams alone.
       "--approximate-input-tokens", "--quiet", "--output", dir + "/receipt.json"},
      180000);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  s.stop_proxy();
  const auto l = read_ledger(s.ledger_path());
  EXPECT_EQ(l.lines.size(), 101u) << outcomes_text(l);  // 100 streams and the start-up GET /v1/models
  EXPECT_EQ(l.outcomes.count("client_disconnected"), 0u) << outcomes_text(l);
}

// Connections accepted before their requests come (a burst of clients, each writing a moment after
// its connect): once two first reads found nothing, the proxy's next connections wait for their
// first readiness edge instead of asking the kernel in vain (issue 43; proxy/first_reads.hpp). A
// read that waited past bytes already there would hang its connection: every request here is
// answered, the connections then kept alive, and connections that write at once after them too.
TEST(ProxyClientConnections, ConnectionsWhoseRequestsComeLateAreAllAnsweredAndKeptAlive) {
  namespace asio = boost::asio;
  namespace http = boost::beast::http;
  Stack s;
  asio::io_context io;
  const asio::ip::tcp::endpoint proxy(asio::ip::make_address("127.0.0.1"), s.proxy.port);
  const auto connect = [&] {
    asio::ip::tcp::socket c(io);
    c.connect(proxy);
    const timeval ten_s{10, 0};  // a lost wake-up fails the read, not the whole test binary
    ::setsockopt(c.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &ten_s, sizeof ten_s);
    return c;
  };
  const auto ask = [&](asio::ip::tcp::socket& c, const std::string& what) {
    http::request<http::string_body> req(http::verb::post, "/v1/chat/completions", 11);
    req.set(http::field::host, "127.0.0.1");
    req.set(http::field::content_type, "application/json");
    req.body() = kShortNotStreamed;
    req.prepare_payload();
    http::write(c, req);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    boost::system::error_code ec;
    http::read(c, buffer, res, ec);
    EXPECT_FALSE(ec) << what << ": " << ec.message();
    EXPECT_EQ(res.result_int(), 200u) << what;
    EXPECT_TRUE(res.keep_alive()) << what;
  };
  std::vector<asio::ip::tcp::socket> late;
  for (int i = 0; i < 8; ++i) late.push_back(connect());
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < late.size(); ++i) ask(late[i], fmt::format("late connection {}, request {}", i, round));
  }
  for (int i = 0; i < 8; ++i) {
    auto c = connect();
    ask(c, fmt::format("prompt connection {}", i));
  }
  late.clear();
  const auto lines = s.stop_proxy();
  EXPECT_EQ(lines.size(), 24u);
  for (const auto& line : lines) EXPECT_NE(line.find("\"outcome\":\"ok\""), std::string::npos) << line;
}

TEST(ProxyClientConnections, ASlowClientGetsAStreamLargerThanTheSocketBuffersWholeAndInOrder) {
  // 8 MB of events to a client that offers a 4 KiB window and reads 4 KiB at a time: the proxy's
  // writes find the client's socket full again and again, and what the socket did not take goes
  // out when it can (issue 43: writes go out at once, the rest through a wait). Every event
  // arrives once, in order, and the line counts them all.
  constexpr int kEvents = 40000;
  std::string events;
  std::string wire = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < kEvents; ++i) {
    const std::string e = fmt::format(
        "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{{\"index\":0,"
        "\"delta\":{{\"content\":\"token {:06d} {}\"}}}}]}}\n\n",
        i, std::string(120, 'x'));
    events += e;
    wire += fmt::format("{:x}\r\n{}\r\n", e.size(), e);
  }
  const std::string finish =
      "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,"
      "\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
  events += finish;
  wire += fmt::format("{:x}\r\n{}\r\n0\r\n\r\n", finish.size(), finish);
  ASSERT_GT(events.size(), 8u << 20);
  CannedBackend backend({write_step(wire)});
  const std::string dir = make_temp_dir();
  Proxy proxy("http://127.0.0.1:" + std::to_string(backend.port()), dir + "/ledger.jsonl");
  HttpRequest slow;
  slow.method = "POST";
  slow.path = "/v1/chat/completions";
  slow.body = kStreamed;
  slow.read_at_most = 4096;
  const auto r = http(proxy.port, slow);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.body.size(), events.size());
  EXPECT_TRUE(r.body == events) << "the body differs from what the backend sent";
  EXPECT_GT(r.arrivals.size(), 1000u);  // it did come in small reads
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 1u);
  const auto l = json::parse(lines[0]).as_object();
  EXPECT_EQ(l.at("outcome"), "ok");
  EXPECT_EQ(l.at("content_events"), kEvents);
  EXPECT_EQ(l.at("finish_reason"), "length");
}

TEST(ProxyUpstreamConnections, ABackendClosingAfterEveryStreamAtTheWorstMomentCostsNoRequest) {
  KeepAliveBackend backend(KeepAliveBackend::Close::kFin);
  Fronted f(backend.port());
  auto& proxy = f.proxy;
  int failed = 0;
  for (int i = 0; i < 1000; ++i) failed += send_pair(proxy.port);
  EXPECT_EQ(failed, 0);
  const double metric = retries_metric(proxy, "eof");
  EXPECT_EQ(retries_metric(proxy, "reset"), 0);
  const auto l = f.stop();
  ASSERT_EQ(l.lines.size(), 2000u);
  EXPECT_EQ(l.outcomes.at("ok"), 2000) << outcomes_text(l);
  // Every request the backend dropped unanswered was sent again, and said so.
  EXPECT_GE(backend.dropped(), 1);
  EXPECT_EQ(l.retries, backend.dropped());
  EXPECT_EQ(metric, static_cast<double>(l.retries));
  // The proxy learns that this backend closes after streams and stops pooling those connections
  // (a probe every 32nd): far fewer retries than pairs.
  EXPECT_LT(l.retries, 100) << "the close-after-stream learning did not take";
}

TEST(ProxyUpstreamConnections, AResetAtTheWorstMomentIsRetriedAndCountedAsAReset) {
  KeepAliveBackend backend(KeepAliveBackend::Close::kReset, /*close_after_every_response=*/true);
  Fronted f(backend.port());
  auto& proxy = f.proxy;
  int failed = 0;
  for (int i = 0; i < 100; ++i) failed += send_pair(proxy.port);
  EXPECT_EQ(failed, 0);
  const double metric = retries_metric(proxy, "reset") + retries_metric(proxy, "broken_pipe");
  const auto l = f.stop();
  EXPECT_EQ(l.outcomes.at("ok"), 200) << outcomes_text(l);
  EXPECT_GE(l.retries, 1);
  EXPECT_EQ(l.retries, backend.dropped());
  EXPECT_EQ(metric, static_cast<double>(l.retries));
}

TEST(ProxyUpstreamConnections, WithRetryStaleOffTheSameRaceIsA502) {
  KeepAliveBackend backend(KeepAliveBackend::Close::kFin);
  // One event loop whatever MPO_PROXY_THREADS says: each loop pools its own upstream connections,
  // and the second request (a new client connection) must reach the loop holding the doomed one.
  Fronted f(backend.port(), {"--retry-stale", "off", "--threads", "1"});
  auto& proxy = f.proxy;
  const auto s = http_post(proxy.port, "/v1/chat/completions", kStreamed);
  EXPECT_EQ(s.status, 200);
  const auto n = http_post(proxy.port, "/v1/chat/completions", kNotStreamed);  // on the pooled, doomed connection
  EXPECT_EQ(n.status, 502);
  EXPECT_EQ(retries_metric(proxy, "eof"), 0);
  const auto l = f.stop();
  ASSERT_EQ(l.lines.size(), 2u);
  EXPECT_EQ(l.lines[1].at("outcome"), "upstream_reset");
  EXPECT_EQ(l.lines[1].at("upstream_retries"), 0);
  EXPECT_EQ(backend.dropped(), 1);
}

TEST(ProxyUpstreamConnections, APooledConnectionTheBackendClosedWhileIdleIsNotUsedAgain) {
  // The backend offers keep-alive, answers, and closes the connection a moment later (its
  // keep-alive timeout, say). The proxy watches pooled connections while they wait (a queued peek
  // of its event loop, issue 43): the next request, sent once the backend has closed, goes on a
  // fresh connection. With retries off, reusing the closed one would be a 502.
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
  CannedBackend backend({write_step(ok), pause_step(20), close_step()});
  Fronted f(backend.port(), {"--retry-stale", "off", "--threads", "1"});
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(http_post(f.proxy.port, "/v1/chat/completions", kNotStreamed).status, 200) << "request " << i;
    // Each connection the backend took closed (its state, not a time) before the next request.
    while (backend.closes() < backend.connections()) std::this_thread::yield();
  }
  EXPECT_EQ(backend.connections(), 3);
  const auto l = f.stop();
  ASSERT_EQ(l.lines.size(), 3u);
  EXPECT_EQ(l.outcomes.at("ok"), 3) << outcomes_text(l);
  EXPECT_EQ(l.retries, 0);
}

// A pooled connection is closed when the backend closes it, and when it has waited its limit
// (--pool-idle), whether or not another request comes: after a burst the connections a steady load
// never reaches again were held open for good, those the backend had closed in CLOSE_WAIT.
TEST(ProxyUpstreamConnections, PooledConnectionsAreClosedWhenTheBackendClosesThemOrTheirIdleLimitPasses) {
  {
    const std::string ok = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
    CannedBackend backend({write_step(ok), pause_step(20), close_step()});
    Fronted f(backend.port(), {"--threads", "1", "--pool-idle", "600"});
    EXPECT_EQ(http_post(f.proxy.port, "/v1/chat/completions", kNotStreamed).status, 200);
    while (backend.closes() < 1) std::this_thread::yield();  // counted just after its close
    EXPECT_EQ(sockets_to_backend_after_wait(f.proxy.process.pid(), backend.port()), 0) << "the backend closed it";
    EXPECT_EQ(f.stop().outcomes.at("ok"), 1);
  }
  KeepAliveBackend backend;  // keeps its connections for as long as the proxy does
  Fronted f(backend.port(), {"--threads", "1", "--pool-idle", "0.2"});
  EXPECT_EQ(http_post(f.proxy.port, "/v1/chat/completions", kNotStreamed).status, 200);
  EXPECT_EQ(sockets_to_backend_after_wait(f.proxy.process.pid(), backend.port()), 0) << "--pool-idle 0.2 passed";
  // The next request opens a new one.
  EXPECT_EQ(http_post(f.proxy.port, "/v1/chat/completions", kNotStreamed).status, 200);
  EXPECT_EQ(backend.connections(), 2);
  EXPECT_EQ(f.stop().outcomes.at("ok"), 2);
}

TEST(ProxyUpstreamConnections, PoolIdleZeroOpensABackendConnectionForEveryRequest) {
  // The backend keeps its connections after non-streamed responses: by default three requests in
  // a row go on one connection; with --pool-idle 0 each opens its own, and none is dropped.
  for (const bool pooled : {true, false}) {
    KeepAliveBackend backend;
    std::vector<std::string> args{"--threads", "1"};
    if (!pooled) args.insert(args.end(), {"--pool-idle", "0"});
    Fronted f(backend.port(), args);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(http_post(f.proxy.port, "/v1/chat/completions", kNotStreamed).status, 200) << "request " << i;
    }
    const auto l = f.stop();
    EXPECT_EQ(l.outcomes.at("ok"), 3) << outcomes_text(l);
    EXPECT_EQ(backend.connections(), pooled ? 1 : 3) << (pooled ? "default" : "--pool-idle 0");
    EXPECT_EQ(backend.dropped(), 0);
  }
}

TEST(ProxyUpstreamConnections, AResetOnAFreshConnectionIsNeverRetried) {
  CannedBackend backend({reset_step()});  // reads the request, then resets
  Fronted f(backend.port());
  auto& proxy = f.proxy;
  const auto r = http_post(proxy.port, "/v1/chat/completions", kNotStreamed);
  EXPECT_EQ(r.status, 502);
  const auto l = f.stop();
  ASSERT_EQ(l.lines.size(), 1u);
  EXPECT_EQ(l.lines[0].at("outcome"), "upstream_reset");
  EXPECT_EQ(l.lines[0].at("upstream_retries"), 0);
  EXPECT_EQ(backend.connections(), 1);
}

// `simulate --stream-end llamacpp` sends the chunked terminator 5 ms after [DONE]: a client that
// stops at [DONE] has usually closed by then (on a busy machine a slow client may read both
// together, so only "at least once" is asserted of the timing; every line must be ok whatever it was).
TEST(ProxyStreamEndings, ClientsThatLeaveRightAfterDoneAreOkInFrontOfALlamaCppStyleEnding) {
  Stack s({"--stream-end", "llamacpp"});
  int saw_done = 0, left_before_terminator = 0;
  for (int i = 0; i < 100; ++i) {
    const auto r = chat_leaving_after(s.proxy.port, kShortStreamed, "data: [DONE]");
    if (r.raw.find("data: [DONE]") == std::string::npos) continue;
    ++saw_done;
    if (!r.complete) ++left_before_terminator;
  }
  EXPECT_EQ(saw_done, 100);
  EXPECT_GE(left_before_terminator, 1)
      << "no client left between [DONE] and the terminator: the case was not exercised";
  std::cout << "clients that left before the chunked terminator: " << left_before_terminator << " of 100\n";
  (void)s.stop_proxy();
  const auto all = read_ledger(s.ledger_path());
  ASSERT_EQ(all.lines.size(), 100u);
  EXPECT_EQ(all.outcomes.count("client_disconnected"), 0u) << outcomes_text(all);
  EXPECT_EQ(all.outcomes.at("ok"), 100);
  for (const auto& line : all.lines) EXPECT_FALSE(line.at("ttft_ms").is_null());
}

TEST(ProxyStreamEndings, AClientThatLeavesBeforeDoneIsStillADisconnect) {
  Stack s({"--stream-end", "llamacpp"});
  chat_leaving_after(
      s.proxy.port,
      R"({"messages":[{"role":"user","content":"Hello"}],"max_tokens":400,"ignore_eos":true,"stream":true})",
      "\"content\":");  // leaves at the first generated token
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0]).at("outcome"), "client_disconnected");
}

TEST(ProxyStreamEndings, PairsAgainstASimulatorThatClosesAfterStreamsAreAllOkAndRetriesAreCountedAlike) {
  Stack s({"--stream-end", "llamacpp"});
  int failed = 0;
  for (int i = 0; i < 100; ++i) failed += send_pair(s.proxy.port, kShortStreamed, kShortNotStreamed);
  EXPECT_EQ(failed, 0);
  const double metric =
      retries_metric(s.proxy, "eof") + retries_metric(s.proxy, "reset") + retries_metric(s.proxy, "broken_pipe");
  (void)s.stop_proxy();
  const auto l = read_ledger(s.ledger_path());
  ASSERT_EQ(l.lines.size(), 200u);
  EXPECT_EQ(l.outcomes.at("ok"), 200) << outcomes_text(l);
  EXPECT_EQ(metric, static_cast<double>(l.retries));
  std::cout << "requests sent again on a fresh connection: " << l.retries << " of 200\n";
}

}  // namespace
}  // namespace mpo::test
