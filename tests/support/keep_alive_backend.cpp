#include "support/keep_alive_backend.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/canned_backend.hpp"

namespace mpo::test {
namespace {

struct Connection {
  std::string in;
  bool close_at_next_request = false;
};

// The length of the first complete request in `in` (head and Content-Length body), or 0.
std::size_t complete_request(const std::string& in) {
  const auto head_end = in.find("\r\n\r\n");
  if (head_end == std::string::npos) return 0;
  std::size_t body = 0;
  for (const char* name : {"Content-Length: ", "content-length: "}) {
    const auto at = in.find(name);
    if (at != std::string::npos && at < head_end) body = std::strtoul(in.c_str() + at + 16, nullptr, 10);
  }
  const std::size_t total = head_end + 4 + body;
  return in.size() >= total ? total : 0;
}

void send_all(int fd, const std::string& bytes) {
  for (std::size_t off = 0; off < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

std::string streamed_answer() {
  std::string body = chunk(R"(data: {"id":"s1","model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]})"
                           "\n\n");
  body += chunk(R"(data: {"id":"s1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})"
                "\n\n");
  body += chunk("data: [DONE]\n\n");
  body += "0\r\n\r\n";
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
         "Keep-Alive: timeout=5, max=100\r\n\r\n" +
         body;
}

std::string plain_answer() {
  const std::string body =
      R"({"id":"p1","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],)"
      R"("usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}})";
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nKeep-Alive: timeout=5, max=100\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

KeepAliveBackend::KeepAliveBackend(Close how, bool close_after_every_response)
    : how_(how), close_after_every_response_(close_after_every_response) {
  listen_fd_ = listen_on_loopback(256, port_);
  thread_ = std::thread([this] { serve(); });
}

KeepAliveBackend::~KeepAliveBackend() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

void KeepAliveBackend::serve() {
  std::map<int, Connection> conns;
  auto drop = [&](int fd, bool reset) {
    if (reset) {
      linger l{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    close(fd);
    conns.erase(fd);
  };
  while (!stop_) {
    std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
    for (const auto& [fd, c] : conns) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 20) <= 0) continue;  // wakes to notice stop_
    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        ++connections_;
        conns[fd] = {};
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const int fd = fds[i].fd;
      char buf[16384];
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        drop(fd, false);
        continue;
      }
      auto& c = conns[fd];
      c.in.append(buf, static_cast<std::size_t>(n));
      while (const std::size_t len = complete_request(c.in)) {
        if (c.close_at_next_request) {
          ++dropped_;
          drop(fd, how_ == Close::kReset);
          break;
        }
        const bool streamed = c.in.substr(0, len).find("\"stream\":true") != std::string::npos;
        c.in.erase(0, len);
        send_all(fd, streamed ? streamed_answer() : plain_answer());
        c.close_at_next_request = streamed || close_after_every_response_;
      }
    }
  }
  for (const auto& [fd, c] : conns) close(fd);
}

}  // namespace mpo::test
