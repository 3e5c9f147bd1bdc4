// The implementation of net/read_buffer.hpp: each thread's kept read blocks.
#include "net/read_buffer.hpp"

namespace mpo::net {
namespace {

// A thread's kept blocks. Trivially destructible, so a buffer freed late in the thread's (or the
// process's) end, after the blocks were let go, still finds it and frees its block directly.
struct KeptBlocks {
  void* blocks[ReadBlocks::kKeptBlocks];
  std::size_t count;
  bool closed;  // the thread is ending: keep nothing more
};
thread_local KeptBlocks kept_blocks{};

// Frees the thread's kept blocks when the thread ends.
struct FreeAtThreadEnd {
  FreeAtThreadEnd() = default;
  FreeAtThreadEnd(const FreeAtThreadEnd&) = delete;
  FreeAtThreadEnd& operator=(const FreeAtThreadEnd&) = delete;
  ~FreeAtThreadEnd() {
    while (kept_blocks.count > 0) ::operator delete(kept_blocks.blocks[--kept_blocks.count]);
    kept_blocks.closed = true;
  }
};
thread_local FreeAtThreadEnd free_at_thread_end;

}  // namespace

void* ReadBlocks::take(std::size_t bytes) {
  if (bytes > kBlockBytes) return ::operator new(bytes);
  KeptBlocks& k = kept_blocks;
  if (k.count == 0) return ::operator new(kBlockBytes);
  return k.blocks[--k.count];
}

void ReadBlocks::give(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  KeptBlocks& k = kept_blocks;
  if (bytes > kBlockBytes || k.closed || k.count == kKeptBlocks) {
    ::operator delete(p);
    return;
  }
  (void)&free_at_thread_end;  // its first use on this thread: the blocks are freed when it ends
  k.blocks[k.count++] = p;
}

std::size_t ReadBlocks::kept() noexcept { return kept_blocks.count; }

}  // namespace mpo::net
