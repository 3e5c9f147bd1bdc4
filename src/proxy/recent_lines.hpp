// The last ledger lines the proxy wrote, numbered, for `GET /lines?after=N` on the admin listener:
// what `modelperfobs top --admin URL` reads when the ledger file is not at hand. A bounded ring:
// a reader that falls behind is told how many lines it missed. Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace mpo::proxy {

inline constexpr const char* kRecentLinesSchema = "modelperfobs.recent-lines.v1";

class RecentLines {
 public:
  explicit RecentLines(std::size_t capacity = 10'000) : capacity_(capacity) {}
  // One rendered ledger line (its newline included or not).
  void add(std::string line);
  // The response to `after` (the last line number the reader has; 0 for none): a first line
  // {"schema":...,"next":N,"missed":M} (N: the number to ask after next time; M: lines after
  // `after` already gone from the ring), then at most `max` lines, one per line (docs/FORMATS.md).
  std::string since(std::uint64_t after, std::size_t max) const;
  std::uint64_t last() const { return next_ - 1; }

 private:
  std::size_t capacity_;
  std::deque<std::string> lines_;
  std::uint64_t next_ = 1;  // the number the next line gets; lines_.back() is next_ - 1
};

}  // namespace mpo::proxy
