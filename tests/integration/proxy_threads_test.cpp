// Issue 24: `proxy --threads 4` spreads client connections over its loops (SO_REUSEPORT listeners)
// and serves them all into one ledger; /metrics counts each loop's accepted connections. Real
// processes over loopback: the simulator and the proxy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <set>
#include <thread>

#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

TEST(ProxyThreads, ConnectionsFromManyClientsAreSpreadOverEveryLoopIntoOneLedger) {
  Simulator sim;
  const std::string dir = make_temp_dir();
  Proxy proxy(fmt::format("http://127.0.0.1:{}", sim.port), dir + "/ledger.jsonl", {"--threads", "4"});
  // 64 new client connections (each its own source port, so its own hash), from 8 threads at once.
  constexpr int kThreads = 8, kEach = 8;
  std::atomic<int> failed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const auto r = http_post(proxy.port, "/v1/chat/completions",
                                 fmt::format(R"({{"messages":[{{"role":"user","content":"client {} request {}"}}],)"
                                             R"("max_tokens":2,"stream":true}})",
                                             t, i));
        if (r.status != 200 || r.body.find("[DONE]") == std::string::npos) ++failed;
      }
    });
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(failed.load(), 0);

  const auto x = read_exposition(http_get(proxy.admin_port, "/metrics").body);
  double total = 0;
  for (int loop = 0; loop < 4; ++loop) {
    const auto accepted =
        x.find("modelperfobs_connections_accepted_total", {fmt::format("loop=\"{}\"", loop)}).value_or(-1);
    // The kernel hashes each connection to a listener: with 64 connections a loop left without
    // one happens with a probability of about 4 x (3/4)^64, 4e-8.
    EXPECT_GE(accepted, 1) << "loop " << loop << " accepted no connection";
    total += accepted;
  }
  EXPECT_EQ(total, kThreads * kEach);
  EXPECT_FALSE(x.find("modelperfobs_connections_accepted_total", {"loop=\"4\""}));

  ASSERT_EQ(proxy.process.terminate(), 0);
  const auto lines = read_lines(dir + "/ledger.jsonl");
  ASSERT_EQ(lines.size(), static_cast<std::size_t>(kThreads * kEach));
  std::set<std::string> ids;
  for (const auto& text : lines) {
    const auto o = json::parse(text).as_object();  // whole lines, never interleaved
    EXPECT_EQ(o.at("outcome").as_string(), "ok") << text;
    ids.insert(std::string(o.at("observation_id").as_string()));
  }
  EXPECT_EQ(ids.size(), lines.size());
}

}  // namespace
}  // namespace mpo::test
