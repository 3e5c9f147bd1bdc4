// The buffer a connection's reads go into (the proxy's client and upstream connections): Beast's
// flat buffer over blocks of 16 KiB that each thread keeps a few of, so that a buffer given back
// while its connection waits (a client's after its request was read, an upstream connection's in
// the pool) costs no allocation when the next read takes one again (issue 43: without the
// recycling, giving them back cost two 16 KiB mallocs and frees a request, ~2.3k instructions; with
// each connection keeping its own, every stream in flight held a client buffer it no longer read).
#pragma once

#include <boost/beast/core/flat_buffer.hpp>
#include <cstddef>
#include <new>

namespace mpo::net {

// Sizes up to kBlockBytes are served as whole blocks from the calling thread's list (kept blocks:
// at most kKeptBlocks, 1 MiB); larger ones by operator new. A block freed on another thread than
// the one that took it joins that thread's list.
class ReadBlocks {
 public:
  static constexpr std::size_t kBlockBytes = 16 * 1024;
  static constexpr std::size_t kKeptBlocks = 64;
  static void* take(std::size_t bytes);
  static void give(void* p, std::size_t bytes) noexcept;
  // Blocks kept by the calling thread (for tests).
  static std::size_t kept() noexcept;
};

template <class T>
struct ReadBlockAllocator {
  using value_type = T;
  ReadBlockAllocator() = default;
  template <class U>
  ReadBlockAllocator(const ReadBlockAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) { return static_cast<T*>(ReadBlocks::take(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { ReadBlocks::give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const ReadBlockAllocator<U>&) const noexcept {
    return true;
  }
};

using ReadBuffer = boost::beast::basic_flat_buffer<ReadBlockAllocator<char>>;

// Gives `b`'s memory back when it holds nothing (the next read takes a block again).
inline void release_if_empty(ReadBuffer& b) {
  if (b.size() == 0 && b.capacity() > 0) b.shrink_to_fit();
}

}  // namespace mpo::net
