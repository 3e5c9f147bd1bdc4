// Issue 36: the proxy under hostile input and exhausted resources. Real processes over loopback:
// the proxy in front of a scripted backend that records what reaches it (or the simulator), raw
// bytes from the client side, `prlimit` for the file-descriptor cases, /proc for the proxy's CPU.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/canned_backend.hpp"
#include "support/fixtures.hpp"
#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"
#include "support/stack.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";

std::vector<json::object> ledger_of(Proxy& proxy, const std::string& path) {
  EXPECT_EQ(proxy.process.terminate(), 0);
  std::vector<json::object> out;
  for (const auto& l : read_lines(path)) out.push_back(json::parse(l).as_object());
  return out;
}

HttpResponse raw(std::uint16_t port, std::string bytes, int timeout_ms = 20000) {
  HttpRequest r;
  r.raw = std::move(bytes);
  return http(port, r, timeout_ms);
}

// A connection that stays open (held until destroyed). It sends the first byte of a request ("G"),
// so that the proxy holds it even when it defers accepts (--defer-accept), or nothing (`silent`).
struct HeldConnection {
  explicit HeldConnection(std::uint16_t port, bool silent = false)
      : fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (connected && !silent) connected = send(fd, "G", 1, MSG_NOSIGNAL) == 1;
  }
  ~HeldConnection() { close(fd); }
  HeldConnection(const HeldConnection&) = delete;
  HeldConnection& operator=(const HeldConnection&) = delete;
  int fd;
  bool connected = false;
};

double accepted_total(std::uint16_t admin_port) {
  return read_exposition(http_get(admin_port, "/metrics").body)
      .find("modelperfobs_connections_accepted_total", {"loop=\"0\""})
      .value_or(-1);
}

// User + system CPU seconds a process has used (/proc/PID/stat fields 14 and 15).
double cpu_seconds(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i >= 14) ticks += std::stod(f);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The request line the backend got for a corpus case that is forwarded.
std::string forwarded_line(const std::string& name, const std::string& bytes) {
  if (name.find("absolute-form-no-path") != std::string::npos) return "GET /?x=1 HTTP/1.1";
  if (name.find("rfc9112-3.2.2") != std::string::npos) return "GET /pub/WWW/TheProject.html HTTP/1.1";
  if (name.find("absolute-form") != std::string::npos) return "GET /steal HTTP/1.1";
  const auto start = bytes.find_first_not_of("\r\n");
  const auto line = bytes.substr(start, bytes.find("\r\n", start) - start);
  return line.substr(0, line.rfind(' ')) + " HTTP/1.1";  // HTTP/1.0 clients: the proxy speaks 1.1 upstream
}

