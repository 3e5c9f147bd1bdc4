// A scripted keep-alive HTTP backend that closes connections at the worst moment for a proxy's
// connection pool (issue 17): it answers requests on a connection with keep-alive offered
// (`Keep-Alive: timeout=5, max=100`, as llama.cpp b10309 says), but after a streamed response it
// keeps the connection open and closes it only once the next request on it has arrived, without
// answering. So a proxy's liveness check before reuse passes, its write succeeds, and its read
// finds EOF (or a reset). Streamed requests (a body with "stream":true) get a short SSE answer
// ending in [DONE]; others a JSON body with Content-Length. One thread, poll(2), many connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace mpo::test {

class KeepAliveBackend {
 public:
  enum class Close { kFin, kReset };
  // `close_after_every_response`: also close at the next request after non-streamed responses.
  explicit KeepAliveBackend(Close how = Close::kFin, bool close_after_every_response = false);
  ~KeepAliveBackend();
  KeepAliveBackend(const KeepAliveBackend&) = delete;
  KeepAliveBackend& operator=(const KeepAliveBackend&) = delete;

  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  // Requests that arrived on a connection marked for closing and were dropped unanswered.
  int dropped() const { return dropped_.load(); }

 private:
  void serve();
  Close how_;
  bool close_after_every_response_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0}, dropped_{0};
  std::thread thread_;
};

}  // namespace mpo::test
