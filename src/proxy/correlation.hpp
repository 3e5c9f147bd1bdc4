// Contract 2 (docs/ARCHITECTURE.md): the correlation ID. A client's valid ID (1-128 of [A-Za-z0-9._:-]) is
// adopted; anything else is replaced by a fresh UUIDv7.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/uuid.hpp"

namespace mpo::proxy {

bool is_valid_observation_id(std::string_view id);
std::string adopt_or_new_id(std::string_view client_value, Uuid7Generator& gen, std::int64_t unix_ms);
// The same written into `out`, its buffer kept (the proxy's observations keep theirs, issue 43).
void adopt_or_new_id(std::string& out, std::string_view client_value, Uuid7Generator& gen, std::int64_t unix_ms);

}  // namespace mpo::proxy