TEST(ProxyHostileInput, EveryRequestFramingCaseIsForwardedOrRefusedAsNginxWouldAndRecorded) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl");
  std::vector<std::pair<std::string, std::string>> cases;  // name, expected status
  for (const auto& e : std::filesystem::directory_iterator(fixture_path("request-framing"))) {
    cases.emplace_back(e.path().filename().string(), "");
  }
  std::sort(cases.begin(), cases.end());
  int refused = 0;
  // Each answer's observation id (the proxy's own refusals carry it too): the case's ledger line is
  // found by it, not by its place in the file, which several loops (--threads) may write out of order.
  std::map<std::string, std::string> id_of;
  for (auto& [name, expect] : cases) {
    SCOPED_TRACE(name);
    const auto first = name.find('_');
    expect = name.substr(first + 1, name.find('_', first + 1) - first - 1);
    const auto bytes = read_fixture("request-framing/" + name);
    const int before = backend.connections();
    const auto r = raw(proxy.port, bytes);
    const int status = expect == "400body" ? 400 : std::stoi(expect);
    EXPECT_EQ(r.status, status) << r.raw.substr(0, 300);
    if (auto id = r.headers.find("x-fak-observation-id"); id != r.headers.end()) id_of[name] = id->second;
    if (status == 200) {
      EXPECT_EQ(r.body, "ok");
      const auto got = backend.last_request();
      EXPECT_EQ(got.substr(0, got.find("\r\n")), forwarded_line(name, bytes));
      EXPECT_EQ(got.find("X_Forwarded_For"), std::string::npos);              // nginx drops underscored names
      EXPECT_NE(got.find("\r\nHost: 127.0.0.1:"), std::string::npos) << got;  // one Host, the backend's
    } else {
      ++refused;
      EXPECT_EQ(backend.connections(), before) << "a refused request reached the backend";
      // The connection closes after a refusal (HTTP/1.0 says so without the header).
      if (r.raw.substr(0, 8) == "HTTP/1.1") {
        EXPECT_EQ(r.headers.at("connection"), "close");
      }
      EXPECT_NE(r.body.find("\"message\""), std::string::npos) << r.body;
    }
  }
  EXPECT_GE(refused, 30);
  // Nothing smuggled: the body of the Transfer-Encoding: identity request never became a request.
  EXPECT_EQ(backend.last_request().find("/smug"), std::string::npos);
  // A loop counts a request once its exchange ends, which may be just after the client read the
  // answer; with --threads another loop may serve /metrics first: read until every case is counted.
  const auto counted = [](const Exposition& e) {
    double n = 0;
    for (const auto& [series, v] : e.values) n += series.starts_with("modelperfobs_requests_total{") ? v : 0;
    return n;
  };
  Exposition x;
  for (int i = 0; i < 2000 && counted(x) < static_cast<double>(cases.size()); ++i) {
    x = read_exposition(http_get(proxy.admin_port, "/metrics").body);
  }
  EXPECT_EQ(counted(x), static_cast<double>(cases.size()));
  EXPECT_GE(x.find("modelperfobs_requests_total", {"outcome=\"bad_request\"", "code=\"400\""}).value_or(0), 20);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"outcome=\"bad_request\"", "code=\"501\""}), 4);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"outcome=\"bad_request\"", "code=\"405\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"outcome=\"bad_request\"", "code=\"505\""}), 1);
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), cases.size());  // one line per request, refused ones included
  std::map<std::string, const json::object*> line_of;
  for (const auto& l : lines) line_of[std::string(l.at("observation_id").as_string())] = &l;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].first);
    const auto& expect = cases[i].second;
    ASSERT_TRUE(id_of.contains(cases[i].first)) << "the answer carried no X-Fak-Observation-ID";
    ASSERT_TRUE(line_of.contains(id_of[cases[i].first])) << "no ledger line has the answer's id";
    const auto& l = *line_of[id_of[cases[i].first]];
    if (expect == "200") {
      EXPECT_EQ(l.at("outcome"), "ok");
    } else {
      EXPECT_EQ(l.at("http_status").as_int64(), expect == "400body" ? 400 : std::stoi(expect));
      EXPECT_EQ(l.at("outcome"), expect == "431" ? "proxy_error" : "bad_request");
      EXPECT_FALSE(l.at("error_message").as_string().empty());
    }
  }
}

