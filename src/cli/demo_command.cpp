// `modelperfobs demo`: the embedded default. Starts `simulate` and `proxy` (this same binary) on
// free loopback ports, drives a short workload through the proxy (rising concurrency, then a burst
// past the simulated engine's capacity), and writes the ledger, the simulator's truth and the
// report (md on stdout, html and json in the folder).
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/files.hpp"
#include "cli/report_input.hpp"
#include "core/clock.hpp"
#include "ledger/reader.hpp"
#include "net/client.hpp"
#include "report/analysis.hpp"
#include "report/render.hpp"
#include "sweep/api.hpp"

extern char** environ;

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

// A child modelperfobs process whose first stdout line names its address.
class Child {
 public:
  Child(std::vector<std::string> args, const std::string& log_path) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    args.insert(args.begin(), "/proc/self/exe");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    out_ = fds[0];
    if (rc != 0) throw std::runtime_error(fmt::format("cannot start {}: {}", args[1], std::strerror(rc)));
  }
  ~Child() {
    stop();
    if (out_ >= 0) close(out_);
  }
  std::string first_line() {
    std::string line;
    char c = 0;
    pollfd p{out_, POLLIN, 0};
    while (poll(&p, 1, 20000) > 0 && read(out_, &c, 1) == 1 && c != '\n') line.push_back(c);
    return line;
  }
  void stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int out_ = -1;
};

std::uint16_t port_in(const std::string& line) {
  const auto at = line.find("listening on http://");
  if (at == std::string::npos) throw std::runtime_error("unexpected output: " + line);
  const auto colon = line.find(':', at + 20);
  return static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
}

// One streamed request over a fresh connection (net::Client), read to the end. True on a 200.
bool stream_one(const net::BackendUrl& proxy, std::string_view path, const std::string& body) {
  net::ExchangeOptions req;
  req.method = net::http::verb::post;
  req.target = fmt::format("/v1{}", path);
  req.body = body;
  req.headers = {{"Content-Type", "application/json"}};
  req.user_agent = "modelperfobs-demo";
  req.max_body = 64ull << 20;
  const auto x = net::exchange_blocking(proxy, {}, std::move(req), 120);
  return !x.failure && x.status == 200;
}

constexpr sweep::Api kDemoApis[] = {sweep::Api::kChat, sweep::Api::kResponses, sweep::Api::kMessages};

std::string prompt_for(int phase, int worker, int i) {
  std::string p = fmt::format("demo phase {} worker {} request {}:", phase, worker, i);
  for (int w = 0; w < 40 * (1 + (worker + i) % 6); ++w) p += fmt::format(" w{}", (w * 31 + worker) % 211);
  return p;
}

