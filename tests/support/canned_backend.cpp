#include "support/canned_backend.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace mpo::test {

CannedStep write_step(std::string bytes) { return {CannedStep::Kind::kWrite, std::move(bytes), 0}; }
CannedStep pause_step(int ms) { return {CannedStep::Kind::kPauseMs, {}, ms}; }
CannedStep close_step() { return {CannedStep::Kind::kClose, {}, 0}; }
CannedStep reset_step() { return {CannedStep::Kind::kReset, {}, 0}; }

int listen_on_loopback(int backlog, std::uint16_t& port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, backlog) != 0) {
    close(fd);
    throw std::runtime_error("scripted backend: cannot listen on loopback");
  }
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

CannedBackend::CannedBackend(std::vector<CannedStep> script) : script_(std::move(script)) {
  listen_fd_ = listen_on_loopback(64, port_);
  thread_ = std::thread([this] { serve(); });
}

CannedBackend::~CannedBackend() {
  stop_ = true;
  thread_.join();
  close(listen_fd_);
}

void CannedBackend::serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;  // wakes to notice stop_
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::string head;
    char buf[4096];
    while (head.find("\r\n\r\n") == std::string::npos) {
      pollfd c{fd, POLLIN, 0};
      if (poll(&c, 1, 5000) <= 0) break;
      const ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<std::size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      last_request_ = head;
    }
    bool closed = false;
    for (const auto& step : script_) {
      if (stop_) break;
      switch (step.kind) {
        case CannedStep::Kind::kWrite: send(fd, step.bytes.data(), step.bytes.size(), MSG_NOSIGNAL); break;
        case CannedStep::Kind::kPauseMs:
          for (int waited = 0; waited < step.ms && !stop_; waited += 10) {
            pollfd none{-1, 0, 0};
            poll(&none, 0, 10);
          }
          break;
        case CannedStep::Kind::kReset: {
          linger l{1, 0};  // close with RST
          setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
          close(fd);
          closed = true;
          break;
        }
        case CannedStep::Kind::kClose:
          close(fd);
          closed = true;
          break;
      }
      if (closed) break;
    }
    if (!closed) close(fd);
    ++closes_;
  }
}

}  // namespace mpo::test
