// The implementation of cli/files.hpp. Reading a whole (small) file for a command: a profile, a
// saved page, a CSV, a receipt.
#include "cli/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace mpo::cli {

bool write_output(const std::string& path, const std::string& text, std::string_view command) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return static_cast<bool>(std::cout);
  }
  const std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
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
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return fail(err);
    }
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return fail(err);
  }
  if (::close(fd) != 0) return fail(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail(errno);
  return true;
}

}  // namespace mpo::cli