TEST(ProxyHostileInput, TheForwardedRequestIsTheClientsLessHopByHopFieldsWithOneLength) {
  // The request to the backend is written as text (issue 43): the client's end-to-end fields in
  // their order, hop-by-hop ones and Accept-Encoding gone, the backend's Host, the proxy's ids and
  // trace context, one Content-Length for the body; a GET without a body gets none.
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl");
  const std::string body = R"({"model":"m","messages":[]})";
  const auto post =
      raw(proxy.port, fmt::format("POST /v1/chat/completions HTTP/1.1\r\nHost: client\r\n"
                                  "Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n"
                                  "Accept-Encoding: gzip\r\nX-First: a\r\nContent-Type: application/json\r\n"
                                  "Content-Length: {}\r\nX-Last: b\r\n\r\n{}",
                                  body.size(), body));
  EXPECT_EQ(post.status, 200);
  const auto got = backend.last_request();
  const auto head_end = got.find("\r\n\r\n");
  ASSERT_NE(head_end, std::string::npos);
  const std::string head = got.substr(0, head_end + 2);
  EXPECT_EQ(got.substr(head_end + 4), body);
  EXPECT_EQ(head.substr(0, head.find("\r\n")), "POST /v1/chat/completions HTTP/1.1");
  for (const char* gone : {"Connection:", "X-Hop:", "Keep-Alive:", "Accept-Encoding:", "Host: client"}) {
    EXPECT_EQ(head.find(gone), std::string::npos) << gone << " in " << head;
  }
  EXPECT_LT(head.find("\r\nX-First: a\r\n"), head.find("\r\nContent-Type: application/json\r\n"));
  EXPECT_LT(head.find("\r\nContent-Type: application/json\r\n"), head.find("\r\nX-Last: b\r\n"));
  EXPECT_NE(head.find(fmt::format("\r\nHost: 127.0.0.1:{}\r\n", backend.port())), std::string::npos);
  EXPECT_NE(head.find("\r\ntraceparent: 00-"), std::string::npos);
  EXPECT_NE(head.find("\r\nX-Request-Id: "), std::string::npos);
  const auto length_at = head.find("\r\nContent-Length: ");
  ASSERT_NE(length_at, std::string::npos);
  EXPECT_EQ(head.find("\r\nContent-Length: ", length_at + 1), std::string::npos);
  EXPECT_NE(head.find(fmt::format("\r\nContent-Length: {}\r\n", body.size())), std::string::npos);

  EXPECT_EQ(raw(proxy.port, "GET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n").status, 200);
  EXPECT_EQ(backend.last_request().find("Content-Length"), std::string::npos) << backend.last_request();
}

// The correlation header is a field Beast may know by name (`--id-header From` here; the default,
// X-Fak-Observation-ID, it does not): the client's value is adopted, and the backend gets the header
// once, with the observation's id, whatever its case in the client's request (the proxy tells a field
// Beast knows by its id, not by comparing names: issue 43).
TEST(ProxyHostileInput, ACorrelationHeaderBeastKnowsIsAdoptedAndSentUpstreamOnce) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl", {"--id-header", "From"});
  const auto r = raw(proxy.port, "GET /v1/models HTTP/1.1\r\nHost: a\r\nfrom: agent-7.step_3\r\nX-A: 1\r\n\r\n");
  EXPECT_EQ(r.status, 200);
  const auto got = backend.last_request();
  const std::string head = got.substr(0, got.find("\r\n\r\n") + 2);
  EXPECT_NE(head.find("\r\nFrom: agent-7.step_3\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("\r\nfrom:"), std::string::npos) << "the client's own field was forwarded too: " << head;
  EXPECT_EQ(head.find("From:", head.find("From:") + 1), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-A: 1\r\n"), std::string::npos) << head;
}

TEST(ProxyHostileInput, TenThousandHeaderLinesAre431BeforeAnyParse) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl");
  std::string flood = "GET /v1/models HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 10000; ++i) flood += "a:b\r\n";
  flood += "\r\n";
  for (int i = 0; i < 5; ++i) EXPECT_EQ(raw(proxy.port, flood).status, 431);
  // Within the limits (here --max-header-count 100) a request goes through.
  std::string fine = "GET /v1/models HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 98; ++i) fine += fmt::format("x-h{}: b\r\n", i);
  EXPECT_EQ(raw(proxy.port, fine + "\r\n").status, 200);
  EXPECT_EQ(raw(proxy.port, fine + "x-one-more: 1\r\nx-and-another: 2\r\n\r\n").status, 431);
  EXPECT_EQ(backend.connections(), 1);
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_NE(std::string(lines[0].at("error_message").as_string()).find("--max-header-count"), std::string::npos);
}

TEST(ProxyHostileInput, HeaderLimitsAndTimeoutsAreFlags) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl",
              {"--max-header-count", "3", "--max-header-bytes", "300", "--client-body-timeout", "0.3",
               "--client-header-timeout", "0.3"});
  // A head that never ends: the connection is closed after --client-header-timeout (no answer, no
  // line: nothing was requested yet), not after the default 60 s.
  const auto t0 = std::chrono::steady_clock::now();
  const auto stalled = raw(proxy.port, "GET / HTTP/1.1\r\nHost: a\r\nX-Slow: ", 10000);
  EXPECT_EQ(stalled.status, 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_EQ(raw(proxy.port, "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n").status, 200);
  EXPECT_EQ(raw(proxy.port, "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n").status, 431);
  EXPECT_EQ(raw(proxy.port, "GET / HTTP/1.1\r\nHost: a\r\nA: " + std::string(300, 'x') + "\r\n\r\n").status, 431);
  // A body that stops arriving: 408 after --client-body-timeout, with a line.
  const auto slow = raw(proxy.port, "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n{}");
  EXPECT_EQ(slow.status, 408) << slow.raw;
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[3].at("outcome"), "bad_request");
  EXPECT_EQ(lines[3].at("path"), "/v1/chat/completions");
}

