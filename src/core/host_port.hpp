// "HOST:PORT" as given to --listen: IPv4 "127.0.0.1:8000", IPv6 "[::1]:8000", "localhost:0".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

Result<HostPort> parse_host_port(std::string_view text);

}  // namespace mpo
