// The proxy and the load generator in front of a real llama.cpp server (b10309, tiny random-weight
// model), as issue 17 found them failing: alternating streamed and non-streamed requests (llama.cpp
// closes its connection after every stream although it offers keep-alive), clients that leave at
// `data: [DONE]` (llama.cpp sends the chunked terminator in a later write), and a sweep at
// concurrency 8. Skipped, with the reason, where MPO_LLAMA_SERVER / MPO_LLAMA_MODEL are unset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <iostream>
#include <memory>

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

}  // namespace
}  // namespace mpo::test
