// The last ledger lines the proxy wrote, numbered, for `GET /lines?after=N` on the admin listener:
// what `modelperfobs top --admin URL` reads when the ledger file is not at hand. A bounded ring:
// a reader that falls behind is told how many lines it missed. Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::proxy {

inline constexpr const char* kRecentLinesSchema = "modelperfobs.recent-lines.v1";

class RecentLines {
 public:
  // `block_bytes`: the lines' text is kept in blocks of about this size, dropped whole once every
  // line in them is gone (no allocation per line: issue 43). The last two blocks dropped are kept
  // and filled again: a new block's memory is touched page by page as lines are copied in, a page
  // fault every few lines (5.7% of the proxy's samples over its first 1,920 one-token requests,
  // most of them here). (Two: the number of blocks the ring holds goes up and down by one as the
  // lines' lengths vary.)
  explicit RecentLines(std::size_t capacity = 10'000, std::size_t block_bytes = 256 * 1024)
      : capacity_(capacity), block_bytes_(block_bytes) {}
  // One rendered ledger line (its newline included or not).
  void add(std::string_view line);
  // The response to `after` (the last line number the reader has; 0 for none): a first line
  // {"schema":...,"next":N,"missed":M} (N: the number to ask after next time; M: lines after
  // `after` already gone from the ring), then at most `max` lines, one per line (docs/FORMATS.md).
  std::string since(std::uint64_t after, std::size_t max) const;
  std::uint64_t last() const { return next_ - 1; }
  // Blocks of text kept (for tests: old blocks go).
  std::size_t blocks() const { return blocks_.size(); }
  // Blocks allocated so far (for tests: once the ring is full, dropped blocks are filled again).
  std::size_t blocks_allocated() const { return blocks_allocated_; }

 private:
  struct Line {
    std::uint64_t block;  // the number of the block that holds it
    std::size_t offset;
    std::size_t size;
  };
  std::size_t capacity_;
  std::size_t block_bytes_;
  std::deque<std::string> blocks_;   // text; a block's capacity is never exceeded (views stay valid)
  std::uint64_t first_block_ = 0;    // the number of blocks_.front()
  std::vector<std::string> spares_;  // the last blocks dropped, their memory already touched
  std::size_t blocks_allocated_ = 0;
  std::deque<Line> lines_;
  std::uint64_t next_ = 1;  // the number the next line gets; lines_.back() is next_ - 1
};

}  // namespace mpo::proxy
