// The implementation of cli/files.hpp. Reading a whole (small) file for a command: a profile, a
// saved page, a CSV, a receipt.
#include "cli/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mpo::cli {

std::optional<std::string> read_input_file(const std::string& path, std::string_view command) {
  errno = 0;
  auto text = read_text_file(path);
  if (!text) {
    const int err = errno;
    std::cerr << fmt::format("modelperfobs {}: cannot read {}{}\n", command, path,
                             err != 0 ? fmt::format(": {}", std::strerror(err)) : std::string());
  }
  return text;
}

namespace {

bool write_all(int fd, const std::string& text) {
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    off += static_cast<std::size_t>(n);
  }
  return true;
}

// Where the text goes: a regular file (or none yet) is replaced atomically at its real path; anything
// else (a pipe, a terminal, /dev/null, a /dev/fd or /proc alias of a descriptor, a link to nothing yet,
// which creates the file it names) is written in place.
struct Target {
  std::string path;
  bool in_place = false;
};

Target target_of(const std::string& path) {
  if (path.starts_with("/dev/") || path.starts_with("/proc/")) return {path, true};
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return {path, false};  // not there yet: created
  if (S_ISREG(st.st_mode)) return {path, false};
  if (S_ISLNK(st.st_mode) && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    char real[PATH_MAX];
    if (::realpath(path.c_str(), real) != nullptr) return {real, false};
  }
  return {path, true};
}

}  // namespace

bool write_output(const std::string& path, const std::string& text, std::string_view command) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return static_cast<bool>(std::cout);
  }
  const Target target = target_of(path);
  if (target.in_place) {
    std::cout.flush();  // what the command printed before stays before
    const int fd = ::open(target.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    const bool ok = fd >= 0 && write_all(fd, text);
    const int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) std::cerr << fmt::format("modelperfobs {}: cannot write {}: {}\n", command, path, std::strerror(err));
    return ok;
  }
  const std::string tmp = fmt::format("{}.tmp-{}", target.path, getpid());
  auto fail = [&](int err) {
    std::cerr << fmt::format("modelperfobs {}: cannot write {}: {}; {} (an existing {} is left as it was)\n", command,
                             path, std::strerror(err),
                             err == ENOSPC || err == EFBIG || err == EDQUOT ? "free some space and run it again"
                                                                            : "check the folder exists and is writable",
                             path);
    std::remove(tmp.c_str());
    return false;
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errno);
  if (!write_all(fd, text)) {
    const int err = errno;
    ::close(fd);
    return fail(err);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(err);
  }
  if (::close(fd) != 0) return fail(errno);
  if (std::rename(tmp.c_str(), target.path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace mpo::cli
