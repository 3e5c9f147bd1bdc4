// The proxy's throughput as its event loops grow (`--threads N`), each figure beside the same load
// sent to the backend directly: whether N loops serve N times one loop's requests (issue 43: at
// least 0.8 N up to 8, on a machine with the cores: docs/BENCHMARKS.md "Scaling over event loops").
// So that neither the backend nor the client is the limit, the backend is S simulators sharing one
// port (`simulate --reuse-port`) and the client C threads, each driving its share of the
// connections with epoll (stream_driver).
//
//   proxy_scaling [--loops 1,2,4,8] [--simulators S] [--client-threads C] [--conns N] [--rounds R]
//                 [--tokens T] [--step-ms MS]
//
// Per loop count, and direct: one-token requests/s with N connections opened at once (a connection
// per request: the accept, the head, the upstream request, the ledger line), the proxy's CPU per
// request; then streamed chunks/s with N streams of T tokens (the simulator steps every MS ms).
// Ratios: against one loop (and that divided by the loops: the efficiency) and against direct.
// Defaults: loops 1,2,4,8, S and C a quarter of the cores each (at least 1), N 1,000, R 3, T 50,
// MS 2. MPO_BIN names the modelperfobs binary (else the build's); scripts/device-scaling runs it
// on a lent device machine.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stream_driver.hpp"
#include "support/process.hpp"

