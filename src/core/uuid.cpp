// The implementation of core/uuid.hpp. UUIDv7 (RFC 9562): 48-bit Unix milliseconds, version 7, 74
// random bits.
#include "core/uuid.hpp"

#include <array>

namespace mpo {

Uuid7Generator::Uuid7Generator(std::uint64_t seed)
    : rng_(seed != 0 ? seed : (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}()) {}

std::string Uuid7Generator::next(std::int64_t unix_ms) {
  std::string out;
  next_into(out, unix_ms);
  return out;
}

void Uuid7Generator::next_into(std::string& out, std::int64_t unix_ms) {
  if (unix_ms <= last_ms_) {
    unix_ms = last_ms_;
    counter_ = static_cast<std::uint16_t>((counter_ + 1) & 0x0fff);
    if (counter_ == 0) ++unix_ms;  // counter overflow: borrow the next millisecond
  } else {
    counter_ = static_cast<std::uint16_t>(rng_() & 0x01ff);  // leave headroom to count up
  }
  last_ms_ = unix_ms;
  std::array<std::uint8_t, 16> b{};
  const auto ms = static_cast<std::uint64_t>(unix_ms);
  for (int i = 0; i < 6; ++i) b[i] = static_cast<std::uint8_t>(ms >> (40 - 8 * i));
  b[6] = static_cast<std::uint8_t>(0x70 | ((counter_ >> 8) & 0x0f));
  b[7] = static_cast<std::uint8_t>(counter_ & 0xff);
  const std::uint64_t r = rng_();
  for (int i = 8; i < 16; ++i) b[i] = static_cast<std::uint8_t>(r >> (8 * (i - 8)));
  b[8] = static_cast<std::uint8_t>(0x80 | (b[8] & 0x3f));
  // Written in place (issue 43: a push_back per digit was most of an id's cost).
  static constexpr char kHex[] = "0123456789abcdef";
  out.assign(36, '-');
  char* p = out.data();
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) ++p;  // the dash already there
    *p++ = kHex[b[i] >> 4];
    *p++ = kHex[b[i] & 0x0f];
  }
}

bool is_uuid_v7(std::string_view s) {
  if (s.size() != 36) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  const char variant = s[19];
  return s[14] == '7' && (variant == '8' || variant == '9' || variant == 'a' || variant == 'b');
}

}  // namespace mpo
