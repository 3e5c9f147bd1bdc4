#include "stream_driver.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace mpo::bench {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

DriveResult drive_streams(std::uint16_t port, int n, const std::string& body, const std::function<void()>& on_all_started,
                          const std::string& id_prefix, int timeout_s) {
  auto request_for = [&](int i) {
    const std::string id = id_prefix.empty() ? "" : fmt::format("X-Fak-Observation-ID: {}{}\r\n", id_prefix, i);
    return fmt::format(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "{}Content-Length: {}\r\nConnection: close\r\n\r\n{}",
        id, body.size(), body);
  };
  DriveResult r;
  r.streams.resize(static_cast<std::size_t>(n));
  std::vector<pollfd> fds;
  std::vector<std::string> held(static_cast<std::size_t>(n));   // de-chunked body not yet parsed
  std::vector<std::string> raw(static_cast<std::size_t>(n));    // bytes not yet de-chunked
  std::vector<std::size_t> chunk_left(static_cast<std::size_t>(n), 0);
  std::vector<bool> head_done(static_cast<std::size_t>(n), false);
  const auto start = now_us();
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket() failed: raise the open-file limit");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
    const std::string req = request_for(i);
    r.streams[static_cast<std::size_t>(i)].sent_us = now_us();
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) throw std::runtime_error("send failed");
    fds.push_back({fd, POLLIN, 0});
  }
  int open = n;
  int started = 0;
  bool announced = false;
  std::vector<char> buf(65536);
  const auto deadline = start + static_cast<std::int64_t>(timeout_s) * 1'000'000;
  while (open > 0 && now_us() < deadline) {
    if (poll(fds.data(), fds.size(), 1000) <= 0) continue;
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = recv(fds[i].fd, buf.data(), buf.size(), 0);
      const std::int64_t t = now_us();
      if (got <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
        continue;
      }
      auto& rec = r.streams[i];
      std::string& h = held[i];
      std::string& w = raw[i];
      w.append(buf.data(), static_cast<std::size_t>(got));
      if (!head_done[i]) {
        const auto end = w.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        const auto id = w.find("X-Fak-Observation-ID: ");
        if (id != std::string::npos && id < end) {
          const auto eol = w.find("\r\n", id);
          rec.observation_id = w.substr(id + 22, eol - id - 22);
        }
        w.erase(0, end + 4);
        head_done[i] = true;
      }
      // De-chunk: a proxy may cut an SSE event across chunks (it forwards reads as they come).
      for (;;) {
        if (chunk_left[i] > 0) {
          const std::size_t take = std::min(chunk_left[i], w.size());
          h.append(w, 0, take);
          w.erase(0, take);
          chunk_left[i] -= take;
          if (chunk_left[i] > 0) break;
          continue;
        }
        const auto eol = w.find("\r\n");
        if (eol == std::string::npos) break;
        if (eol == 0) {  // the CRLF that ends a chunk's data
          w.erase(0, 2);
          continue;
        }
        chunk_left[i] = std::stoul(w.substr(0, eol), nullptr, 16);
        w.erase(0, eol + 2);
        if (chunk_left[i] == 0) break;  // last chunk
      }
      std::size_t done_upto = 0;
      for (std::size_t e; (e = h.find("\n\n", done_upto)) != std::string::npos; done_upto = e + 2) {
        const auto data = h.find("data: ", done_upto);
        if (data == std::string::npos || data > e) continue;
        ++r.events;
        if (h.compare(data, 12, "data: [DONE]") == 0) {
          rec.done = true;
          ++r.completed;
        } else if (h.find("\"delta\":{\"content\":", data) < e) {
          if (rec.first_content_us < 0) {
            rec.first_content_us = t;
            ++started;
          }
          rec.content_us.push_back(t);
        }
      }
      h.erase(0, done_upto);
      if (!announced && started == n && on_all_started) {
        announced = true;
        on_all_started();
      }
    }
  }
  for (auto& p : fds) {
    if (p.fd >= 0) close(p.fd);
  }
  r.wall_s = static_cast<double>(now_us() - start) / 1e6;
  return r;
}

namespace {

Rss rss_of_one(int pid) {
  Rss r;
  std::ifstream status(fmt::format("/proc/{}/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) r.peak_kib = std::stol(line.substr(6));
    if (line.rfind("VmRSS:", 0) == 0) r.current_kib = std::stol(line.substr(6));
  }
  return r;
}

}  // namespace

Rss rss_of(int pid) {
  // The process and its direct children (nginx's workers are children of its master).
  Rss total = rss_of_one(pid);
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = content.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(content.substr(close + 2));
    std::string state;
    int ppid = 0;
    fields >> state >> ppid;
    if (ppid != pid) continue;
    const Rss child = rss_of_one(std::stoi(name));
    total.current_kib += child.current_kib;
    total.peak_kib += child.peak_kib;
  }
  return total;
}

double cpu_seconds_of(int pid) {
  std::ifstream stat(fmt::format("/proc/{}/stat", pid));
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::istringstream fields(content.substr(content.rfind(')') + 2));
  std::vector<std::string> v;
  for (std::string f; fields >> f;) v.push_back(f);
  return (std::stod(v[11]) + std::stod(v[12])) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace mpo::bench
