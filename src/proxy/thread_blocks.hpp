// Blocks of one size that each thread keeps for its next allocation of that size (issue 43). An
// exchange, a relay and the relay's 16 KiB body buffer are allocated and freed once per request;
// each is larger than glibc's per-thread cache takes (1,032 bytes), so each went through malloc's
// bins, ~500 instructions apiece. A thread keeps up to `Keep` of them (the relay buffers of one
// loop: 64 x 16 KiB at most); a block freed on another thread joins that thread's.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace mpo::proxy {

template <std::size_t Size, std::size_t Keep = 64>
class ThreadBlocks {
 public:
  static void* take() {
    auto& blocks = kept();
    if (blocks.empty()) return ::operator new(Size);
    void* p = blocks.back();
    blocks.pop_back();
    return p;
  }
  static void give(void* p) noexcept {
    auto& blocks = kept();
    if (blocks.size() < Keep) {
      blocks.push_back(p);  // reserved: never allocates
      return;
    }
    ::operator delete(p);
  }
  // Blocks this thread keeps now (for tests).
  static std::size_t kept_now() { return kept().size(); }

 private:
  struct Kept {
    Kept() { blocks.reserve(Keep); }
    ~Kept() {
      for (void* p : blocks) ::operator delete(p);
    }
    Kept(const Kept&) = delete;
    Kept& operator=(const Kept&) = delete;
    std::vector<void*> blocks;
  };
  static std::vector<void*>& kept() {
    thread_local Kept k;
    return k.blocks;
  }
};

// Class-specific allocation through ThreadBlocks for a class of that size (a larger derived
// class would go to the global allocator).
template <class T>
struct KeptByThread {
  static void* operator new(std::size_t n) {
    return n == sizeof(T) ? ThreadBlocks<sizeof(T)>::take() : ::operator new(n);
  }
  static void operator delete(void* p, std::size_t n) noexcept {
    if (n == sizeof(T)) {
      ThreadBlocks<sizeof(T)>::give(p);
    } else {
      ::operator delete(p);
    }
  }
};

}  // namespace mpo::proxy
