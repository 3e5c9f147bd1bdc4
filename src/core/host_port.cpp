// The implementation of core/host_port.hpp. "HOST:PORT" as given to --listen: IPv4
// "127.0.0.1:8000", IPv6 "[::1]:8000", "localhost:0".
#include "core/host_port.hpp"

#include <fmt/format.h>

#include <charconv>

namespace mpo {

Result<HostPort> parse_host_port(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return make_error(errc::kAddressSyntax, fmt::format("invalid address '{}': {} (expected HOST:PORT, "
                                                        "e.g. 127.0.0.1:8000 or [::1]:8000)",
                                                        text, why));
  };
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("missing ':PORT'");
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return bad("an IPv6 host must be in brackets");
  }
  if (host.empty()) return bad("empty host");
  unsigned value = 0;
  const auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || p != port.data() + port.size() || value > 65535) {
    return bad("port must be a number from 0 to 65535");
  }
  if (host == "localhost") host = "127.0.0.1";
  return HostPort{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace mpo
