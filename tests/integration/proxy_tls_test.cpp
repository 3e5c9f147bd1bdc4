// An https backend: nginx terminates TLS (a certificate made for the test) in front of
// `modelperfobs simulate`; the proxy verifies it with --backend-ca, and refuses it without.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

struct TlsFrontend {
  explicit TlsFrontend(std::uint16_t backend_port) : dir(make_temp_dir()), port(free_loopback_port()) {
    ChildProcess openssl({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                          dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "2", "-subj", "/CN=localhost",
                          "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"});
    EXPECT_EQ(openssl.wait(), 0);
    write_file(dir + "/nginx.conf", R"(
worker_processes 1;
error_log )" + dir + R"(/error.log;
pid )" + dir + R"(/nginx.pid;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path )" + dir + R"(; proxy_temp_path )" +
                                        dir + R"(;
  fastcgi_temp_path )" + dir + R"(; uwsgi_temp_path )" +
                                        dir + R"(; scgi_temp_path )" + dir + R"(;
  server {
    listen 127.0.0.1:)" + std::to_string(port) +
                                        R"( ssl;
    ssl_certificate )" + dir + R"(/cert.pem;
    ssl_certificate_key )" + dir + R"(/key.pem;
    location / {
      proxy_pass http://127.0.0.1:)" + std::to_string(backend_port) +
                                        R"(;
      proxy_http_version 1.1;
      proxy_buffering off;
    }
  }
}
)");
    nginx = std::make_unique<ChildProcess>(
        std::vector<std::string>{"/usr/sbin/nginx", "-p", dir, "-c", dir + "/nginx.conf", "-g", "daemon off;"});
    // nginx has no readiness signal: try to connect until it listens (bounded).
    for (int i = 0; i < 1000 && !is_listening(port); ++i) {
      pollfd none{-1, 0, 0};
      poll(&none, 0, 5);
    }
  }
  std::string dir;
  std::uint16_t port;
  std::unique_ptr<ChildProcess> nginx;
};

const std::string kChat =
    R"({"messages":[{"role":"user","content":"over tls"}],"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}})";

TEST(ProxyTls, VerifiesTheBackendCertificateWithBackendCaAndStreams) {
  Simulator sim;
  TlsFrontend tls(sim.port);
  const std::string ledger = tls.dir + "/ledger.jsonl";
  Proxy proxy("https://localhost:" + std::to_string(tls.port), ledger, {"--backend-ca", tls.dir + "/cert.pem"});
  auto r = http_post(proxy.port, "/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(ledger);
  ASSERT_EQ(lines.size(), 1u);
  auto l = json::parse(lines[0]).as_object();
  EXPECT_EQ(l["outcome"], "ok");
  EXPECT_EQ(l["backend"], ("https://localhost:" + std::to_string(tls.port)).c_str());
  // The TLS layer reads the backend's socket: no kernel receive times for the response, and the
  // line says so (docs/PROXY.md "Timestamps").
  EXPECT_EQ(l["timing_basis"], "loop");
  EXPECT_EQ(l["completion_tokens"], 4);
  EXPECT_EQ(l["content_events"], 4);
}

// Over TLS the proxy reads the decrypted bytes into its own buffer, as on a plain socket, and relays
// the body as it came (chunked events, a Content-Length body) on the pooled connection.
TEST(ProxyTls, RelaysStreamedAndWholeBodiesIntactOnAPooledConnection) {
  Simulator sim;
  TlsFrontend tls(sim.port);
  const std::string ledger = tls.dir + "/ledger.jsonl";
  Proxy proxy("https://localhost:" + std::to_string(tls.port), ledger, {"--backend-ca", tls.dir + "/cert.pem"});
  const std::string whole = R"({"messages":[{"role":"user","content":"over tls"}],"max_tokens":6})";
  for (int round = 0; round < 3; ++round) {
    auto streamed = http_post(proxy.port, "/v1/chat/completions", kChat);
    EXPECT_EQ(streamed.status, 200) << streamed.body;
    std::size_t events = 0;
    for (std::size_t at = streamed.body.find("data: "); at != std::string::npos;
         at = streamed.body.find("data: ", at + 1)) {
      ++events;
    }
    EXPECT_EQ(events, 4u + 1 + 1 + 1) << streamed.body;  // role, 4 tokens, finish, usage... and [DONE]
    EXPECT_NE(streamed.body.find("data: [DONE]"), std::string::npos);
    auto r = http_post(proxy.port, "/v1/chat/completions", whole);
    EXPECT_EQ(r.status, 200) << r.body;
    const auto body = json::parse(r.body).as_object();
    EXPECT_EQ(body.at("usage").as_object().at("completion_tokens"), 6) << r.body;
  }
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(ledger);
  ASSERT_EQ(lines.size(), 6u);
  for (const auto& line : lines) {
    auto l = json::parse(line).as_object();
    EXPECT_EQ(l["outcome"], "ok") << line;
    EXPECT_EQ(l["upstream_retries"], 0) << line;  // no stale connection met
  }
}

TEST(ProxyTls, RefusesABackendWhoseCertificateItCannotVerify) {
  Simulator sim;
  TlsFrontend tls(sim.port);
  const std::string ledger = tls.dir + "/ledger.jsonl";
  Proxy proxy("https://localhost:" + std::to_string(tls.port), ledger);  // system CAs only
  auto r = http_post(proxy.port, "/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 502);
  EXPECT_NE(r.body.find("certificate"), std::string::npos) << r.body;
  EXPECT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(ledger);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(json::parse(lines[0]).as_object()["outcome"], "upstream_unreachable");
}

// The load generator over https: verified with --ca, refused without.
TEST(SweepTls, SweepsAnHttpsServerItCanVerify) {
  Simulator sim;
  TlsFrontend tls(sim.port);
  const std::string url = "https://localhost:" + std::to_string(tls.port) + "/v1";
  auto run = run_cli({"sweep", "--url", url, "--model", "sim-model", "--concurrencies", "1,2", "--requests", "4",
                      "--output-tokens", "4", "--ignore-eos", "--quiet", "--ca", tls.dir + "/cert.pem", "--output",
                      tls.dir + "/sweep.json"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  const auto receipt = json::parse(read_file(tls.dir + "/sweep.json")).as_object();
  for (const auto& p : receipt.at("points").as_array()) {
    const auto& stats = p.as_object().at("tracks").as_array()[0].as_object().at("stats").as_object();
    EXPECT_EQ(stats.at("ok").to_number<double>(), 4);
    EXPECT_EQ(stats.at("failed").to_number<double>(), 0);
  }
  auto refused = run_cli({"sweep", "--url", url, "--model", "sim-model", "--concurrencies", "1,2", "--quiet",
                          "--output", tls.dir + "/refused.json"});
  EXPECT_EQ(refused.exit_code, 1);  // stderr: "tls: certificate verify failed ... (pass --ca FILE for a private CA)"
}

}  // namespace
}  // namespace mpo::test
