// The implementation of sim/block_pool.hpp. The KV cache: a pool of fixed-size blocks with
// reference counts, and a prefix cache keyed by the chained hash of full blocks (as vLLM V1's
// BlockPool).
#include "sim/block_pool.hpp"

namespace mpo::sim {

BlockPool::BlockPool(int num_blocks, bool enable_caching)
    : blocks_(static_cast<std::size_t>(num_blocks)), caching_(enable_caching) {
  for (BlockId id = 0; id < num_blocks; ++id) {
    blocks_[static_cast<std::size_t>(id)].free_pos = free_.insert(free_.end(), id);
  }
}

double BlockPool::usage() const {
  if (blocks_.empty()) return 0.0;
  return 1.0 - static_cast<double>(free_.size()) / static_cast<double>(blocks_.size());
}

std::vector<BlockId> BlockPool::lookup(std::span<const BlockHash> hashes) const {
  std::vector<BlockId> hit;
  if (!caching_) return hit;
  for (BlockHash h : hashes) {
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    hit.push_back(it->second);
  }
  return hit;
}

int BlockPool::count_free(std::span<const BlockId> blocks) const {
  int n = 0;
  for (BlockId b : blocks) n += blocks_[static_cast<std::size_t>(b)].ref == 0 ? 1 : 0;
  return n;
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (BlockId id : blocks) {
    Block& b = blocks_[static_cast<std::size_t>(id)];
    if (b.ref++ == 0) free_.erase(b.free_pos);
  }
}

std::vector<BlockId> BlockPool::allocate(int n) {
  std::vector<BlockId> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n && !free_.empty(); ++i) {
    const BlockId id = free_.front();
    free_.pop_front();
    Block& b = blocks_[static_cast<std::size_t>(id)];
    if (b.hash) {
      auto it = cached_.find(*b.hash);
      if (it != cached_.end() && it->second == id) cached_.erase(it);
      b.hash.reset();
      ++evictions_;
    }
    b.ref = 1;
    out.push_back(id);
  }
  return out;
}

void BlockPool::release(std::span<const BlockId> blocks) {
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& b = blocks_[static_cast<std::size_t>(*it)];
    if (b.ref > 0 && --b.ref == 0) b.free_pos = free_.insert(free_.end(), *it);
  }
}

void BlockPool::cache(BlockId block, BlockHash h) {
  if (!caching_) return;
  Block& b = blocks_[static_cast<std::size_t>(block)];
  if (b.hash) return;
  if (cached_.emplace(h, block).second) b.hash = h;
}

int BlockPool::reset_prefix_cache() {
  const int n = static_cast<int>(cached_.size());
  for (auto& [h, id] : cached_) blocks_[static_cast<std::size_t>(id)].hash.reset();
  cached_.clear();
  return n;
}

BlockHash hash_block(BlockHash parent, std::span<const std::uint32_t> tokens) {
  // FNV-1a over the parent hash and the token IDs, then a final avalanche (splitmix64).
  std::uint64_t h = 0xcbf29ce484222325ULL ^ parent;
  auto mix = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  };
  for (std::uint32_t t : tokens) mix(t);
  h += 0x9e3779b97f4a7c15ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace mpo::sim
