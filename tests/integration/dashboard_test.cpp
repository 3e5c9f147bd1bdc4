// Every panel of deploy/grafana/modelperfobs-dashboard.json returns data from a real Prometheus
// (the Debian package) that loads deploy/prometheus/modelperfobs-rules.yml unchanged and scrapes
// `simulate` and `proxy` on loopback while requests flow.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>

#include <boost/json.hpp>
#include <chrono>
#include <set>

#include "support/build_paths.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

std::string url_encode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::vector<std::string> panel_queries() {
  const auto doc =
      json::parse(read_file(std::string(mpo::test::source_dir()) + "/deploy/grafana/modelperfobs-dashboard.json"));
  std::vector<std::string> out;
  for (const auto& p : doc.at("panels").as_array()) {
    const auto& panel = p.as_object();
    if (!panel.contains("targets")) continue;
    for (const auto& t : panel.at("targets").as_array()) out.emplace_back(t.as_object().at("expr").as_string());
  }
  return out;
}

// A query as Grafana sends it with the Model variable at All (its allValue, ".*").
std::string with_all_models(std::string q) {
  for (std::size_t at; (at = q.find("$model")) != std::string::npos;) q.replace(at, 6, ".*");
  return q;
}

// The distinct `model` labels of a query's answer, comma-joined.
std::string models_answered(std::uint16_t prom_port, const std::string& expr) {
  HttpResponse r = http_get(prom_port, "/api/v1/query?query=" + url_encode(expr));
  std::set<std::string> models;
  const json::value doc = json::parse(r.body);  // kept: a range-for over a temporary's member dangles
  for (const auto& x : doc.at("data").at("result").as_array()) {
    const auto& metric = x.at("metric").as_object();
    models.insert(metric.contains("model") ? std::string(metric.at("model").as_string()) : "(none)");
  }
  std::string out;
  for (const auto& m : models) out += (out.empty() ? "" : ",") + m;
  return out;
}

bool has_data(std::uint16_t prom_port, const std::string& expr) {
  HttpResponse r = http_get(prom_port, "/api/v1/query?query=" + url_encode(expr));
  if (r.status != 200) return false;
  const auto doc = json::parse(r.body).as_object();
  return !doc.at("data").as_object().at("result").as_array().empty();
}

TEST(Dashboard, EveryPanelQueryReturnsDataFromARealPrometheus) {
  const std::string dir = make_temp_dir();
  Simulator sim;
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/ledger.jsonl");
  const std::uint16_t prom_port = free_loopback_port();
  write_file(dir + "/prometheus.yml",
             fmt::format("global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n"
                         "rule_files: [\"{}/deploy/prometheus/modelperfobs-rules.yml\"]\n"
                         "scrape_configs:\n"
                         "  - job_name: vllm\n    static_configs: [{{targets: [\"127.0.0.1:{}\"]}}]\n"
                         "  - job_name: modelperfobs-proxy\n    static_configs: [{{targets: [\"127.0.0.1:{}\"]}}]\n",
                         mpo::test::source_dir(), sim.port, proxy.admin_port));
  ChildProcess prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir + "/tsdb",
                           fmt::format("--web.listen-address=127.0.0.1:{}", prom_port), "--log.level=warn"});
  // Prometheus has no readiness signal on stdout: poll /-/ready every 20 ms, at most 60 s.
  bool ready = false;
  for (int i = 0; i < 3000 && !ready; ++i) {
    ready = is_listening(prom_port) && http_get(prom_port, "/-/ready").status == 200;
    if (!ready) {
      pollfd none{-1, 0, 0};
      poll(&none, 0, 20);
    }
  }
  ASSERT_TRUE(ready) << "prometheus did not become ready";

  const std::vector<std::string> queries = panel_queries();
  ASSERT_GE(queries.size(), 20u);
  const std::string body =
      R"({"model":"sim-model","stream":true,"max_tokens":12,"messages":[{"role":"user","content":"status report please"}]})";
  std::set<std::string> answered;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (answered.size() < queries.size() && std::chrono::steady_clock::now() < deadline) {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(http_post(proxy.port, "/v1/chat/completions", body, {{"content-type", "application/json"}}).status,
                200);
    }
    for (const std::string& q : queries) {
      if (!answered.count(q) && has_data(prom_port, with_all_models(q))) answered.insert(q);
    }
  }
  for (const std::string& q : queries) EXPECT_TRUE(answered.count(q)) << "no data for panel query: " << q;
  // Issue 42: the client panels are per model, and the Model variable lists the model the
  // clients asked for (its query: label_values(modelperfobs_requests_total, model)).
  std::size_t per_model = 0;
  for (const std::string& q : queries) {
    if (q.find("$model") == std::string::npos) continue;
    ++per_model;
    EXPECT_EQ(models_answered(prom_port, with_all_models(q)), "sim-model") << q;
  }
  EXPECT_GE(per_model, 6u);
  const auto values =
      http_get(prom_port, "/api/v1/label/model/values?match[]=" + url_encode("modelperfobs_requests_total"));
  EXPECT_EQ(json::serialize(json::parse(values.body).at("data")), R"(["sim-model"])") << values.body;
}

}  // namespace
}  // namespace mpo::test