TEST(ProxyHostileInput, ModelNamesCannotGrowMetricsWithoutBound) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl");
  // 80 distinct short names: 50 (--max-model-labels) become series, 30 are _other.
  for (int i = 0; i < 80; ++i) {
    ASSERT_EQ(http_post(proxy.port, "/v1/chat/completions", fmt::format(R"({{"model":"m{}"}})", i)).status, 200);
  }
  const auto before = http_get(proxy.admin_port, "/metrics").body.size();
  // Then 300 distinct 10 KB names (over --max-label-bytes) and 100 more short ones: no new series.
  for (int i = 0; i < 300; ++i) {
    const auto model = fmt::format("{}-{}", std::string(10000, 'm'), i);
    ASSERT_EQ(http_post(proxy.port, "/v1/chat/completions", R"({"model":")" + model + R"("})").status, 200);
  }
  for (int i = 80; i < 180; ++i) {
    ASSERT_EQ(http_post(proxy.port, "/v1/chat/completions", fmt::format(R"({{"model":"m{}"}})", i)).status, 200);
  }
  const auto page = http_get(proxy.admin_port, "/metrics").body;
  // Only counts changed (a few digits each), no series was added.
  EXPECT_LT(page.size(), before + 2048) << "metrics grew from " << before << " to " << page.size() << " bytes";
  const auto x = read_exposition(page);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"model=\"_other\"", "outcome=\"ok\""}), 430);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"model=\"m0\"", "outcome=\"ok\""}), 1);
  EXPECT_EQ(x.find("modelperfobs_requests_total", {"model=\"m50\"", "outcome=\"ok\""}), std::nullopt);
  EXPECT_EQ(x.find("modelperfobs_model_labels_folded_total"), 430);
  EXPECT_EQ(page.find("mmmmmmmmmm"), std::string::npos);
  // The ledger keeps every name as sent: the bound is on labels, not on the evidence.
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), 480u);
  EXPECT_EQ(lines[80].at("model").as_string().size(), 10002u);
}

TEST(ProxyHostileInput, ASecondProxyOnTheSamePortIsRefusedUnlessBothAskToShare) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  const std::string be = fmt::format("http://127.0.0.1:{}", backend.port());
  Proxy first(be, dir + "/a.jsonl", {"--threads", "2"});
  for (const char* threads : {"1", "3"}) {
    const auto second =
        run_cli_with_stderr(fmt::format("proxy --backend {} --listen 127.0.0.1:{} --admin-listen 127.0.0.1:0 "
                                        "--ledger {}/b.jsonl --threads {}",
                                        be, first.port, dir, threads));
    EXPECT_EQ(second.exit_code, 1) << second.out;
    EXPECT_NE(second.out.find("address already in use"), std::string::npos) << second.out;
  }
  // --reuse-port on both: the kernel spreads connections over the two, on purpose.
  Proxy shared_a(be, dir + "/c.jsonl", {"--threads", "2", "--reuse-port"});
  ChildProcess shared_b({binary_path(), "proxy", "--backend", be, "--listen",
                         fmt::format("127.0.0.1:{}", shared_a.port), "--admin-listen", "127.0.0.1:0", "--ledger",
                         dir + "/d.jsonl", "--reuse-port"});
  EXPECT_NE(shared_b.read_line().find("listening on"), std::string::npos);
  EXPECT_EQ(shared_b.terminate(), 0);
}

