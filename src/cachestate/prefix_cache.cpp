// The implementation of cachestate/prefix_cache.hpp. This project's in-process token-prefix cache:
// the hermetic backend `cache-state-bench` observes.
#include "cachestate/prefix_cache.hpp"

#include <openssl/evp.h>

#include "core/text.hpp"

namespace mpo::cachestate {

std::string prefix_key(std::span<const std::int64_t> tokens) {
  std::string bytes;
  bytes.reserve(tokens.size() * 8);
  for (std::int64_t t : tokens) {
    auto u = static_cast<std::uint64_t>(t);
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xFF));
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  std::string out = "sha256:";
  out.resize(out.size() + 2 * len);
  write_hex_lower(out.data() + 7, md, len);
  return out;
}

bool PrefixCache::expired(const Entry& e) const { return ttl_us_ > 0 && clock_.steady_us() - e.admitted_us >= ttl_us_; }

void PrefixCache::touch(const std::string& key) {
  auto& slot = entries_.at(key);
  lru_.erase(slot.second);
  lru_.push_front(key);
  slot.second = lru_.begin();
}

void PrefixCache::insert(const std::string& key, std::uint64_t tokens) {
  while (entries_.size() >= capacity_ && !lru_.empty()) {
    entries_.erase(lru_.back());
    lru_.pop_back();
    ++counters_.evictions;
  }
  lru_.push_front(key);
  entries_[key] = {Entry{tokens, clock_.steady_us()}, lru_.begin()};
}

Lookup PrefixCache::request(std::span<const std::int64_t> tokens) {
  Lookup out;
  out.key = prefix_key(tokens);
  out.prompt_tokens = tokens.size();
  ++counters_.requests;
  auto it = entries_.find(out.key);
  if (it != entries_.end() && expired(it->second.first)) {
    lru_.erase(it->second.second);
    entries_.erase(it);
    ++counters_.expirations;
    it = entries_.end();
  }
  if (it != entries_.end()) {
    out.reused = true;
    out.reused_tokens = it->second.first.tokens;
    ++counters_.reuse_hits;
    counters_.reused_tokens += out.reused_tokens;
    touch(out.key);
    return out;
  }
  insert(out.key, tokens.size());
  return out;
}

std::string PrefixCache::admit(std::span<const std::int64_t> tokens) {
  const std::string key = prefix_key(tokens);
  if (entries_.count(key))
    touch(key);
  else
    insert(key, tokens.size());
  return key;
}

bool PrefixCache::invalidate(std::span<const std::int64_t> tokens) {
  auto it = entries_.find(prefix_key(tokens));
  if (it == entries_.end()) return false;
  lru_.erase(it->second.second);
  entries_.erase(it);
  ++counters_.invalidations;
  return true;
}

void PrefixCache::clear() {
  entries_.clear();
  lru_.clear();
}

bool PrefixCache::contains(std::span<const std::int64_t> tokens) const {
  return entries_.count(prefix_key(tokens)) != 0;
}

CacheCounters PrefixCache::counters() const {
  CacheCounters c = counters_;
  c.entries = entries_.size();
  return c;
}

}  // namespace mpo::cachestate
