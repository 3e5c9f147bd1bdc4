#include "support/process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "support/build_paths.hpp"

namespace mpo::test {

std::string binary_path() {
  if (const char* env = std::getenv("MPO_BIN")) return env;
  return built_binary_path();
}

namespace {

process::Child start_or_throw(std::vector<std::string> argv, const process::ChildOptions& options) {
  auto child = process::Child::start(std::move(argv), options);
  if (!child) throw std::runtime_error(child.error().message);
  return std::move(child).value();
}

std::uint16_t port_or_throw(const std::string& line, std::string_view marker) {
  const auto port = process::port_after(line, marker);
  if (!port) throw std::runtime_error("unexpected first line: " + line);
  return static_cast<std::uint16_t>(*port);
}

}  // namespace

ChildProcess::ChildProcess(std::vector<std::string> argv, const process::ChildOptions& options)
    : child_(start_or_throw(std::move(argv), options)) {}

std::string ChildProcess::read_line(int timeout_ms) {
  auto line = child_.read_line(timeout_ms);
  if (!line) throw std::runtime_error(line.error().message);
  return std::move(line).value();
}

Simulator::Simulator(std::vector<std::string> extra_args)
    : process([&] {
        std::vector<std::string> argv{binary_path(), "simulate", "--listen", "127.0.0.1:0"};
        argv.insert(argv.end(), extra_args.begin(), extra_args.end());
        return argv;
      }()) {
  port = port_or_throw(process.read_line(), "listening on ");
}

Proxy::Proxy(const std::string& backend, const std::string& ledger, std::vector<std::string> extra_args,
             const std::string& stderr_path, std::vector<std::string> launcher)
    : process(
          [&] {
            std::vector<std::string> argv = std::move(launcher);
            argv.insert(argv.end(), {binary_path(), "proxy", "--backend", backend, "--listen", "127.0.0.1:0",
                                     "--admin-listen", "127.0.0.1:0", "--ledger", ledger});
            // Every proxy test runs at --threads 1 and, registered again by ctest, at 4
            // (tests/CMakeLists.txt); a test's own --threads comes later and wins.
            const char* threads = std::getenv("MPO_PROXY_THREADS");
            argv.insert(argv.end(), {"--threads", threads ? threads : "1"});
            argv.insert(argv.end(), extra_args.begin(), extra_args.end());
            return argv;
          }(),
          process::ChildOptions{stderr_path}) {
  const std::string line = process.read_line();
  port = port_or_throw(line, "listening on ");
  admin_port = port_or_throw(line, "admin ");
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

CliRun run_cli_on_terminal(const std::string& args, int timeout_ms) {
  return run_to_end({"/usr/bin/script", "--quiet", "--return", "--command", binary_path() + " " + args, "/dev/null"},
                    timeout_ms);
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

void await_scrape_since(const std::string& path, const std::string& since, const std::function<void()>& pace) {
  constexpr std::string_view kKey = "\"scrape_started_at\":\"";
  const auto has_one = [&] {
    for (const auto& line : read_lines(path)) {
      const auto at = line.find(kKey);
      if (at != std::string::npos && line.compare(at + kKey.size(), since.size(), since) >= 0) return true;
    }
    return false;
  };
  for (int i = 0; i < 2000 && !has_one(); ++i) pace();
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

int connect_loopback(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  close(fd);
  return -1;
}

bool is_listening(std::uint16_t port) {
  const int fd = connect_loopback(port);
  if (fd < 0) return false;
  close(fd);
  return true;
}

namespace {

// The directories make_temp_dir made, removed when the process that made them exits (a test binary,
// a bench): a suite run over and over left thousands of them, and the report bench a 1.2 GB ledger
// each time. MPO_KEEP_TEST_DIRS=1 keeps them, to look at what a failing test wrote. A forked child
// that exits removes nothing of its parent's.
class TempDirs {
 public:
  ~TempDirs() {
    const char* keep = std::getenv("MPO_KEEP_TEST_DIRS");
    if (::getpid() != owner_ || (keep != nullptr && *keep != '\0' && std::string_view(keep) != "0")) return;
    for (const auto& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);  // best effort: a directory a test made unreadable stays
    }
  }
  void add(std::string dir) {
    std::lock_guard lock(m_);
    dirs_.push_back(std::move(dir));
  }

 private:
  const pid_t owner_ = ::getpid();
  std::mutex m_;
  std::vector<std::string> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string make_temp_dir() {
  TempDirs& dirs = temp_dirs();  // constructed before the first directory: destroyed after its users
  std::string tmpl =
      (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) + "/mpo-test-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dirs.add(tmpl);
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