TEST(ProxyHostileInput, Http10ClientsGetTheStreamWithoutChunkFraming) {
  Stack s;
  const std::string body = R"({"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true})";
  const auto r = raw(s.proxy.port, fmt::format("POST /v1/chat/completions HTTP/1.0\r\nContent-Type: "
                                               "application/json\r\nContent-Length: {}\r\n\r\n{}",
                                               body.size(), body));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.raw.substr(0, 9), "HTTP/1.0 ");
  EXPECT_EQ(r.raw.substr(0, r.raw.find("\r\n\r\n")).find("Transfer-Encoding"), std::string::npos)
      << r.raw.substr(0, 400);
  EXPECT_EQ(r.body.substr(0, 6), "data: ") << r.body;  // no chunk-size line before the first event
  EXPECT_NE(r.body.find("data: [DONE]"), std::string::npos);
  const auto lines = s.stop_proxy();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0]).at("outcome"), "ok");
}

TEST(ProxyHostileInput, ABackendBreakingHttpIsAProtocolErrorNotAReset) {
  for (const std::string& reply :
       {std::string("HELLO WORLD\r\n\r\n"),
        std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")}) {
    CannedBackend backend({write_step(reply), close_step()});
    const auto dir = make_temp_dir();
    Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl", {"--retry-stale", "off"});
    EXPECT_EQ(http_post(proxy.port, "/v1/chat/completions", "{}").status, 502);
    const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0].at("outcome"), "upstream_protocol_error");
    EXPECT_NE(std::string(lines[0].at("error_message").as_string()).find("invalid response head"), std::string::npos);
  }
}

// `prlimit --nofile=N:N` caps the proxy's descriptors (soft and hard: nothing to raise).
std::vector<std::string> nofile(int n) { return {"/usr/bin/prlimit", fmt::format("--nofile={}:{}", n, n), "--"}; }

TEST(ProxyResources, ConnectionsPastTheDescriptorBudgetAre503AndTheProxyKeepsServing) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  // 256 descriptors: (256 - 128) / 2 = 64 connections. One loop: connections are accepted in the
  // order they were made.
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl", {"--threads", "1"}, "",
              nofile(256));
  std::vector<std::unique_ptr<HeldConnection>> held;
  for (int i = 0; i < 64; ++i) held.push_back(std::make_unique<HeldConnection>(proxy.port));
  const auto over = http_get(proxy.port, "/v1/models");  // the 65th: answered 503, recorded
  EXPECT_EQ(over.status, 503) << over.raw;
  // 400 more: some wait for their 503, the rest are closed at once; none costs a spin.
  for (int i = 0; i < 400; ++i) held.push_back(std::make_unique<HeldConnection>(proxy.port));
  const double cpu0 = cpu_seconds(proxy.process.pid());
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));  // measuring CPU over a span: a span is the point
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT((cpu_seconds(proxy.process.pid()) - cpu0) / wall, 0.2);
  const auto x = read_exposition(http_get(proxy.admin_port, "/metrics").body);
  EXPECT_GE(x.find("modelperfobs_connections_refused_total", {"how=\"closed\""}).value_or(0), 300);
  EXPECT_GE(x.find("modelperfobs_connections_refused_total", {"how=\"answered\""}).value_or(0), 1);
  EXPECT_EQ(x.find("modelperfobs_accept_paused_total", {"reason=\"EMFILE\""}).value_or(0), 0);
  // A held connection is served (its request gets a backend connection: descriptors are left).
  const std::string get = "ET /v1/models HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";  // after its "G"
  ASSERT_EQ(send(held[0]->fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  char buf[512];
  const auto n = recv(held[0]->fd, buf, sizeof buf, 0);
  ASSERT_GT(n, 12);
  EXPECT_EQ(std::string(buf, 12), "HTTP/1.1 200");
  held.clear();
  EXPECT_EQ(http_get(proxy.port, "/v1/models").status, 200);  // serves new connections once they are gone
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0].at("http_status"), 503);
  EXPECT_EQ(lines[0].at("outcome"), "proxy_error");
}

