// The implementation of proxy/field_id.hpp.
#include "proxy/field_id.hpp"

#include <cstddef>
#include <cstring>
#include <iterator>

namespace mpo::proxy {

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
  if (slot.size == name.size() && std::memcmp(slot.text, name.data(), name.size()) == 0) return slot.id;
  slot.id = http::string_to_field(name);
  std::memcpy(slot.text, name.data(), name.size());
  slot.size = name.size();
  return slot.id;
}

}  // namespace mpo::proxy
