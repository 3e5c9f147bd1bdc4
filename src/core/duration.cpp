// The implementation of core/duration.hpp. Durations on the command line: "1s", "500ms", "2m",
// "1h", "250us", or a bare number of seconds.
#include "core/duration.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace mpo {

Result<double> parse_duration_s(std::string_view text) {
  const auto bad = [&] {
    return make_error(errc::kDurationSyntax,
                      "'" + std::string(text) +
                          "' is not a duration: write a number with a unit (250us, 500ms, 1s, 2m, 1h) "
                          "or a bare number of seconds");
  };
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, std::chars_format::fixed);
  if (ec != std::errc{} || end == text.data() || !std::isfinite(v) || v < 0) return bad();
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "ms")
    scale = 1e-3;
  else if (unit == "us")
    scale = 1e-6;
  else if (unit == "m")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else
    return bad();
  return v * scale;
}

}  // namespace mpo
