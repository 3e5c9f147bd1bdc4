// The implementation of promtext/number.hpp. Numbers as the exposition formats write them: Go's
// ParseFloat spellings (+Inf, -Inf, Inf, NaN, case-insensitive, an optional leading '+'), and the
// shortest text that reads back exactly.
#include "promtext/number.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace mpo::promtext {

std::optional<double> parse_number(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s[0] == '+' || s[0] == '-') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (end != s.data() + s.size()) return std::nullopt;
  if (ec == std::errc::result_out_of_range) {
    // Go's ParseFloat rounds overflow to ±Inf and underflow to 0; from_chars reports both.
    const bool tiny =
        s.find_first_of("eE") != std::string_view::npos && s.find('-', s.find_first_of("eE")) != std::string_view::npos;
    v = tiny ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (ec != std::errc{}) {
    return std::nullopt;
  }
  return negative ? -v : v;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace mpo::promtext
