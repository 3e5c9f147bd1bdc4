// Starting the project's binary as a real child process in tests: stdout piped, stderr inherited,
// killed when the handle goes away.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "process/child.hpp"

namespace mpo::test {

// process::Child (src/process) with a test's error handling: a failure throws.
class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> argv, const process::ChildOptions& options = {});

  // Reads one line of the child's stdout; throws if it ends or `timeout_ms` passes first (a
  // safety net against hangs; a healthy child answers in milliseconds).
  std::string read_line(int timeout_ms = 20000);
  // Sends SIGTERM and waits for the exit; returns the exit code (128+signal if killed).
  int terminate(int timeout_ms = 20000) { return child_.terminate(timeout_ms); }
  // Waits for the child to exit by itself; returns its exit code.
  int wait() { return child_.wait(); }
  pid_t pid() const { return child_.pid(); }

 private:
  process::Child child_;
};

// Starts `modelperfobs simulate --listen 127.0.0.1:0 EXTRA...` and reads the port it printed.
struct Simulator {
  explicit Simulator(std::vector<std::string> extra_args = {});
  ChildProcess process;
  std::uint16_t port = 0;
};

// Starts `modelperfobs proxy --backend BACKEND --listen 127.0.0.1:0 --admin-listen 127.0.0.1:0
// --ledger LEDGER --threads $MPO_PROXY_THREADS (default 1) EXTRA...` and reads both ports it printed.
// `stderr_path`: where its stderr goes (appended), instead of the test's own.
struct Proxy {
  // `launcher`: a command the proxy is started under (e.g. prlimit --nofile=128:128 --).
  Proxy(const std::string& backend, const std::string& ledger, std::vector<std::string> extra_args = {},
        const std::string& stderr_path = "", std::vector<std::string> launcher = {});
  ChildProcess process;
  std::uint16_t port = 0;
  std::uint16_t admin_port = 0;
};

// Ledger lines of a file (a torn last line is left out).
// Runs `modelperfobs ARGS...` to completion: its exit code and its stdout (stderr is inherited).
struct CliRun {
  int exit_code = 0;
  std::string out;
};
CliRun run_cli(const std::vector<std::string>& args, int timeout_ms = 60000);
// The same through /bin/sh with stderr joined to stdout (ARGS as one shell-quoted string).
CliRun run_cli_with_stderr(const std::string& args, int timeout_ms = 60000);
// The same on a terminal (script(1) gives it a pseudo-terminal): what a person at one would see,
// carriage returns and escape sequences included.
CliRun run_cli_on_terminal(const std::string& args, int timeout_ms = 60000);

std::vector<std::string> read_lines(const std::string& path);
// Waits until the snapshots file `path` (proxy --scrape) holds a scrape that began at or after
// `since` (RFC 3339 in UTC to the microsecond, as format_rfc3339_us writes it and the file does:
// such texts compare as their times do), calling `pace` between looks (bounded: 2,000 looks).
// Not a count of lines: the file is written in batches, so new lines may all be older scrapes.
void await_scrape_since(const std::string& path, const std::string& since, const std::function<void()>& pace);

// The DOM headless Chromium builds from a local HTML file (what a browser would show), and its exit
// code; `profile_dir` holds Chromium's throwaway profile.
struct Dom {
  std::string text;
  int exit_code = 0;
  std::size_t count(const std::string& needle) const;
};
Dom dump_dom(const std::string& html_path, const std::string& profile_dir);

std::string binary_path();
// A loopback port that was free a moment ago (bound, read, closed): for a peer that cannot be
// told to use port 0, or for a port nobody listens on.
std::uint16_t free_loopback_port();
// A raw client socket connected to 127.0.0.1:port (for bytes the HTTP helpers do not send); -1
// when the connection fails. The caller closes it.
int connect_loopback(std::uint16_t port);
// True when something accepts connections on the loopback port (for peers with no ready signal).
bool is_listening(std::uint16_t port);
// A fresh, empty directory for one test's files, removed with everything in it when the process
// exits (MPO_KEEP_TEST_DIRS=1 keeps it).
std::string make_temp_dir();
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& content);

}  // namespace mpo::test
