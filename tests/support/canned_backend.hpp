// A scripted HTTP backend for tests of misbehaving servers: listens on a free loopback port, and
// for each connection reads one request head and plays the next script step (write bytes, pause,
// reset or close). Runs on its own thread; stops when destroyed.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mpo::test {

struct CannedStep {
  enum class Kind { kWrite, kPauseMs, kClose, kReset };
  Kind kind;
  std::string bytes;  // kWrite
  int ms = 0;         // kPauseMs
};

class CannedBackend {
 public:
  // Every accepted connection plays `script`.
  explicit CannedBackend(std::vector<CannedStep> script);
  ~CannedBackend();
  std::uint16_t port() const { return port_; }
  int connections() const { return connections_.load(); }
  // Connections it has closed (each at the end of its script, or by a close or reset step).
  int closes() const { return closes_.load(); }
  // The head (and whatever body bytes came with it) of the last request read.
  std::string last_request() const {
    std::lock_guard lock(mutex_);
    return last_request_;
  }

 private:
  void serve();
  std::vector<CannedStep> script_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> closes_{0};
  mutable std::mutex mutex_;
  std::string last_request_;
  std::thread thread_;
};

// A listening socket on a free loopback port (the port is written to `port`); throws when it
// cannot listen. For the scripted backends here.
int listen_on_loopback(int backlog, std::uint16_t& port);

CannedStep write_step(std::string bytes);
CannedStep pause_step(int ms);
CannedStep close_step();
CannedStep reset_step();

}  // namespace mpo::test
