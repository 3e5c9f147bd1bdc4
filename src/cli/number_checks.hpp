// Checks of a flag's number whose messages say what is wanted. CLI11's PositiveNumber and
// NonNegativeNumber (2.x) report a range up to DBL_MAX written out in full: "Value 0 not in range
// 0.000000 to 1797693134862315708145274237317043567980705675258449965989174768031572607800285...".
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <string>

namespace mpo::cli {

namespace detail {
inline CLI::Validator number_check(bool zero_allowed, const char* wanted) {
  return CLI::Validator(
      [zero_allowed, wanted](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) return text + " is not a number";
        if (v > 0 || (zero_allowed && v == 0)) return "";
        return text + " is not " + wanted;
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}
}  // namespace detail

// A number above 0.
inline CLI::Validator positive_number() { return detail::number_check(false, "above 0"); }
// A number of 0 or more.
inline CLI::Validator non_negative_number() { return detail::number_check(true, "0 or more"); }

}  // namespace mpo::cli
