#include "stream_driver.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace mpo::bench {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

std::string request_text(const std::string& path, const std::string& body, const std::string& observation_id,
                         bool keep_alive) {
  const std::string id = observation_id.empty() ? "" : fmt::format("X-Fak-Observation-ID: {}\r\n", observation_id);
  return fmt::format(
      "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "{}Content-Length: {}\r\nConnection: {}\r\n\r\n{}",
      path, id, body.size(), keep_alive ? "keep-alive" : "close", body);
}

// The text of a content event and of a stream's last event, in chat, the Responses API and
// Anthropic Messages (the simulator's shapes; a benchmark's reader, not the product's).
bool has_content(const std::string& held, std::size_t at, std::size_t end) {
  for (const char* marker :
       {"\"delta\":{\"content\":", "\"type\":\"response.output_text.delta\"",
        "\"type\":\"response.reasoning_text.delta\"", "\"type\":\"text_delta\"", "\"type\":\"thinking_delta\""}) {
    if (held.find(marker, at) < end) return true;
  }
  return false;
}
bool is_last_event(const std::string& held, std::size_t at, std::size_t end) {
  if (held.compare(at, 12, "data: [DONE]") == 0) return true;
  for (const char* marker : {"data: {\"type\":\"response.completed\"", "data: {\"type\":\"response.incomplete\"",
                             "data: {\"type\":\"message_stop\"}"}) {
    if (held.compare(at, std::strlen(marker), marker) == 0 && at + std::strlen(marker) <= end) return true;
  }
  return false;
}

int connect_loopback(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed: raise the open-file limit");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
  return fd;
}

// One streamed response read incrementally: head, chunked framing (a proxy may cut an SSE event
// across chunks: it forwards reads as they come), SSE events.
struct ResponseReader {
  std::string raw;   // bytes not yet de-chunked
  std::string held;  // de-chunked body not yet parsed
  std::size_t chunk_left = 0;
  bool head_done = false;
  bool body_done = false;  // the last (zero) chunk arrived

  // Returns true when this read brought the stream's first content event.
  bool feed(const char* data, std::size_t n, std::int64_t t, StreamRecord& rec, DriveResult& r) {
    raw.append(data, n);
    if (!head_done) {
      const auto end = raw.find("\r\n\r\n");
      if (end == std::string::npos) return false;
      const auto id = raw.find("X-Fak-Observation-ID: ");
      if (id != std::string::npos && id < end) {
        const auto eol = raw.find("\r\n", id);
        rec.observation_id = raw.substr(id + 22, eol - id - 22);
      }
      raw.erase(0, end + 4);
      head_done = true;
    }
    while (!body_done) {
      if (chunk_left > 0) {
        const std::size_t take = std::min(chunk_left, raw.size());
        held.append(raw, 0, take);
        raw.erase(0, take);
        chunk_left -= take;
        if (chunk_left > 0) break;
        continue;
      }
      const auto eol = raw.find("\r\n");
      if (eol == std::string::npos) break;
      if (eol == 0) {  // the CRLF that ends a chunk's data
        raw.erase(0, 2);
        continue;
      }
      chunk_left = std::stoul(raw.substr(0, eol), nullptr, 16);
      raw.erase(0, eol + 2);
      if (chunk_left == 0) body_done = true;  // last chunk (its final CRLF may follow)
    }
    bool first = false;
    std::size_t done_upto = 0;
    for (std::size_t e; (e = held.find("\n\n", done_upto)) != std::string::npos; done_upto = e + 2) {
      const auto at = held.find("data: ", done_upto);
      if (at == std::string::npos || at > e) continue;
      ++r.events;
      if (is_last_event(held, at, e)) {
        rec.done = true;
        ++r.completed;
      } else if (has_content(held, at, e)) {
        if (rec.first_content_us < 0) {
          rec.first_content_us = t;
          first = true;
        }
        rec.content_us.push_back(t);
      }
    }
    held.erase(0, done_upto);
    return first;
  }
};

}  // namespace

DriveResult drive_streams(std::uint16_t port, int n, const std::string& body,
                          const std::function<void()>& on_all_started, const std::string& id_prefix, int timeout_s,
                          const std::string& path) {
  return drive_kept_streams(port, n, 1, body, on_all_started, id_prefix, timeout_s, path);
}

