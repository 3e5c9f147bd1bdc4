// Numbers as the exposition formats write them: Go's ParseFloat spellings (+Inf, -Inf, Inf, NaN,
// case-insensitive, an optional leading '+'), and the shortest text that reads back exactly.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mpo::promtext {

std::optional<double> parse_number(std::string_view s);
std::string format_number(double v);

}  // namespace mpo::promtext
