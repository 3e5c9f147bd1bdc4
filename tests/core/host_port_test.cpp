#include "core/host_port.hpp"

#include <gtest/gtest.h>

namespace mpo {
namespace {

TEST(HostPort, ParsesIpv4Ipv6AndLocalhost) {
  EXPECT_EQ(parse_host_port("127.0.0.1:8000")->port, 8000);
  EXPECT_EQ(parse_host_port("[::1]:0")->host, "::1");
  EXPECT_EQ(parse_host_port("localhost:9")->host, "127.0.0.1");
}

TEST(HostPort, RejectsWhatCannotBeAListenAddress) {
  for (const char* bad : {"8000", ":8000", "127.0.0.1:", "127.0.0.1:65536", "::1:80", "host:8o"}) {
    EXPECT_FALSE(parse_host_port(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace mpo
