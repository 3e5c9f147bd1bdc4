// Issue 42: `modelperfobs top` in a real terminal (tmux, 80x24) beside a proxy serving simulate
// traffic, read as a person would read it: the model's row with the report's figures for the same
// ledger, the engine's queue from the proxy's scrapes, and q to quit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "support/process.hpp"

namespace mpo {
namespace {

namespace json = boost::json;
using test::binary_path;
using test::make_temp_dir;

// A shell command's standard output and whether it exited 0.
std::pair<std::string, bool> sh(const std::string& command) {
  std::string out;
  FILE* p = ::popen((command + " 2>/dev/null").c_str(), "r");
  if (!p) return {out, false};
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  return {out, ::pclose(p) == 0};
}

// The words of the pane's row for `model` ("" when the pane has none yet).
std::vector<std::string> row(const std::string& pane, const std::string& model) {
  std::istringstream lines(pane);
  for (std::string l; std::getline(lines, l);) {
    if (l.size() > 1 && l.compare(1, model.size() + 1, model + " ") == 0) {
      std::istringstream words(l);
      std::vector<std::string> out;
      for (std::string w; words >> w;) out.push_back(w);
      return out;
    }
  }
  return {};
}

// The proxy's ledger writer writes a request's line on its own thread after the response went out
// (in batches, up to about 100 ms later): waits until the ledger has `n` chats (a round trip to the
// admin listener paces the looks).
void await_chats(const std::string& ledger, std::size_t n, std::uint16_t admin_port) {
  for (int look = 0; look < 2000; ++look) {
    std::size_t chats = 0;
    for (const auto& line : test::read_lines(ledger))
      chats += line.find("\"/v1/chat/completions\"") != std::string::npos;
    if (chats >= n) return;
    sh("curl -s http://127.0.0.1:" + std::to_string(admin_port) + "/healthz");
  }
}

std::string shown(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

TEST(Top, InATerminalItShowsTheReportsFiguresPerModelAndTheEnginesQueueAndQuitsOnQ) {
  if (!sh("command -v tmux").second) GTEST_SKIP() << "tmux is not installed (scripts/setup installs it)";
  const std::string dir = make_temp_dir();
  const std::string ledger = dir + "/model-perf.jsonl";
  test::Simulator sim;
  const std::string backend = "http://127.0.0.1:" + std::to_string(sim.port);
  test::Proxy proxy(backend, ledger, {"--scrape", backend + "/metrics", "--scrape-interval", "200ms"});
  const auto traffic = test::run_cli({"sweep", "--url", "http://127.0.0.1:" + std::to_string(proxy.port) + "/v1",
                                      "--model", "sim-model", "--concurrencies", "2,4", "--requests", "20", "--warmup",
                                      "0", "--output-tokens", "8", "--output", dir + "/s.json", "--quiet"});
  ASSERT_NE(traffic.exit_code, 2) << traffic.out;
  // Every line in before top and report read the ledger, or the two read different lines (a CI run
  // once showed TPOT p50 22.8 against report's 20.7 once the writer napped 100 ms).
  await_chats(ledger, 40, proxy.admin_port);

  const std::string session = "mpo-top-" + std::to_string(::getpid());
  ASSERT_TRUE(sh("tmux new-session -d -s " + session + " -x 80 -y 24 '" + binary_path() + " top " + ledger +
                 " --admin http://127.0.0.1:" + std::to_string(proxy.admin_port) + " --window 600s --interval 200ms'")
                  .second);
  std::string pane;
  std::vector<std::string> words;
  for (int i = 0; i < 1000 && (words.size() < 11 || pane.find("engine (vllm)") == std::string::npos); ++i) {
    pane = sh("tmux capture-pane -p -t " + session).first;
    words = row(pane, "sim-model");
  }
  ASSERT_EQ(words.size(), 11u) << pane;

  // The same ledger through `report`: the same code, so the same figures, as the screen rounds them.
  const auto rep = test::run_cli({"report", "--input", ledger, "--format", "json"});
  const auto doc = json::parse(rep.out);
  const json::object* g = nullptr;
  for (const auto& x : doc.at("result").at("groups").as_array()) {
    if (x.at("key") == "sim-model") g = &x.as_object();
  }
  ASSERT_NE(g, nullptr) << rep.out;
  const auto figure = [&](const char* metric, const char* q) { return g->at(metric).at(q).to_number<double>(); };
  EXPECT_EQ(words[2], "0") << pane;  // in flight now, from the proxy's admin listener: the sweep is over
  EXPECT_EQ(words[3], shown(100 * g->at("error_rate").to_number<double>(), 1)) << pane;
  EXPECT_EQ(words[4], shown(figure("ttft_ms", "p50"), 0)) << pane;
  EXPECT_EQ(words[5], shown(figure("ttft_ms", "p99"), 0)) << pane;
  EXPECT_EQ(words[6], shown(figure("tpot_ms", "p50"), 1)) << pane;
  EXPECT_EQ(words[7], shown(figure("tpot_ms", "p99"), 1)) << pane;
  // The engine's own gauges from the proxy's scrape file, and the likely bottleneck.
  EXPECT_NE(pane.find("engine (vllm): waiting "), std::string::npos) << pane;
  EXPECT_NE(pane.find("likely bottleneck: "), std::string::npos) << pane;
  for (std::istringstream lines(pane); !lines.eof();) {
    std::string l;
    std::getline(lines, l);
    std::size_t cols = 0;
    for (unsigned char c : l) cols += (c & 0xC0) != 0x80;
    EXPECT_LE(cols, 80u) << l;
  }

  // q quits, and the terminal is given back (the session, whose only program was top, ends).
  sh("tmux send-keys -t " + session + " q");
  bool gone = false;
  for (int i = 0; i < 1000 && !gone; ++i) gone = !sh("tmux has-session -t " + session).second;
  EXPECT_TRUE(gone);
  if (!gone) sh("tmux kill-session -t " + session);
}

TEST(Top, OffATerminalItPrintsPlainLines) {
  const std::string dir = make_temp_dir();
  const std::string ledger = dir + "/model-perf.jsonl";
  test::Simulator sim;
  test::Proxy proxy("http://127.0.0.1:" + std::to_string(sim.port), ledger);
  test::run_cli({"sweep", "--url", "http://127.0.0.1:" + std::to_string(proxy.port) + "/v1", "--model", "sim-model",
                 "--concurrencies", "1,2", "--requests", "6", "--warmup", "0", "--output-tokens", "4", "--output",
                 dir + "/s.json", "--quiet"});
  await_chats(ledger, 12, proxy.admin_port);
  const auto run = test::run_cli({"top", ledger, "--once", "--window", "600s"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.out.find(" model=sim-model window_s=600 requests=12 "), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find("\033["), std::string::npos) << "no escape sequences off a terminal";

  // Without the file: the proxy's admin listener serves its recent lines, numbered.
  const auto admin = test::run_cli(
      {"top", "--admin", "http://127.0.0.1:" + std::to_string(proxy.admin_port), "--once", "--window", "600s"});
  EXPECT_EQ(admin.exit_code, 0) << admin.out;
  EXPECT_NE(admin.out.find(" model=sim-model window_s=600 requests=12 "), std::string::npos) << admin.out;
  EXPECT_NE(admin.out.find(" in_flight=0"), std::string::npos) << admin.out;
  const auto lines = test::read_lines(ledger);
  const auto page = sh("curl -s http://127.0.0.1:" + std::to_string(proxy.admin_port) + "/lines?after=0").first;
  // The first line says how far the numbering goes: every line the ledger holds so far (the
  // ledger's writer may still be behind the ring, never ahead of it).
  const auto header = json::parse(page.substr(0, page.find('\n'))).as_object();
  EXPECT_EQ(header.at("schema"), "modelperfobs.recent-lines.v1");
  EXPECT_EQ(header.at("missed"), 0);
  EXPECT_GE(header.at("next").as_int64(), static_cast<std::int64_t>(lines.size())) << page;
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(page.find(lines.back()), std::string::npos) << "the ledger's last line is the last one served";
  // No source: a usage error.
  EXPECT_EQ(test::run_cli({"top", "--once"}).exit_code, 2);
}

// A source that cannot be read is said, and `--once` does not exit 0 for a view it could not judge
// (until the thirty-ninth session a dead --admin, or a ledger that does not exist, read "no requests
// finished in the last 30 s" and exited 0).
TEST(Top, ASourceItCannotReadIsSaidAndOnceExitsOne) {
  const std::string dir = make_temp_dir();
  const std::string dead = "http://127.0.0.1:" + std::to_string(test::free_loopback_port());  // nothing listens
  auto run = test::run_cli({"top", "--admin", dead, "--once"});
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find(" cannot read the lines: GET " + dead + "/lines: cannot connect"), std::string::npos)
      << run.out;
  EXPECT_EQ(run.out.find("no requests finished"), std::string::npos) << run.out;

  run = test::run_cli({"top", dir + "/none.jsonl", "--once"});
  EXPECT_EQ(run.exit_code, 1) << run.out;
  EXPECT_NE(run.out.find(" cannot read the lines: ledger " + dir + "/none.jsonl does not exist (yet)"),
            std::string::npos)
      << run.out;

  // The lines from a ledger, the in-flight gauge from an --admin that is not the proxy's: the view
  // is judged (exit 0) and says why it has no in-flight counts.
  test::write_file(dir + "/empty.jsonl", "");
  test::Simulator sim;  // its /metrics is an engine's, without the proxy's gauge
  run =
      test::run_cli({"top", dir + "/empty.jsonl", "--admin", "http://127.0.0.1:" + std::to_string(sim.port), "--once"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find(" no requests finished in the last 30 s"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find(" no in-flight counts: http://127.0.0.1:" + std::to_string(sim.port) +
                         "/metrics has no modelperfobs_requests_in_flight_by_model"),
            std::string::npos)
      << run.out;
  run = test::run_cli({"top", dir + "/empty.jsonl", "--admin", dead, "--once"});
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find(" no in-flight counts: GET " + dead + "/metrics: cannot connect"), std::string::npos)
      << run.out;
}

}  // namespace
}  // namespace mpo