TEST(ProxyResources, ConnectionsThatSendNothingAreNotHandedToTheProxyUntilTheDeferExpires) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  {
    // --defer-accept 60: five silent connections wait in the kernel; a request is taken at once.
    Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/deferred.jsonl",
                {"--threads", "1", "--defer-accept", "60"});
    std::vector<std::unique_ptr<HeldConnection>> silent;
    for (int i = 0; i < 5; ++i) silent.push_back(std::make_unique<HeldConnection>(proxy.port, true));
    for (const auto& c : silent) ASSERT_TRUE(c->connected);
    EXPECT_EQ(http_get(proxy.port, "/v1/models").status, 200);
    EXPECT_EQ(accepted_total(proxy.admin_port), 1);
  }
  // --defer-accept 0: a silent connection is taken at once (read until the count says so).
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/at-once.jsonl",
              {"--threads", "1", "--defer-accept", "0"});
  HeldConnection silent(proxy.port, true);
  ASSERT_TRUE(silent.connected);
  double accepted = 0;
  for (int i = 0; i < 2000 && accepted < 1; ++i) accepted = accepted_total(proxy.admin_port);
  EXPECT_EQ(accepted, 1);
}

TEST(ProxyResources, OutOfDescriptorsTheLoopPausesInsteadOfSpinningAndResumes) {
  CannedBackend backend({write_step(kOk), close_step()});
  const auto dir = make_temp_dir();
  const auto err = dir + "/stderr.txt";
  // An explicit limit above what 96 descriptors allow: accept() itself runs out.
  Proxy proxy(fmt::format("http://127.0.0.1:{}", backend.port()), dir + "/ledger.jsonl",
              {"--max-connections", "1000", "--threads", "1"}, err, nofile(96));
  std::vector<std::unique_ptr<HeldConnection>> held;
  for (int i = 0; i < 200; ++i) held.push_back(std::make_unique<HeldConnection>(proxy.port));
  // Until the log line says the loop paused (it reaches EMFILE within the first connections).
  std::string log;
  for (int i = 0; i < 2000 && log.find("EMFILE") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the log file, not readiness
    log = read_file(err);
  }
  ASSERT_NE(log.find("accept() failed: Too many open files (EMFILE)"), std::string::npos) << log;
  EXPECT_NE(log.find("--max-connections 1000 is more than 96 file descriptors allow"), std::string::npos) << log;
  const double cpu0 = cpu_seconds(proxy.process.pid());
  const auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(2));  // measuring CPU over a span: a span is the point
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double busy = (cpu_seconds(proxy.process.pid()) - cpu0) / wall;
  EXPECT_LT(busy, 0.2) << "the proxy spins while out of descriptors: " << busy * 100 << "% CPU";
  // One line per episode, not one per failed accept.
  log = read_file(err);
  std::size_t said = 0;
  for (auto at = log.find("accept() failed"); at != std::string::npos; at = log.find("accept() failed", at + 1)) ++said;
  EXPECT_EQ(said, 1u) << log;
  // A request on a connection the proxy holds: no descriptor is left for the backend connection,
  // and the answer says so (it used to be a 502 blaming the backend: "Operation canceled").
  const std::string get = "ET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n";  // after its "G"
  ASSERT_EQ(send(held[0]->fd, get.data(), get.size(), MSG_NOSIGNAL), static_cast<ssize_t>(get.size()));
  std::string answer;
  char buf[1024];
  for (ssize_t n = 0; answer.find("}}") == std::string::npos && (n = recv(held[0]->fd, buf, sizeof buf, 0)) > 0;) {
    answer.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 503") << answer;
  EXPECT_NE(answer.find("Too many open files (EMFILE)"), std::string::npos) << answer;
  held.clear();
  // The backlog drains once descriptors free up: a new request is served.
  EXPECT_EQ(http_get(proxy.port, "/v1/models").status, 200);
  const auto x = read_exposition(http_get(proxy.admin_port, "/metrics").body);
  EXPECT_GE(x.find("modelperfobs_accept_paused_total", {"reason=\"EMFILE\""}).value_or(0), 2);
  EXPECT_EQ(x.find("modelperfobs_upstream_connect_errors_total"), 0);  // not the backend's fault
  const auto lines = ledger_of(proxy, dir + "/ledger.jsonl");
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].at("outcome"), "proxy_error");
  EXPECT_EQ(lines[0].at("http_status"), 503);
}

}  // namespace
}  // namespace mpo::test
