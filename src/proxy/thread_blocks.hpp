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

namespace mpo::proxy {

// Strings and vectors whose buffers each thread keeps for the next one taken (issue 43): a request's
// bytes, its upstream text, the backend's head fields are each allocated and freed once per request,
// and those over 1,032 bytes (an upstream request) miss glibc's per-thread cache (~900 instructions
// to allocate and free). A thread keeps up to `Keep` buffers of at most `MaxBytes`; larger ones are
// freed as before. A buffer given back on another thread joins that thread's. `Tag` keeps one use's
// buffers apart from another's (an upstream request's 1.3 KB from a target's 20 bytes), so that a
// buffer taken is usually big enough already.
template <class C, class Tag = void, std::size_t Keep = 64, std::size_t MaxBytes = 64 * 1024>
class ThreadKept {
 public:
  static C take() {
    auto& kept = list();
    if (kept.empty()) return C();
    C c = std::move(kept.back());
    kept.pop_back();
    return c;
  }
  static void give(C&& c) noexcept {
    if (c.capacity() == C().capacity() || c.capacity() * sizeof(typename C::value_type) > MaxBytes) return;
    auto& kept = list();
    if (kept.size() >= Keep) return;
    c.clear();
    kept.push_back(std::move(c));  // reserved: never allocates
  }
  // Buffers this thread keeps now (for tests).
  static std::size_t kept_now() { return list().size(); }

 private:
  static std::vector<C>& list() {
    thread_local std::vector<C> kept = [] {
      std::vector<C> v;
      v.reserve(Keep);
      return v;
    }();
    return kept;
  }
};

// Says a Kept starts empty instead of taking the thread's kept buffer: an object made empty and
// then assigned (a default-constructed request) would take a buffer only to give it back.
struct NotTaken {};

// A string or vector taken from ThreadKept, given back when it goes.
template <class C, class Tag = void>
class Kept {
 public:
  Kept() : c_(ThreadKept<C, Tag>::take()) {}
  explicit Kept(NotTaken) noexcept {}
  ~Kept() { ThreadKept<C, Tag>::give(std::move(c_)); }
  Kept(Kept&& other) noexcept : c_(std::move(other.c_)) {}
  Kept& operator=(Kept&& other) noexcept {
    if (this != &other) {
      ThreadKept<C, Tag>::give(std::move(c_));
      c_ = std::move(other.c_);
    }
    return *this;
  }
  Kept(const Kept&) = delete;
  Kept& operator=(const Kept&) = delete;
  C& operator*() { return c_; }
  const C& operator*() const { return c_; }
  C* operator->() { return &c_; }
  const C* operator->() const { return &c_; }

 private:
  C c_;
};

}  // namespace mpo::proxy
