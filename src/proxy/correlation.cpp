// The implementation of proxy/correlation.hpp. Contract 2 (docs/ARCHITECTURE.md): the correlation
// ID.
#include "proxy/correlation.hpp"

#include <array>

namespace mpo::proxy {

namespace {

// The bytes an id may hold: letters, digits and ".", "_", ":", "-".
constexpr std::array<bool, 256> kIdByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) {
    t[static_cast<std::size_t>(c)] = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                     c == '.' || c == '_' || c == ':' || c == '-';
  }
  return t;
}();

}  // namespace

bool is_valid_observation_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  // A table look-up a byte and no branch (issue 43: four range tests a byte were ~10 instructions).
  bool ok = true;
  for (const char c : id) ok &= kIdByte[static_cast<unsigned char>(c)];
  return ok;
}

std::string adopt_or_new_id(std::string_view client_value, Uuid7Generator& gen, std::int64_t unix_ms) {
  std::string out;
  adopt_or_new_id(out, client_value, gen, unix_ms);
  return out;
}

void adopt_or_new_id(std::string& out, std::string_view client_value, Uuid7Generator& gen, std::int64_t unix_ms) {
  if (is_valid_observation_id(client_value)) {
    out.assign(client_value);
  } else {
    gen.next_into(out, unix_ms);
  }
}

}  // namespace mpo::proxy
