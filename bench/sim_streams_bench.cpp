// Holds N concurrent SSE streams against one `modelperfobs simulate` process (single-threaded, one
// core) and reports what that costs: wall time, the simulator's CPU seconds and peak RSS, and the
// CPU per streamed token against a 1-stream baseline measured in the same run.
//
//   sim_streams_bench [--streams 1000] [--tokens 64]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/process.hpp"

namespace {

struct ProcStats {
  double cpu_s = 0;
  long peak_rss_kib = 0;
  long rss_kib = 0;
};

ProcStats proc_stats(pid_t pid) {
  ProcStats s;
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(content.substr(content.rfind(')') + 2));
  std::string f;
  std::vector<std::string> v;
  while (fields >> f) v.push_back(f);
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_s = (std::stod(v[11]) + std::stod(v[12])) / ticks;  // utime + stime
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) s.peak_rss_kib = std::stol(line.substr(6));
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::stol(line.substr(6));
  }
  return s;
}

struct Result {
  int completed = 0;
  long events = 0;
  double wall_s = 0;
};

// Opens `n` streams at once and drives them all from one poll loop until they end.
Result run_streams(std::uint16_t port, int n, int tokens) {
  const std::string body = fmt::format(
      R"({{"messages":[{{"role":"user","content":"bench"}}],"max_tokens":{},"ignore_eos":true,"stream":true}})", tokens);
  const std::string req = fmt::format(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\nConnection: close\r\n\r\n{}",
      body.size(), body);
  std::vector<pollfd> fds;
  std::vector<std::string> tails(static_cast<std::size_t>(n));
  Result r;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) throw std::runtime_error("send failed");
    fds.push_back({fd, POLLIN, 0});
  }
  int open = n;
  char buf[65536];
  while (open > 0) {
    if (poll(fds.data(), fds.size(), 60000) <= 0) break;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t got = recv(fds[i].fd, buf, sizeof buf, 0);
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      // Count complete SSE events (each ends with a blank line); keep only the unfinished rest.
      std::string& t = tails[i];
      t.append(buf, static_cast<std::size_t>(got));
      std::size_t done = 0;
      for (std::size_t end; (end = t.find("\n\n", done)) != std::string::npos; done = end + 2) {
        const auto data = t.find("data: ", done);
        if (data == std::string::npos || data > end) continue;
        ++r.events;
        if (t.compare(data, 12, "data: [DONE]") == 0) ++r.completed;
      }
      t.erase(0, done);
    }
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int streams = 1000;
  int tokens = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--streams") == 0) streams = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--tokens") == 0) tokens = std::stoi(argv[i + 1]);
  }
  const std::string dir = mpo::test::make_temp_dir();
  // Enough slots and KV for every stream to run at once: the bench measures the shell, not queueing.
  mpo::test::write_file(dir + "/profile.json", fmt::format(
      R"({{"engine":{{"max_num_seqs":{},"num_gpu_blocks":{},"max_num_batched_tokens":65536}}}})",
      streams + 8, (streams + 8) * 16));
  mpo::test::Simulator sim({"--profile", dir + "/profile.json"});

  const auto idle = proc_stats(sim.process.pid());
  const Result one = run_streams(sim.port, 1, tokens);
  const auto after_one = proc_stats(sim.process.pid());
  const Result many = run_streams(sim.port, streams, tokens);
  const auto after_many = proc_stats(sim.process.pid());

  const double cpu_one = after_one.cpu_s - idle.cpu_s;
  const double cpu_many = after_many.cpu_s - after_one.cpu_s;
  const double per_event_one_us = cpu_one / static_cast<double>(one.events) * 1e6;
  const double per_event_many_us = cpu_many / static_cast<double>(many.events) * 1e6;
  fmt::print("streams: {} concurrent x {} tokens, completed {} ({} SSE events)\n", streams, tokens, many.completed, many.events);
  fmt::print("wall: {:.2f} s for {} streams; {:.2f} s for 1 stream (baseline)\n", many.wall_s, streams, one.wall_s);
  fmt::print("simulator CPU: {:.2f} s ({:.1f}% of one core over the run)\n", cpu_many, 100 * cpu_many / many.wall_s);
  fmt::print("simulator CPU per SSE event: {:.1f} us with {} streams vs {:.1f} us with 1 (ratio {:.2f})\n",
             per_event_many_us, streams, per_event_one_us, per_event_many_us / per_event_one_us);
  fmt::print("simulator peak RSS: {} KiB (idle {} KiB, {:.1f} KiB per stream)\n", after_many.peak_rss_kib,
             idle.rss_kib, static_cast<double>(after_many.peak_rss_kib - idle.rss_kib) / streams);
  fmt::print("wall vs 1-stream baseline: {:.2f}x (the engine model's step time grows with the batch: "
             "a + c*decode_seqs)\n", many.wall_s / one.wall_s);
  return many.completed == streams ? 0 : 1;
}
