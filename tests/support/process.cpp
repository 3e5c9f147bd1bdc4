#include "support/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace mpo::test {

std::string binary_path() {
  if (const char* env = std::getenv("MPO_BIN")) return env;
  return MPO_BINARY_PATH;
}

namespace {

// Children still running when a test crashes (a segfault, an abort) would outlive it and keep the
// test's stderr open, and ctest would wait on that pipe for as long as they run: a crash must end
// the test, not hang CI. The children are listed here and killed from the crash signal's handler.
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

void track_child(pid_t pid) {
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

void untrack_child(pid_t pid) {
  for (auto& c : g_children) {
    pid_t expected = pid;
    if (c.compare_exchange_strong(expected, 0)) return;
  }
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  out_fd_ = fds[0];
  if (rc != 0) {
    close(out_fd_);
    throw std::runtime_error(std::string("cannot start ") + argv[0] + ": " + std::strerror(rc));
  }
  track_child(pid_);
}

ChildProcess::~ChildProcess() {
  // SIGTERM first (nginx's master stops its workers only then), SIGKILL if it does not exit.
  if (pid_ > 0) terminate(3000);
  if (out_fd_ >= 0) close(out_fd_);
}

std::string ChildProcess::read_line(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) throw std::runtime_error("child printed no line in time");
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n <= 0) throw std::runtime_error("child closed stdout before printing a line");
    buffered_.append(buf, static_cast<std::size_t>(n));
  }
}

int ChildProcess::terminate(int timeout_ms) {
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
  untrack_child(pid_);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int ChildProcess::wait() {
  if (pid_ <= 0) return -1;
  int status = 0;
  waitpid(pid_, &status, 0);
  untrack_child(pid_);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Simulator::Simulator(std::vector<std::string> extra_args)
    : process([&] {
        std::vector<std::string> argv{binary_path(), "simulate", "--listen", "127.0.0.1:0"};
        argv.insert(argv.end(), extra_args.begin(), extra_args.end());
        return argv;
      }()) {
  const std::string line = process.read_line();
  const auto colon = line.rfind(':', line.find(" (model"));
  if (line.find("listening on http://") == std::string::npos || colon == std::string::npos) {
    throw std::runtime_error("unexpected first line from simulate: " + line);
  }
  port = static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
}

Proxy::Proxy(const std::string& backend, const std::string& ledger, std::vector<std::string> extra_args,
             const std::string& stderr_path)
    : process([&] {
        std::vector<std::string> argv{binary_path(), "proxy",          "--backend",   backend,    "--listen",
                                      "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--ledger", ledger};
        argv.insert(argv.end(), extra_args.begin(), extra_args.end());
        if (!stderr_path.empty()) {
          // exec keeps the proxy's pid the child's, so terminate() still signals the proxy itself.
          argv.insert(argv.begin(), {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>>'" + stderr_path + "'"});
        }
        return argv;
      }()) {
  const std::string line = process.read_line();
  auto port_after = [&](const std::string& marker) -> std::uint16_t {
    const auto at = line.find(marker);
    if (at == std::string::npos) throw std::runtime_error("unexpected first line from proxy: " + line);
    const auto colon = line.find(':', line.find("127.0.0.1", at));
    return static_cast<std::uint16_t>(std::stoi(line.substr(colon + 1)));
  };
  port = port_after("listening on ");
  admin_port = port_after("admin ");
}

namespace {
CliRun run_to_end(std::vector<std::string> argv, int timeout_ms) {
  ChildProcess p(std::move(argv));
  CliRun r;
  try {
    for (;;) r.out += p.read_line(timeout_ms) + "\n";
  } catch (const std::exception&) {
    // stdout closed: the command finished writing
  }
  r.exit_code = p.wait();
  return r;
}
}  // namespace

CliRun run_cli(const std::vector<std::string>& args, int timeout_ms) {
  std::vector<std::string> argv{binary_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_end(std::move(argv), timeout_ms);
}

CliRun run_cli_with_stderr(const std::string& args, int timeout_ms) {
  return run_to_end({"/bin/sh", "-c", binary_path() + " " + args + " 2>&1"}, timeout_ms);
}

Dom dump_dom(const std::string& html_path, const std::string& profile_dir) {
  ChildProcess chromium({"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                         "--no-first-run", "--disable-background-networking", "--disable-component-update",
                         "--disable-sync", "--user-data-dir=" + profile_dir, "--dump-dom", "file://" + html_path});
  Dom dom;
  try {
    for (;;) dom.text += chromium.read_line(60000) + "\n";
  } catch (const std::exception&) {
    // Chromium closed stdout: the DOM is complete
  }
  dom.exit_code = chromium.wait();
  return dom;
}

std::size_t Dom::count(const std::string& needle) const {
  std::size_t n = 0;
  for (auto p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

std::vector<std::string> read_lines(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::string> lines;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // torn last line
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

std::uint16_t free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

bool is_listening(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

std::string make_temp_dir() {
  std::string tmpl =
      (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) + "/mpo-test-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

}  // namespace mpo::test
