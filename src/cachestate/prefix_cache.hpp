// This project's in-process token-prefix cache: the hermetic backend `cache-state-bench` observes.
// A real cache, small on purpose: content-addressed by fak's key rule (so fak's test vector holds),
// a capacity in entries with LRU eviction (a hit refreshes an entry), explicit invalidation, and a
// time-to-live read from an injectable clock. Every transition moves a counter. Pure.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/clock.hpp"

namespace mpo::cachestate {

// "sha256:" + hex(SHA-256 of the tokens, each as 8-byte little-endian two's-complement int64).
std::string prefix_key(std::span<const std::int64_t> tokens);

struct CacheCounters {
  std::uint64_t requests = 0, reuse_hits = 0, reused_tokens = 0, entries = 0, invalidations = 0, expirations = 0,
                evictions = 0;
};

struct Lookup {
  bool reused = false;
  std::uint64_t reused_tokens = 0;
  std::uint64_t prompt_tokens = 0;
  std::string key;
};

class PrefixCache {
 public:
  // capacity: entries (>= 1); ttl_us: 0 = entries never expire.
  PrefixCache(std::size_t capacity, std::int64_t ttl_us, const Clock& clock)
      : capacity_(capacity < 1 ? 1 : capacity), ttl_us_(ttl_us), clock_(clock) {}

  // A request with this prefix: a hit reuses (and refreshes) the entry; a miss admits it, evicting
  // the least recently used entry when full. An expired entry is removed (counted) and missed.
  Lookup request(std::span<const std::int64_t> tokens);
  // Admission without a request (a mechanism filling the cache); returns the key.
  std::string admit(std::span<const std::int64_t> tokens);
  // Removes the entry; true when it was there (counted as an invalidation).
  bool invalidate(std::span<const std::int64_t> tokens);
  // Empties the cache (a restart of the cache: not counted as invalidations).
  void clear();
  bool contains(std::span<const std::int64_t> tokens) const;

  CacheCounters counters() const;
  std::size_t capacity() const { return capacity_; }
  std::int64_t ttl_us() const { return ttl_us_; }

 private:
  struct Entry {
    std::uint64_t tokens = 0;
    std::int64_t admitted_us = 0;
  };
  void touch(const std::string& key);
  void insert(const std::string& key, std::uint64_t tokens);
  bool expired(const Entry& e) const;

  std::size_t capacity_;
  std::int64_t ttl_us_;
  const Clock& clock_;
  std::list<std::string> lru_;  // most recent first
  std::map<std::string, std::pair<Entry, std::list<std::string>::iterator>> entries_;
  CacheCounters counters_;
};

}  // namespace mpo::cachestate
