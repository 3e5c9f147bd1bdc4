// A URL that is not what a command expects gets one line that says what was expected and what came
// back, and a documented exit code: the origin without /v1, a path that answers 404, a server
// that answers HTML, a JSON page given as the metrics URL, a port nobody listens on. Against
// `simulate` and a scripted backend that answers HTML to everything.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "support/canned_backend.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

CannedBackend html_server() {
  const std::string page = "<!DOCTYPE html><html><body>Welcome to nginx!</body></html>";
  return CannedBackend(
      {{CannedStep::Kind::kWrite,
        fmt::format("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n{}", page.size(), page)},
       {CannedStep::Kind::kClose}});
}

std::string sweep_cmd(const std::string& url, const std::string& dir, const std::string& extra = "") {
  return "sweep --url " + url + " --model sim-model --concurrencies 1,2 --requests 2 --quiet --output " + dir +
         "/s.json " + extra;
}

void expect_line(const CliRun& r, int code, const std::string& says) {
  EXPECT_EQ(r.exit_code, code) << r.out;
  EXPECT_NE(r.out.find(says), std::string::npos) << "expected: " << says << "\ngot: " << r.out;
}

TEST(WrongUrl, SweepSaysWhatTheUrlAnswered) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  const std::string origin = fmt::format("http://127.0.0.1:{}", sim.port);
  expect_line(run_cli_with_stderr(sweep_cmd(origin, dir)), 1,
              origin +
                  "/models answered HTTP 404: expected an OpenAI API base URL that lists its models (did you "
                  "mean " +
                  origin + "/v1?)");
  expect_line(run_cli_with_stderr(sweep_cmd(origin + "/api/v1", dir)), 1, origin + "/api/v1/models answered HTTP 404");
  auto html = html_server();
  expect_line(run_cli_with_stderr(sweep_cmd(fmt::format("http://127.0.0.1:{}/v1", html.port()), dir)), 1,
              "/v1/models answered an HTML page, not an OpenAI model list");
  expect_line(run_cli_with_stderr(sweep_cmd(fmt::format("http://127.0.0.1:{}/v1", free_loopback_port()), dir)), 1,
              "cannot reach http://127.0.0.1:");
  expect_line(run_cli_with_stderr(sweep_cmd(origin + "/v1", dir, "--metrics-url " + origin + "/v1/models")), 1,
              "--metrics-url " + origin + "/v1/models: the page is JSON, not Prometheus text");
  expect_line(run_cli_with_stderr(sweep_cmd(origin + "/v1", dir, "--metrics-url " + origin + "/nope")), 1,
              origin + "/nope answered HTTP 404 (expected the engine's Prometheus /metrics page)");
  // The right URLs run.
  EXPECT_EQ(run_cli_with_stderr(sweep_cmd(origin + "/v1", dir, "--metrics-url " + origin + "/metrics")).exit_code, 0);
}

TEST(WrongUrl, CacheStateBenchAndScrapeSayWhatTheUrlAnswered) {
  Simulator sim;
  const std::string origin = fmt::format("http://127.0.0.1:{}", sim.port);
  const std::string bench = "cache-state-bench --backend vllm --model sim-model --url ";
  expect_line(run_cli_with_stderr(bench + origin), 1, "(did you mean " + origin + "/v1?)");
  expect_line(run_cli_with_stderr(bench + origin + "/v1 --metrics-url " + origin + "/v1/models"), 1,
              "the page is JSON, not Prometheus text: is this the engine's /metrics URL?");
  auto html = html_server();
  const std::string html_url = fmt::format("http://127.0.0.1:{}/metrics", html.port());
  expect_line(run_cli_with_stderr("scrape --format none --url " + html_url), 1,
              "the page is an HTML page, not Prometheus text: is this the engine's /metrics URL?");
  expect_line(run_cli_with_stderr("scrape --format none --url " + origin + "/v1/models"), 1, "the page is JSON");
  expect_line(run_cli_with_stderr(fmt::format("scrape --format none --url http://127.0.0.1:{}", free_loopback_port())),
              1, "Connection refused");
}

TEST(WrongUrl, TheProxySaysOnceWhatItsBackendAnswers) {
  Simulator sim;
  const std::string dir = make_temp_dir();
  {
    // A base path of /v1 doubles the clients' /v1: every API request is a 404.
    Proxy proxy(fmt::format("http://127.0.0.1:{}/v1", sim.port), dir + "/a.jsonl", {}, dir + "/a.err");
    const std::string body = R"({"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2})";
    for (int i = 0; i < 3; ++i) EXPECT_EQ(http_post(proxy.port, "/v1/chat/completions", body).status, 404);
    EXPECT_EQ(proxy.process.terminate(), 0);
    const std::string err = read_file(dir + "/a.err");
    EXPECT_NE(err.find("answered HTTP 404 for POST /v1/chat/completions"), std::string::npos) << err;
    EXPECT_NE(err.find("drop the /v1"), std::string::npos) << err;
    EXPECT_EQ(err.find("answered HTTP 404"), err.rfind("answered HTTP 404")) << "said once: " << err;
  }
  {
    Proxy proxy(fmt::format("http://127.0.0.1:{}", free_loopback_port()), dir + "/b.jsonl", {}, dir + "/b.err");
    for (int i = 0; i < 2; ++i) EXPECT_EQ(http_get(proxy.port, "/v1/models").status, 502);
    EXPECT_EQ(proxy.process.terminate(), 0);
    const std::string err = read_file(dir + "/b.err");
    EXPECT_NE(err.find("upstream_unreachable"), std::string::npos) << err;
    EXPECT_NE(err.find("requests are answered 502 until it answers"), std::string::npos) << err;
    EXPECT_EQ(err.find("--backend"), err.rfind("--backend")) << "said once: " << err;
  }
  {
    // --scrape given a page that is not Prometheus text: said at start-up.
    Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/c.jsonl",
                {"--scrape", fmt::format("http://127.0.0.1:{}/v1/models", sim.port)}, dir + "/c.err");
    EXPECT_EQ(proxy.process.terminate(), 0);
    const std::string err = read_file(dir + "/c.err");
    EXPECT_NE(err.find("warning: --scrape"), std::string::npos) << err;
    EXPECT_NE(err.find("the page is JSON, not Prometheus text"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace mpo::test
