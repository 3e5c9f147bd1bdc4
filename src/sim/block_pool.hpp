// The KV cache: a pool of fixed-size blocks with reference counts, and a prefix cache keyed by the
// chained hash of full blocks (as vLLM V1's BlockPool). Free blocks sit in an LRU queue; a free
// block that still holds a cached hash is reused (and its hash evicted) only when it reaches the
// front of that queue.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace mpo::sim {

using BlockId = std::int32_t;
using BlockHash = std::uint64_t;

class BlockPool {
 public:
  BlockPool(int num_blocks, bool enable_caching);

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  // Blocks with no reference (cached or not): what allocation may take.
  int num_free() const { return static_cast<int>(free_.size()); }
  // vLLM's kv_cache_usage_perc: 1 - free / total.
  double usage() const;
  std::uint64_t evictions() const { return evictions_; }

  // The longest run of leading hashes present in the cache, as block IDs.
  std::vector<BlockId> lookup(std::span<const BlockHash> hashes) const;
  // Of `blocks` (from lookup), how many are free now (taking them shrinks num_free()).
  int count_free(std::span<const BlockId> blocks) const;
  // Adds a reference to each block (removing free ones from the LRU queue).
  void touch(std::span<const BlockId> blocks);
  // Takes `n` blocks from the front of the LRU queue; caller checked num_free() >= n.
  std::vector<BlockId> allocate(int n);
  // Drops a reference from each block, last first, so a request's tail is evicted before its head.
  void release(std::span<const BlockId> blocks);
  // Records that `block` holds the full block with chained hash `h` (no-op without caching or if
  // the hash is already cached elsewhere).
  void cache(BlockId block, BlockHash h);
  // Forgets every cached hash (vLLM's /reset_prefix_cache); returns how many were dropped.
  int reset_prefix_cache();

 private:
  struct Block {
    int ref = 0;
    std::optional<BlockHash> hash;
    std::list<BlockId>::iterator free_pos;
  };
  std::vector<Block> blocks_;
  std::list<BlockId> free_;  // LRU: front is evicted first
  std::unordered_map<BlockHash, BlockId> cached_;
  bool caching_;
  std::uint64_t evictions_ = 0;
};

// Chained block hash: hash(parent, tokens of one full block). Deterministic across runs.
BlockHash hash_block(BlockHash parent, std::span<const std::uint32_t> tokens);

}  // namespace mpo::sim
