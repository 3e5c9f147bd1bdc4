#include "net/backend_url.hpp"

#include <gtest/gtest.h>

namespace mpo::net {
namespace {

TEST(BackendUrl, KeepsTheBasePathAndDefaultsThePort) {
  auto b = parse_backend_url("http://127.0.0.1:8000/prefix/");
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->origin, "http://127.0.0.1:8000");
  EXPECT_EQ(b->target_for("/v1/models"), "/prefix/v1/models");
  EXPECT_EQ(b->host_header, "127.0.0.1:8000");
  auto https = parse_backend_url("https://api.example.com");
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(https->host_header, "api.example.com");
  EXPECT_EQ(parse_backend_url("http://[::1]:9/")->origin, "http://[::1]:9");
}

TEST(BackendUrl, RejectsWhatCannotBeABackend) {
  for (const char* bad : {"127.0.0.1:8000", "ftp://x", "http://", "http://user:pw@x", "http://x?q=1", "http://x:0"}) {
    EXPECT_FALSE(parse_backend_url(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace mpo::net

namespace mpo::net {
namespace {

TEST(OpenAiBaseHint, SaysWhatTheUrlLikelyMeantUnlessItEndsInV1) {
  EXPECT_EQ(openai_base_hint(*parse_backend_url("http://127.0.0.1:8000")), " (did you mean http://127.0.0.1:8000/v1?)");
  EXPECT_EQ(openai_base_hint(*parse_backend_url("http://h:9/openai")), " (did you mean http://h:9/openai/v1?)");
  EXPECT_EQ(openai_base_hint(*parse_backend_url("http://127.0.0.1:8000/v1")), "");
  EXPECT_EQ(openai_base_hint(*parse_backend_url("https://api.example.com/openai/v1/")), "");
}

}  // namespace
}  // namespace mpo::net
