// How many client connections a proxy process can hold with the file descriptors it has (pure).
// Each client connection uses one descriptor and, while its request is forwarded, one to the
// backend; a fixed reserve keeps the listeners, the ledger, the scrape file, the admin listener,
// the exporter's connection and the loops' own descriptors. Past the budget the proxy answers 503
// (or closes at once when too many wait for their 503) instead of running out (EMFILE).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string_view>

namespace mpo::proxy {

inline constexpr std::uint64_t kReservedDescriptors = 64;
// Over-limit connections waiting to be read and answered 503 at once; more are closed unread.
inline constexpr int kMaxRefusing = 64;

// The connection budget for an RLIMIT_NOFILE soft limit: what is left after the reserve and the
// refusals in progress, halved (client + backend); at least 1.
inline int connections_for_fd_limit(std::uint64_t nofile) {
  const std::uint64_t reserved = kReservedDescriptors + kMaxRefusing;
  const std::uint64_t budget = nofile > reserved ? (nofile - reserved) / 2 : 1;
  return static_cast<int>(std::clamp<std::uint64_t>(budget, 1, 1'000'000));
}

// accept() errors that come back at once until a descriptor or memory frees: the loop must pause
// on them, not retry (a spin). "" for the others (a connection aborted before it was accepted).
inline std::string_view resource_errno_name(int e) {
  switch (e) {
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ENOBUFS: return "ENOBUFS";
    case ENOMEM: return "ENOMEM";
    default: return "";
  }
}

// The pause after each failed accept of one episode: 10 ms, doubling to 1 s; an accept that
// succeeds ends the episode.
class AcceptBackoff {
 public:
  int next_ms() {
    first_ = ms_ == 0;
    ms_ = ms_ == 0 ? 10 : std::min(ms_ * 2, 1000);
    return ms_;
  }
  // The pause just taken is the episode's first (the one to say on stderr).
  bool first_of_episode() const { return first_; }
  void reset() { ms_ = 0; }

 private:
  int ms_ = 0;
  bool first_ = false;
};

}  // namespace mpo::proxy
