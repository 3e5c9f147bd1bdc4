// UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, 74 random bits. Sortable by creation time.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

namespace mpo {

class Uuid7Generator {
 public:
  // seed 0 draws a seed from std::random_device.
  explicit Uuid7Generator(std::uint64_t seed = 0);
  // Returns the canonical 36-character lowercase form. Within one generator, IDs made in the same
  // millisecond still sort in creation order (a 12-bit counter in rand_a, RFC 9562 method 1).
  std::string next(std::int64_t unix_ms);
  // The same written into `out` (its buffer kept when it has room: no allocation, issue 43).
  void next_into(std::string& out, std::int64_t unix_ms);

 private:
  std::mt19937_64 rng_;
  std::int64_t last_ms_ = -1;
  std::uint16_t counter_ = 0;
};

// True for the canonical 8-4-4-4-12 hex form with version 7 and the RFC 9562 variant.
bool is_uuid_v7(std::string_view s);

}  // namespace mpo
