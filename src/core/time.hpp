// RFC 3339 timestamps with microseconds, always UTC ("Z") on output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo {

// 1767225600123456 -> "2026-01-01T00:00:00.123456Z". Valid for years 0001-9999.
std::string format_rfc3339_us(std::int64_t unix_us);
// The same written into `out`; its length (27 for years 0000-9999).
std::size_t write_rfc3339_us(char (&out)[48], std::int64_t unix_us);

// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm)" ('t'/'z'/' ' accepted as RFC 3339
// allows) into microseconds since the Unix epoch. Fractions beyond microseconds are truncated.
Result<std::int64_t> parse_rfc3339(std::string_view text);

}  // namespace mpo
