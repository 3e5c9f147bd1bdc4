// The implementation of process/child.hpp. A child process started from argv with its stdout piped
// to us: the one child-process class of the repository (the demo starts `simulate` and `proxy` with
// it; the tests start the binary, nginx, Chromium and llama-server with it).
#include "process/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>

extern char** environ;

namespace mpo::process {
namespace {

// Children still running when we crash would outlive us (and keep a test runner waiting on the
// pipe they inherited): they are listed here and killed from the crash signal's handler.
constexpr std::size_t kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];

void kill_children_and_reraise(int sig) {
  for (auto& c : g_children) {
    const pid_t pid = c.load();
    if (pid > 0) ::kill(pid, SIGKILL);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void track(pid_t pid) {
  static const bool installed = [] {
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) ::signal(sig, kill_children_and_reraise);
    return true;
  }();
  (void)installed;
  for (auto& c : g_children) {
    pid_t empty = 0;
    if (c.compare_exchange_strong(empty, pid)) return;
  }
}

void untrack(pid_t pid) {
  for (auto& c : g_children) {
    pid_t expected = pid;
    if (c.compare_exchange_strong(expected, 0)) return;
  }
}

int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

Result<Child> Child::start(std::vector<std::string> argv, const ChildOptions& options) {
  if (argv.empty()) return make_error(errc::kProcessArgv, "no program to start");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return make_error(errc::kProcessPipe, std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  if (!options.stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, options.stderr_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return make_error(errc::kProcessSpawn, "cannot start " + argv[0] + ": " + std::strerror(rc));
  }
  track(pid);
  return Child(pid, fds[0]);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      buffered_(std::move(other.buffered_)) {}

Child& Child::operator=(Child&& other) noexcept {
  if (this != &other) {
    release();
    pid_ = std::exchange(other.pid_, -1);
    out_fd_ = std::exchange(other.out_fd_, -1);
    buffered_ = std::move(other.buffered_);
  }
  return *this;
}

Child::~Child() { release(); }

void Child::release() {
  // SIGTERM first (nginx's master stops its workers only then), SIGKILL if it does not exit.
  if (pid_ > 0) terminate(3000);
  if (out_fd_ >= 0) close(out_fd_);
  out_fd_ = -1;
}

Result<std::string> Child::read_line(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0) return make_error(errc::kProcessEof, "the child's stdout is closed");
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return make_error(errc::kProcessTimeout, "the child printed no line in time");
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(errc::kProcessEof, "the child closed its stdout before printing a line");
    buffered_.append(buf, static_cast<std::size_t>(n));
  }
}

int Child::terminate(int timeout_ms) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    pollfd none{-1, 0, 0};
    poll(&none, 0, 5);  // reaping a child: there is no fd to wait on
  }
  untrack(pid_);
  pid_ = -1;
  return exit_code(status);
}

int Child::wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  untrack(pid_);
  pid_ = -1;
  return exit_code(status);
}

Result<unsigned> port_after(std::string_view line, std::string_view marker) {
  // The first ':' after the marker that a digit follows (skips "http://" and an IPv6 host's colons).
  auto at = line.find(marker);
  while (at != std::string_view::npos) {
    at = line.find(':', at);
    if (at == std::string_view::npos || at + 1 >= line.size()) break;
    ++at;
    if (line[at] < '0' || line[at] > '9') continue;
    unsigned port = 0;
    const auto [end, ec] = std::from_chars(line.data() + at, line.data() + line.size(), port);
    if (ec == std::errc() && port > 0 && port < 65536) return port;
    break;
  }
  return make_error(errc::kProcessOutput, "no address after '" + std::string(marker) + "' in: " + std::string(line));
}

}  // namespace mpo::process