int run_demo(const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "modelperfobs demo: cannot create '" << out_dir << "': " << ec.message() << "\n";
    return 1;
  }
  const std::string dir = fs::absolute(out_dir).string();
  const std::string ledger = dir + "/model-perf.jsonl";
  fs::remove(ledger, ec);
  fs::remove(dir + "/truth.jsonl", ec);
  // A small engine: 16 slots, so the last phase's burst of 48 streams queues.
  {
    std::ofstream profile(dir + "/simulator-profile.json");
    profile << R"({"model":"demo-model","engine":{"max_num_seqs":16,"num_gpu_blocks":2048}})"
            << "\n";
  }
  std::cout << "modelperfobs demo: starting the simulator and the proxy (logs in " << dir << ")" << std::endl;
  Child sim({"simulate", "--listen", "127.0.0.1:0", "--profile", dir + "/simulator-profile.json", "--truth",
             dir + "/truth.jsonl"},
            dir + "/simulate.log");
  const std::uint16_t sim_port = port_in(sim.first_line());
  Child proxy({"proxy", "--backend", fmt::format("http://127.0.0.1:{}", sim_port), "--listen", "127.0.0.1:0",
               "--admin-listen", "off", "--ledger", ledger},
              dir + "/proxy.log");
  const std::uint16_t proxy_port = port_in(proxy.first_line());
  std::cout << fmt::format("  simulate http://127.0.0.1:{}  <-  proxy http://127.0.0.1:{}", sim_port, proxy_port)
            << std::endl;
  const auto proxy_url = net::parse_backend_url(fmt::format("http://127.0.0.1:{}", proxy_port));

  struct Phase {
    int concurrency;
    int per_worker;
  };
  const Phase phases[] = {{1, 4}, {2, 3}, {4, 3}, {8, 2}, {48, 1}};
  int phase_no = 0, sent = 0, ok = 0;
  for (const auto& ph : phases) {
    ++phase_no;
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<int> good{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < ph.concurrency; ++w) {
      workers.emplace_back([&, w] {
        for (int i = 0; i < ph.per_worker; ++i) {
          // Today's clients speak three APIs: chat, the Responses API and Anthropic Messages.
          const sweep::Api api = kDemoApis[static_cast<std::size_t>(w + i + phase_no) % std::size(kDemoApis)];
          sweep::ServingRequest r;
          r.messages = {{"user", prompt_for(phase_no, w, i)}};
          r.max_output_tokens = 16 + 8 * ((w + i) % 4);
          if (stream_one(*proxy_url, sweep::api_path(api), sweep::request_body(r, "demo-model", false, api))) ++good;
        }
      });
    }
    for (auto& t : workers) t.join();
    const int n = ph.concurrency * ph.per_worker;
    sent += n;
    ok += good.load();
    std::cout << fmt::format("  phase {}/{}: {} concurrent stream(s), {} requests, {} ok, {:.1f} s{}", phase_no,
                             std::size(phases), ph.concurrency, n, good.load(),
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                             ph.concurrency > 16 ? "  (past the engine's 16 slots: requests queue)" : "")
              << std::endl;
  }
  proxy.stop();  // drains and flushes the ledger
  sim.stop();

  report::ReportInput rep;
  if (auto st = load_ledgers({ledger}, rep); !st) {
    std::cerr << "modelperfobs demo: " << st.error().message << "\n";
    return 1;
  }
  if (rep.table.size() == 0) {
    std::cerr << "modelperfobs demo: the proxy wrote no ledger lines (see " << dir << "/proxy.log)\n";
    return 1;
  }
  rep.groups = report::analyse(rep.table, rep.options);
  rep.others = report::analyse_others(rep.table, rep.options);
  rep.created_at_us = SystemClock::instance().wall_us();
  rep.tool_version = MPO_VERSION;
  if (!write_output(dir + "/report.html", report::render_html(rep), "demo") ||
      !write_output(dir + "/report.json", report::render_json(rep), "demo")) {
    return 1;
  }
  std::cout << "\n" << report::render_markdown(rep) << "\n";
  std::cout << fmt::format(
                   "modelperfobs demo: {} requests sent, {} ok. Files in {}:\n"
                   "  model-perf.jsonl  the ledger, one line per request (docs/FORMATS.md)\n"
                   "  truth.jsonl       the simulator's own timing of each request\n"
                   "  report.html       charts; report.json: modelperfobs.report.v1\n"
                   "Try: duckdb -c \"SELECT model, count(*) AS requests, quantile_cont(ttft_ms, 0.95) AS ttft_p95_ms, "
                   "quantile_cont(tpot_ms, 0.95) AS tpot_p95_ms FROM read_json_auto('{}') GROUP BY model\"",
                   sent, ok, dir, ledger)
            << std::endl;
  return ok > 0 ? 0 : 1;
}

}  // namespace

std::function<int()> setup_demo(CLI::App& app) {
  auto out = std::make_shared<std::string>("modelperfobs-demo");
  app.add_option("--out", *out, "folder for the ledger, truth, report.html and report.json")->capture_default_str();
  return [out] { return run_demo(*out); };
}

}  // namespace mpo::cli
