// The implementation of proxy/field_id.hpp.
#include "proxy/field_id.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>

namespace mpo::proxy {
namespace {

// Whether n bytes (1 to 32) at a and b are the same: overlapping compares of a fixed size, no call
// to memcmp (a third of the lookup's cost).
template <class Word>
bool word_equal(const char* a, const char* b) {
  Word x{}, y{};
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  return x == y;
}

bool same_bytes(const char* a, const char* b, std::size_t n) {
  using W8 = std::uint64_t;
  using W4 = std::uint32_t;
  if (n >= 16) {  // [0, 16) and [n - 16, n) cover 16 to 32 bytes
    return word_equal<W8>(a, b) && word_equal<W8>(a + 8, b + 8) && word_equal<W8>(a + n - 16, b + n - 16) &&
           word_equal<W8>(a + n - 8, b + n - 8);
  }
  if (n >= 8) return word_equal<W8>(a, b) && word_equal<W8>(a + n - 8, b + n - 8);
  if (n >= 4) return word_equal<W4>(a, b) && word_equal<W4>(a + n - 4, b + n - 4);
  for (std::size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

}  // namespace

boost::beast::http::field field_id(std::string_view name) {
  namespace http = boost::beast::http;
  struct Slot {
    char text[32];
    std::size_t size = 0;  // 0: empty
    http::field id = http::field::unknown;
  };
  thread_local Slot slots[64];
  if (name.empty() || name.size() > sizeof(Slot::text)) return http::string_to_field(name);
  const std::size_t at =
      (name.size() * 31 + static_cast<unsigned char>(name.front()) * 7 + static_cast<unsigned char>(name.back())) %
      std::size(slots);
  Slot& slot = slots[at];
  if (slot.size == name.size() && same_bytes(slot.text, name.data(), name.size())) return slot.id;
  slot.id = http::string_to_field(name);
  std::memcpy(slot.text, name.data(), name.size());
  slot.size = name.size();
  return slot.id;
}

}  // namespace mpo::proxy
