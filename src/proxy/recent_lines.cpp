// The implementation of proxy/recent_lines.hpp. The last ledger lines the proxy wrote, numbered,
// for `GET /lines?after=N` on the admin listener: what `modelperfobs top --admin URL` reads when
// the ledger file is not at hand.
#include "proxy/recent_lines.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mpo::proxy {

void RecentLines::add(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (blocks_.empty() || blocks_.back().size() + line.size() > blocks_.back().capacity()) {
    std::string block;
    if (!spares_.empty()) {
      block = std::move(spares_.back());
      spares_.pop_back();
      block.clear();
    }
    const std::size_t room = std::max(block_bytes_, line.size());
    if (block.capacity() < room) {
      block.reserve(room);
      ++blocks_allocated_;
    }
    blocks_.push_back(std::move(block));
  }
  std::string& block = blocks_.back();
  lines_.push_back({first_block_ + blocks_.size() - 1, block.size(), line.size()});
  block.append(line);
  ++next_;
  while (lines_.size() > capacity_) lines_.pop_front();
  while (blocks_.size() > 1 && (lines_.empty() || lines_.front().block > first_block_)) {
    if (spares_.size() == 2) spares_.erase(spares_.begin());
    spares_.push_back(std::move(blocks_.front()));
    blocks_.pop_front();
    ++first_block_;
  }
}

std::string RecentLines::since(std::uint64_t after, std::size_t max) const {
  const std::uint64_t first = next_ - lines_.size();  // the number of lines_.front()
  after = std::min(after, next_ - 1);                 // a reader ahead of us (a restarted proxy) starts over below
  const std::uint64_t from = std::max(after + 1, first);
  const std::uint64_t missed = from - (after + 1);
  const std::uint64_t to = std::min<std::uint64_t>(next_, from + max);  // exclusive
  std::string out = fmt::format(R"({{"schema":"{}","next":{},"missed":{}}})", kRecentLinesSchema, to - 1, missed);
  out += '\n';
  for (std::uint64_t n = from; n < to; ++n) {
    const Line& l = lines_[static_cast<std::size_t>(n - first)];
    out.append(blocks_[static_cast<std::size_t>(l.block - first_block_)], l.offset, l.size);
    out += '\n';
  }
  return out;
}

}  // namespace mpo::proxy
