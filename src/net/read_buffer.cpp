// The implementation of net/read_buffer.hpp: each thread's kept read blocks.
#include "net/read_buffer.hpp"

#include <vector>

namespace mpo::net {
namespace {

// A thread's kept blocks, freed with the thread.
struct KeptBlocks {
  std::vector<void*> blocks;
  KeptBlocks() { blocks.reserve(ReadBlocks::kKeptBlocks); }
  ~KeptBlocks() {
    for (void* p : blocks) ::operator delete(p);
  }
  KeptBlocks(const KeptBlocks&) = delete;
  KeptBlocks& operator=(const KeptBlocks&) = delete;
};

KeptBlocks& kept_blocks() {
  thread_local KeptBlocks k;
  return k;
}

}  // namespace

void* ReadBlocks::take(std::size_t bytes) {
  if (bytes > kBlockBytes) return ::operator new(bytes);
  auto& k = kept_blocks().blocks;
  if (k.empty()) return ::operator new(kBlockBytes);
  void* p = k.back();
  k.pop_back();
  return p;
}

void ReadBlocks::give(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  auto& k = kept_blocks().blocks;
  if (bytes > kBlockBytes || k.size() >= kKeptBlocks) {
    ::operator delete(p);
    return;
  }
  k.push_back(p);  // no allocation: reserved for kKeptBlocks
}

std::size_t ReadBlocks::kept() noexcept { return kept_blocks().blocks.size(); }

}  // namespace mpo::net
