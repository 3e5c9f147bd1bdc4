// The implementation of proxy/correlation.hpp. Contract 2 (docs/ARCHITECTURE.md): the correlation
// ID.
#include "proxy/correlation.hpp"

namespace mpo::proxy {

bool is_valid_observation_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == ':' || c == '-';
    if (!ok) return false;
  }
  return true;
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
