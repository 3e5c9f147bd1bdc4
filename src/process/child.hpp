// A child process started from argv with its stdout piped to us: the one child-process class of the
// repository (the demo starts `simulate` and `proxy` with it; the tests start the binary, nginx,
// Chromium and llama-server with it). Edge: POSIX spawn, pipes, signals.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/result.hpp"

namespace mpo::process {

struct ChildOptions {
  std::string stderr_path;  // "": the child inherits our stderr; else appended to this file
};

class Child {
 public:
  // Starts argv[0] (a path; not looked up in PATH) with argv. The child is killed if this process
  // dies of a crash signal (SIGSEGV, SIGABRT, ...), so a crash never leaves children behind.
  static Result<Child> start(std::vector<std::string> argv, const ChildOptions& options = {});

  Child(Child&& other) noexcept;
  Child& operator=(Child&& other) noexcept;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  // SIGTERM, then SIGKILL after 3 s if it has not exited.
  ~Child();

  // One line of the child's stdout, without its newline. Errors: `process.timeout` when
  // `timeout_ms` passes first, `process.eof` when the child closes its stdout before a newline.
  Result<std::string> read_line(int timeout_ms = 20000);
  // SIGTERM, SIGKILL when it has not exited within `timeout_ms`; the exit code (128+signal if killed
  // by one). -1 when already reaped.
  int terminate(int timeout_ms = 20000);
  // Waits for the child to exit by itself; its exit code as terminate() gives it.
  int wait();
  pid_t pid() const { return pid_; }

 private:
  Child(pid_t pid, int out_fd) : pid_(pid), out_fd_(out_fd) {}
  void release();

  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffered_;
};

// The port of the first address after `marker` in a line such as "modelperfobs proxy: listening on
// 127.0.0.1:41234 -> ... (admin 127.0.0.1:41235)" (`marker` "admin " gives 41235); error when none.
Result<unsigned> port_after(std::string_view line, std::string_view marker);

}  // namespace mpo::process
