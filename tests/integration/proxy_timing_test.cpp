// The proxy's timestamps under a busy loop: a proxy that cannot run while the first token arrives
// (stopped with SIGSTOP, which holds its event loop harder than any busy handler could) still
// records the time the token reached its socket, from the kernel's receive timestamp, and says
// how late it was to read it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <future>
#include <thread>

#include "core/clock.hpp"
#include "core/time.hpp"
#include "support/http_client.hpp"
#include "support/metric_families.hpp"
#include "support/process.hpp"
#include "support/stack.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

double num(const json::value& v) { return v.to_number<double>(); }

double sim_metric(std::uint16_t sim_port, std::string_view name) {
  return read_exposition(http_get(sim_port, "/metrics").body).find(name).value_or(0);
}

// Continues a stopped process however the test ends.
struct Stopped {
  explicit Stopped(pid_t p) : pid(p) { ::kill(pid, SIGSTOP); }
  ~Stopped() { resume(); }
  void resume() {
    if (pid > 0) ::kill(pid, SIGCONT);
    pid = -1;
  }
  pid_t pid;
};

// One streamed request whose first token reaches the proxy while it is stopped: the proxy stops as
// soon as the engine has the request and stays stopped for `hold_ms`, past the first token (a
// step of 300 ms) and before the second (300 ms later). A stop that also covered the second would
// test nothing: the kernel merges segments queued on a socket and keeps the latest one's time, so
// no reader can tell apart events it was too late to read separately (docs/PROXY.md).
struct Stalled {
  json::object line, truth;
  double response_leg_ms = 0;       // when the proxy says the first token came, minus when it was sent
  double stalled_ms = 0;            // from the token's sending to the proxy's resumption
  bool second_token_after = false;  // the second token was made after the proxy resumed
};

Stalled stop_the_proxy_over_the_first_token(std::vector<std::string> proxy_args, int hold_ms) {
  const std::string profile = make_temp_dir() + "/slow-steps.json";
  write_file(profile, R"({"engine":{"step_base_s":0.3}})");
  Stack s({"--profile", profile}, std::move(proxy_args));
  const std::string body =
      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2,"ignore_eos":true,"stream":true})";
  auto reply = std::async(std::launch::async, [&] { return http_post(s.proxy.port, "/v1/chat/completions", body); });
  // The engine has the request: the proxy has forwarded it.
  while (sim_metric(s.sim.port, "vllm:num_requests_running") + sim_metric(s.sim.port, "vllm:num_requests_waiting") <
         1) {
  }
  std::int64_t resumed_at_us = 0;
  {
    Stopped stopped(s.proxy.process.pid());
    // Not a wait for readiness: the stall itself. The engine's counters cannot say when the token
    // left (they move when its step is scheduled), so the caller checks that it left in time.
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    resumed_at_us = SystemClock::instance().wall_us();
    stopped.resume();
  }
  Stalled out;
  EXPECT_EQ(reply.get().status, 200);
  const auto lines = s.stop_proxy();
  EXPECT_EQ(s.sim.process.terminate(), 0);
  const auto truth = read_lines(s.dir + "/truth.jsonl");
  if (lines.size() != 1 || truth.size() != 1) {
    ADD_FAILURE() << lines.size() << " ledger lines, " << truth.size() << " truth lines";
    return out;
  }
  out.line = json::parse(lines[0]).as_object();
  out.truth = json::parse(truth[0]).as_object();
  EXPECT_EQ(out.line.at("observation_id"), out.truth.at("observation_id"));
  const auto sent_us = *parse_rfc3339(out.truth.at("first_token_sent_at").as_string());
  const double seen_us =
      static_cast<double>(*parse_rfc3339(out.line.at("started_at").as_string())) + num(out.line.at("ttft_ms")) * 1000.0;
  out.response_leg_ms = (seen_us - static_cast<double>(sent_us)) / 1000.0;
  out.stalled_ms = static_cast<double>(resumed_at_us - sent_us) / 1000.0;
  out.second_token_after = *parse_rfc3339(out.truth.at("last_token_at").as_string()) > resumed_at_us;
  return out;
}

// Tries again (a busy machine may step late) until the first token left at least 50 ms before the
// proxy could run again and the second after.
Stalled stalled_first_token(const std::vector<std::string>& proxy_args) {
  Stalled r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    r = stop_the_proxy_over_the_first_token(proxy_args, 450);
    if (r.stalled_ms >= 50.0 && r.second_token_after) break;
  }
  return r;
}

