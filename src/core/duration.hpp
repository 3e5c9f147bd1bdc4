// Durations on the command line: "1s", "500ms", "2m", "1h", "250us", or a bare number of seconds.
#pragma once

#include <string_view>

#include "core/result.hpp"

namespace mpo {

// Seconds; finite and >= 0. The error says which spellings are accepted.
Result<double> parse_duration_s(std::string_view text);

}  // namespace mpo
