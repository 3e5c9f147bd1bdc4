// `modelperfobs demo`: the embedded default. Starts `simulate` and `proxy` (this same binary) on
// free loopback ports, drives a short workload through the proxy (rising concurrency, then a burst
// past the simulated engine's capacity), and writes the ledger, the simulator's truth and the
// report (md on stdout, html and json in the folder).
#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
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
#include "loadgen/api.hpp"
#include "net/client.hpp"
#include "process/child.hpp"
#include "report/analysis.hpp"
#include "report/render.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

// What stands in for other machines (the simulated engine, the clients) runs as an idle-priority
// task (SCHED_IDLE): on a small machine they share the proxy's cores, and a proxy that waits for a
// core reads late (the report warns of that lateness). In production the engine and the clients
// have machines of their own; here the proxy takes a core from them the moment it has work. (At
// nice 19 they did not yield at once: the kernel lets a running task finish its slice, 0.3-0.75 ms
// of the proxy's read lag measured with `perf sched`; issue 43.) Where the idle class is refused,
// nice 19.
constexpr int kStandInNice = 19;
constexpr const char* kChrt = "/usr/bin/chrt";

// Makes the calling thread a stand-in (Linux keeps the policy and the nice value per thread).
void become_stand_in() {
  const sched_param none{};
  if (::pthread_setschedparam(::pthread_self(), SCHED_IDLE, &none) != 0)
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kStandInNice);
}

// This same binary as a child (`simulate`, `proxy`), its stderr in `log_path`; the port its first
// stdout line names. `stand_in`: run it as a stand-in for another machine (above).
struct Child {
  process::Child process;
  std::uint16_t port = 0;
};

Result<Child> start_child(std::vector<std::string> args, const std::string& log_path, bool stand_in = false) {
  const std::string what = args.front();
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  args.insert(args.begin(), ec ? std::string("/proc/self/exe") : self);
  if (stand_in && !ec && std::filesystem::exists(kChrt)) {
    args.insert(args.begin(), {kChrt, "--idle", "0"});
  } else if (stand_in && !ec && std::filesystem::exists("/usr/bin/nice")) {
    args.insert(args.begin(), {"/usr/bin/nice", "-n", std::to_string(kStandInNice)});
  }
  auto child = process::Child::start(std::move(args), {log_path});
  if (!child) return child.error();
  auto line = child->read_line(20000);
  if (!line)
    return make_error(line.error(), fmt::format("{} did not start ({}; see {})", what, line.error().message, log_path));
  auto port = process::port_after(*line, "listening on ");
  if (!port) return port.error();
  return Child{std::move(child).value(), static_cast<std::uint16_t>(*port)};
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

constexpr loadgen::Api kDemoApis[] = {loadgen::Api::kChat, loadgen::Api::kResponses, loadgen::Api::kMessages};

std::string prompt_for(int phase, int worker, int i) {
  std::string p = fmt::format("demo phase {} worker {} request {}:", phase, worker, i);
  for (int w = 0; w < 40 * (1 + (worker + i) % 6); ++w) p += fmt::format(" w{}", (w * 31 + worker) % 211);
  return p;
}

// The demo's load: five phases of streaming clients on chat, Responses and Messages, the last past
// the engine's 16 slots. Counts what was sent and what came back ok.
void run_phases(const net::BackendUrl& proxy_url, int& sent, int& ok) {
  struct Phase {
    int concurrency;
    int per_worker;
  };
  const Phase phases[] = {{1, 4}, {2, 3}, {4, 3}, {8, 2}, {48, 1}};
  int phase_no = 0;
  for (const auto& ph : phases) {
    ++phase_no;
    const auto t0 = std::chrono::steady_clock::now();
    std::atomic<int> good{0};
    std::vector<std::thread> workers;
    for (int w = 0; w < ph.concurrency; ++w) {
      workers.emplace_back([&, w] {
        become_stand_in();  // this client thread yields its core to the proxy
        for (int i = 0; i < ph.per_worker; ++i) {
          // Today's clients speak three APIs: chat, the Responses API and Anthropic Messages.
          const loadgen::Api api = kDemoApis[static_cast<std::size_t>(w + i + phase_no) % std::size(kDemoApis)];
          loadgen::ServingRequest r;
          r.messages = {{"user", prompt_for(phase_no, w, i)}};
          r.max_output_tokens = 16 + 8 * ((w + i) % 4);
          if (stream_one(proxy_url, loadgen::api_path(api), loadgen::request_body(r, "demo-model", false, api))) ++good;
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
}

// The report of the demo's ledger: written as report.html and report.json, printed as markdown.
int report_demo(const std::string& dir, const std::string& ledger) {
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
  rep.created_at_us = document_time_us();
  rep.tool_version = MPO_VERSION;
  if (!write_output(dir + "/report.html", report::render_html(rep), "demo") ||
      !write_output(dir + "/report.json", report::render_json(rep), "demo")) {
    return 1;
  }
  std::cout << "\n" << report::render_markdown(rep) << "\n";
  return 0;
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
  auto sim = start_child({"simulate", "--listen", "127.0.0.1:0", "--profile", dir + "/simulator-profile.json",
                          "--truth", dir + "/truth.jsonl"},
                         dir + "/simulate.log", /*stand_in=*/true);
  if (!sim) {
    std::cerr << "modelperfobs demo: " << sim.error().message << "\n";
    return 1;
  }
  const std::uint16_t sim_port = sim->port;
  auto proxy = start_child({"proxy", "--backend", fmt::format("http://127.0.0.1:{}", sim_port), "--listen",
                            "127.0.0.1:0", "--admin-listen", "off", "--ledger", ledger},
                           dir + "/proxy.log");
  if (!proxy) {
    std::cerr << "modelperfobs demo: " << proxy.error().message << "\n";
    return 1;
  }
  const std::uint16_t proxy_port = proxy->port;
  std::cout
      << fmt::format(
             "  simulate http://127.0.0.1:{}  <-  proxy http://127.0.0.1:{}\n"
             "  (the simulator and the clients run at idle priority, or nice {} where that is refused: they stand "
             "in for machines of their own)",
             sim_port, proxy_port, kStandInNice)
      << std::endl;
  const auto proxy_url = net::parse_backend_url(fmt::format("http://127.0.0.1:{}", proxy_port));

  int sent = 0, ok = 0;
  // The clients' coordinator stands in too: it starts 48 threads at once for the last phase, work
  // that took a core from the proxy for up to 2 ms at normal priority (perf sched, issue 43).
  std::thread coordinator([&] {
    become_stand_in();
    run_phases(*proxy_url, sent, ok);
  });
  coordinator.join();
  proxy->process.terminate();  // drains and flushes the ledger
  sim->process.terminate();

  if (int rc = report_demo(dir, ledger)) return rc;
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