TEST(ProxyTiming, AStalledLoopDoesNotMoveTheFirstTokenTime) {
  const auto r = stalled_first_token({});
  ASSERT_GE(r.stalled_ms, 50.0) << "the first token must arrive while the proxy is stopped";
  ASSERT_TRUE(r.second_token_after);
  std::cerr << fmt::format(
      "first token waited {:.1f} ms in the stopped proxy's socket; the ledger puts it {:.3f} ms "
      "after its sending; proxy_lag_ms {}\n",
      r.stalled_ms, r.response_leg_ms, num(r.line.at("proxy_lag_ms")));
  EXPECT_EQ(r.line.at("timing_basis"), "kernel_rx");
  EXPECT_GE(r.response_leg_ms, -0.05);
  // The issue's bound is 0.5 ms p99 at 1,000 streams; one stream on a shared CI machine gets 1 ms.
  EXPECT_LE(r.response_leg_ms, 1.0) << "read from the loop's clock it would be " << r.stalled_ms << " ms late";
  // The proxy knows it was late: the token waited in its socket from its sending to the resume.
  EXPECT_GE(num(r.line.at("proxy_lag_ms")), r.stalled_ms - 1.0);
  EXPECT_LT(num(r.line.at("proxy_lag_ms")), 5000.0);
  // ... and when: the late read is the first token's, which arrived at the line's TTFT (the report
  // places the stall in time from this).
  EXPECT_NEAR(num(r.line.at("proxy_lag_at_ms")), num(r.line.at("ttft_ms")), 1.0);
  // ... and that its loop was held up, not busy: stopped, it read nothing at all, from any socket,
  // for most of that wait (the report tells such stalls from a loop behind its traffic).
  EXPECT_GE(num(r.line.at("proxy_lag_quiet_ms")), 0.5 * num(r.line.at("proxy_lag_ms")));
  // The ledger's TTFT is the engine's own plus the request leg (read before the stop) and the
  // simulator's write, not plus the stall (at least 50 ms). The request leg is the proxy's forwarding
  // and the engine's read: a few ms, more on a machine busy with other work (8.5 ms was seen beside
  // a parallel build, 22.8 ms beside a build and four proxy threads' tests: a 20 ms cap failed
  // there), so the bound is half the stall rather than tight; the response leg above is the tight
  // check.
  EXPECT_LT(num(r.line.at("ttft_ms")) - num(r.truth.at("ttft_ms")), r.stalled_ms / 2);
}

TEST(ProxyTiming, OnTheLoopsClockTheSameStallIsInTheTtftAndTheLineSaysLoop) {
  // What the first test guards against: `--timestamps loop` reads the time when the loop ran.
  const auto r = stalled_first_token({"--timestamps", "loop"});
  ASSERT_GE(r.stalled_ms, 50.0);
  ASSERT_TRUE(r.second_token_after);
  EXPECT_EQ(r.line.at("timing_basis"), "loop");
  EXPECT_TRUE(r.line.at("proxy_lag_ms").is_null());
  EXPECT_TRUE(r.line.at("proxy_lag_at_ms").is_null());
  EXPECT_TRUE(r.line.at("proxy_lag_quiet_ms").is_null());
  EXPECT_GE(r.response_leg_ms, r.stalled_ms - 1.0);
  EXPECT_GT(num(r.line.at("ttft_ms")) - num(r.truth.at("ttft_ms")), r.stalled_ms - 5.0);
}

TEST(ProxyTiming, TheLagHistogramAndTheBasisOfEveryLine) {
  Stack s;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(http_post(s.proxy.port, "/v1/chat/completions",
                        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true})")
                  .status,
              200);
  }
  ASSERT_EQ(http_post(s.proxy.port, "/v1/completions", R"({"prompt":"hi","max_tokens":2})").status, 200);
  const auto x = read_exposition(http_get(s.proxy.admin_port, "/metrics").body);
  // Every request's arrival and every response read was stamped: at least head + events + end.
  EXPECT_GE(x.find("modelperfobs_proxy_lag_seconds_count").value_or(0), 6 * 3);
  EXPECT_EQ(x.find("modelperfobs_proxy_lag_seconds_bucket", {"le=\"+Inf\""}),
            x.find("modelperfobs_proxy_lag_seconds_count"));
  for (const auto& line : s.stop_proxy()) {
    const auto l = json::parse(line).as_object();
    EXPECT_EQ(l.at("timing_basis"), "kernel_rx") << line;
    EXPECT_GE(num(l.at("proxy_lag_ms")), 0) << line;
  }
}

}  // namespace
}  // namespace mpo::test