namespace {

using namespace mpo;

struct Load {
  long completed = 0;
  long events = 0;
  double wall_s = 0;
};

// `conns` streams at once over `threads` client threads, each with its share, started together:
// the wall time is the slowest thread's.
Load drive(std::uint16_t port, int conns, const std::string& body, int threads) {
  std::vector<bench::DriveResult> results(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const int share = conns / threads + (t < conns % threads ? 1 : 0);
    pool.emplace_back(
        [&, t, share] { results[static_cast<std::size_t>(t)] = bench::drive_streams(port, share, body); });
  }
  for (auto& th : pool) th.join();
  Load l;
  for (const auto& r : results) {
    l.completed += r.completed;
    l.events += r.events;
    l.wall_s = std::max(l.wall_s, r.wall_s);
  }
  return l;
}

std::string body(int max_tokens) {
  return fmt::format(
      R"({{"messages":[{{"role":"user","content":"scaling"}}],"max_tokens":{},"ignore_eos":true,"stream":true}})",
      max_tokens);
}

struct Figures {
  double requests_per_s = 0, chunks_per_s = 0, cpu_us_per_request = 0;
};

// One warm-up round, then `rounds` of one-token requests (their CPU measured on `pid`, 0: none)
// and one of streams.
Figures measure(std::uint16_t port, int pid, int conns, int rounds, int tokens, int client_threads) {
  drive(port, conns, body(1), client_threads);
  Figures f;
  long done = 0;
  double wall = 0;
  const double cpu0 = pid ? bench::cpu_seconds_of(pid) : 0;
  for (int r = 0; r < rounds; ++r) {
    const Load l = drive(port, conns, body(1), client_threads);
    done += l.completed;
    wall += l.wall_s;
  }
  f.requests_per_s = static_cast<double>(done) / wall;
  if (pid) f.cpu_us_per_request = (bench::cpu_seconds_of(pid) - cpu0) * 1e6 / static_cast<double>(std::max(1L, done));
  const Load s = drive(port, conns, body(tokens), client_threads);
  f.chunks_per_s = static_cast<double>(s.events) / s.wall_s;
  return f;
}

std::vector<int> parse_list(const char* text) {
  std::vector<int> out;
  for (const char* p = text; *p != '\0';) {
    out.push_back(std::max(1, std::atoi(p)));
    p = std::strchr(p, ',');
    if (p == nullptr) break;
    ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int> loops{1, 2, 4, 8};
  int simulators = std::max(1, cores / 4), client_threads = std::max(1, cores / 4);
  int conns = 1000, rounds = 3, tokens = 50, step_ms = 2;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--loops") == 0 && has_value) {
      loops = parse_list(argv[++i]);
    } else if (std::strcmp(argv[i], "--simulators") == 0 && has_value) {
      simulators = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--client-threads") == 0 && has_value) {
      client_threads = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--conns") == 0 && has_value) {
      conns = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--rounds") == 0 && has_value) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--tokens") == 0 && has_value) {
      tokens = std::max(1, std::atoi(argv[++i]));
    } else if (std::strcmp(argv[i], "--step-ms") == 0 && has_value) {
      step_ms = std::max(0, std::atoi(argv[++i]));
    } else {
      fmt::print(stderr,
                 "usage: proxy_scaling [--loops 1,2,4,8] [--simulators S] [--client-threads C] [--conns N] "
                 "[--rounds R] [--tokens T] [--step-ms MS]\n");
      return 2;
    }
  }
  bench::raise_fd_limit();
  const std::string dir = test::make_temp_dir();
  test::write_file(dir + "/profile.json",
                   fmt::format(R"({{"engine":{{"max_num_seqs":20000,"num_gpu_blocks":200000,)"
                               R"("max_num_batched_tokens":1000000,"step_base_s":{},"step_per_prefill_token_s":0,)"
                               R"("step_per_decode_seq_s":0}}}})",
                               step_ms / 1000.0));
  // A busy engine's connections never idle for uvicorn's 5 s (the simulator's default): the rounds
  // here may, and the steady state is what is measured.
  test::Simulator first({"--reuse-port", "--profile", dir + "/profile.json", "--keep-alive-timeout", "600"});
  std::vector<std::unique_ptr<test::ChildProcess>> others;
  for (int s = 1; s < simulators; ++s) {
    others.push_back(std::make_unique<test::ChildProcess>(
        std::vector<std::string>{test::binary_path(), "simulate", "--listen", fmt::format("127.0.0.1:{}", first.port),
                                 "--reuse-port", "--profile", dir + "/profile.json", "--keep-alive-timeout", "600"}));
    others.back()->read_line();  // "listening on ..."
  }
  fmt::print(
      "proxy_scaling: {} cores; backend {} simulator(s) on one port (step {} ms); client {} thread(s); {} "
      "connections at once; {} rounds of one-token requests, then streams of {} tokens\n\n",
      cores, simulators, step_ms, client_threads, conns, rounds, tokens);
  fmt::print("  {:<8} {:>12} {:>8} {:>10} {:>9} {:>12} {:>8} {:>9} {:>11}\n", "target", "requests/s", "vs 1",
             "efficiency", "vs direct", "chunks/s", "vs 1", "vs direct", "CPU us/req");
  const Figures direct = measure(first.port, 0, conns, rounds, tokens, client_threads);
  fmt::print("  {:<8} {:>12.0f} {:>8} {:>10} {:>9} {:>12.0f} {:>8} {:>9} {:>11}\n", "direct", direct.requests_per_s,
             "-", "-", "-", direct.chunks_per_s, "-", "-", "-");
  Figures one;
  for (const int n : loops) {
    test::Proxy proxy(fmt::format("http://127.0.0.1:{}", first.port), fmt::format("{}/ledger-{}.jsonl", dir, n),
                      {"--threads", std::to_string(n)});
    const Figures f = measure(proxy.port, proxy.process.pid(), conns, rounds, tokens, client_threads);
    if (one.requests_per_s == 0) one = f;
    const double vs_one = f.requests_per_s / one.requests_per_s;
    fmt::print("  {:<8} {:>12.0f} {:>8.2f} {:>10.2f} {:>9.2f} {:>12.0f} {:>8.2f} {:>9.2f} {:>11.0f}\n",
               fmt::format("{} loop{}", n, n == 1 ? "" : "s"), f.requests_per_s, vs_one, vs_one * loops.front() / n,
               f.requests_per_s / direct.requests_per_s, f.chunks_per_s, f.chunks_per_s / one.chunks_per_s,
               f.chunks_per_s / direct.chunks_per_s, f.cpu_us_per_request);
    proxy.process.terminate();
  }
  fmt::print(
      "\nefficiency: requests/s against the first row's, per loop (1.00: N loops serve N times one loop's). "
      "The direct row is the backend and client alone: a proxy row near it is limited by them, not by its "
      "loops.\n");
  for (auto& o : others) o->terminate();
  return 0;
}