DriveResult drive_kept_streams(std::uint16_t port, int n, int per_connection, const std::string& body,
                               const std::function<void()>& on_all_started, const std::string& id_prefix, int timeout_s,
                               const std::string& path) {
  DriveResult r;
  const bool kept = per_connection > 1;
  const auto per = static_cast<std::size_t>(std::max(1, per_connection));
  r.streams.resize(static_cast<std::size_t>(n) * per);
  // Stream i*per + k is connection i's k-th request; `sent[i]` counts connection i's requests sent.
  std::vector<std::size_t> sent(static_cast<std::size_t>(n), 1);
  const auto request_for = [&](std::size_t stream) {
    return request_text(path, body, id_prefix.empty() ? "" : fmt::format("{}{}", id_prefix, stream), kept);
  };
  // epoll, not poll: with 8,000 streams a poll(2) loop spends its time scanning idle sockets and
  // falls behind the events it is meant to time.
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::runtime_error("epoll_create1 failed");
  std::vector<int> fds;
  std::vector<ResponseReader> readers(static_cast<std::size_t>(n));
  const auto start = now_us();
  for (int i = 0; i < n; ++i) {
    const int fd = connect_loopback(port);
    const std::string req = request_for(static_cast<std::size_t>(i) * per);
    r.streams[static_cast<std::size_t>(i) * per].sent_us = now_us();
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
      throw std::runtime_error("send failed");
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<std::uint64_t>(i);
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) throw std::runtime_error("epoll_ctl failed");
    fds.push_back(fd);
  }
  int open = n;
  int started = 0;
  bool announced = false;
  std::vector<char> buf(65536);
  std::vector<epoll_event> ready(1024);
  const auto deadline = start + static_cast<std::int64_t>(timeout_s) * 1'000'000;
  while (open > 0 && now_us() < deadline) {
    const int k = epoll_wait(ep, ready.data(), static_cast<int>(ready.size()), 1000);
    for (int e = 0; e < k; ++e) {
      const auto i = static_cast<std::size_t>(ready[static_cast<std::size_t>(e)].data.u64);
      if (fds[i] < 0) continue;
      const ssize_t got = recv(fds[i], buf.data(), buf.size(), 0);
      const std::int64_t t = now_us();
      if (got <= 0) {
        close(fds[i]);  // also leaves the epoll set
        fds[i] = -1;
        --open;
        continue;
      }
      ResponseReader& reader = readers[i];
      if (reader.feed(buf.data(), static_cast<std::size_t>(got), t, r.streams[i * per + sent[i] - 1], r)) ++started;
      if (!announced && started == n && on_all_started) {
        announced = true;
        on_all_started();
      }
      // A kept connection's next request once this response is read to its last chunk's CRLF.
      if (kept && reader.body_done && reader.raw.size() >= 2) {
        if (sent[i] == per) {
          close(fds[i]);
          fds[i] = -1;
          --open;
          continue;
        }
        reader = ResponseReader{};
        const std::size_t stream = i * per + sent[i]++;
        const std::string req = request_for(stream);
        r.streams[stream].sent_us = now_us();
        if (send(fds[i], req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
          throw std::runtime_error("send failed");
      }
    }
  }
  for (int fd : fds) {
    if (fd >= 0) close(fd);
  }
  close(ep);
  r.wall_s = static_cast<double>(now_us() - start) / 1e6;
  return r;
}

KeepAliveClient::KeepAliveClient(std::uint16_t port) : fd_(connect_loopback(port)) {}

KeepAliveClient::~KeepAliveClient() {
  if (fd_ >= 0) close(fd_);
}

StreamRecord KeepAliveClient::stream(const std::string& body, const std::string& observation_id) {
  const std::string req = request_text("/v1/chat/completions", body, observation_id, true);
  DriveResult r;
  r.streams.resize(1);
  StreamRecord& rec = r.streams[0];
  ResponseReader reader;
  rec.sent_us = now_us();
  if (send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size()))
    throw std::runtime_error("send failed");
  std::vector<char> buf(65536);
  while (!reader.body_done) {
    const ssize_t got = recv(fd_, buf.data(), buf.size(), 0);
    const std::int64_t t = now_us();
    if (got <= 0) throw std::runtime_error("the server closed a keep-alive connection mid-response");
    reader.feed(buf.data(), static_cast<std::size_t>(got), t, rec, r);
  }
  // The chunked body's final CRLF may come in a read of its own: take it so the next response
  // starts clean.
  while (reader.raw.size() < 2) {
    const ssize_t got = recv(fd_, buf.data(), buf.size(), 0);
    if (got <= 0) throw std::runtime_error("the server closed a keep-alive connection mid-response");
    reader.raw.append(buf.data(), static_cast<std::size_t>(got));
  }
  return rec;
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

// The fields of /proc/PID/stat after the command name.
std::vector<std::string> stat_fields(const std::filesystem::path& stat_path) {
  std::ifstream stat(stat_path);
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  std::vector<std::string> v;
  const auto close = content.rfind(')');
  if (close == std::string::npos || close + 2 > content.size()) return v;
  std::istringstream fields(content.substr(close + 2));
  for (std::string f; fields >> f;) v.push_back(f);
  return v;
}

// The process and its direct children (nginx's workers are children of its master).
std::vector<int> process_and_children(int pid) {
  std::vector<int> pids{pid};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto f = stat_fields(entry.path() / "stat");
    if (f.size() > 1 && std::stoi(f[1]) == pid) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace

Rss rss_of(int pid) {
  Rss total;
  for (int p : process_and_children(pid)) {
    const Rss one = rss_of_one(p);
    total.current_kib += one.current_kib;
    total.peak_kib += one.peak_kib;
  }
  return total;
}

double cpu_seconds_of(int pid) {
  // schedstat's first field: nanoseconds on a CPU, per thread (clock ticks are too coarse for
  // short runs).
  double ns = 0;
  for (int p : process_and_children(pid)) {
    std::error_code ec;
    for (const auto& task : std::filesystem::directory_iterator(fmt::format("/proc/{}/task", p), ec)) {
      std::ifstream schedstat(task.path() / "schedstat");
      double on_cpu = 0;
      if (schedstat >> on_cpu) ns += on_cpu;
    }
  }
  return ns / 1e9;
}

void raise_fd_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace mpo::bench
