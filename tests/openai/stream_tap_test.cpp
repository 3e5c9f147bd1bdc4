#include "openai/stream_tap.hpp"

#include <gtest/gtest.h>

namespace mpo::openai {
namespace {

const char* kStream =
    "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"},\"finish_reason\":\"length\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n"
    "data: [DONE]\n\n";

TEST(StreamTap, FirstContentNotRolePreludeAndGapsBetweenContentEvents) {
  StreamTap tap(true);
  const std::string s = kStream;
  const auto e1 = s.find("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"");
  const auto e2 = s.find("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"");
  tap.feed(s.substr(0, e1), 1000);       // role-only prelude at t=1 ms
  tap.feed(s.substr(e1, e2 - e1), 5000);  // first content at t=5 ms
  tap.feed(s.substr(e2), 9000);           // second at 9 ms, usage, [DONE]
  tap.finish(true);
  EXPECT_EQ(tap.first_content_us(), 5000);
  EXPECT_EQ(tap.content_events(), 2);
  ASSERT_EQ(tap.gaps_ms().size(), 1u);
  EXPECT_DOUBLE_EQ(tap.gaps_ms()[0], 4.0);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_EQ(tap.prompt_tokens(), 4);
  EXPECT_EQ(tap.finish_reason(), "length");
  EXPECT_EQ(tap.id(), "c1");
  EXPECT_TRUE(tap.saw_done());
  EXPECT_FALSE(tap.malformed());
}

TEST(StreamTap, WithoutUsageCountsAreEstimatedFromContentEvents) {
  StreamTap tap(true);
  tap.feed("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"y\"}}]}\n\n", 1);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kEstimated);
  EXPECT_EQ(tap.completion_tokens(), 2);
  EXPECT_FALSE(tap.prompt_tokens().has_value());
}

TEST(StreamTap, GarbageInAStreamIsMalformed) {
  StreamTap tap(true);
  tap.feed("data: {not json\n\n", 1);
  tap.finish(true);
  EXPECT_TRUE(tap.malformed());
  EXPECT_EQ(tap.token_source(), TokenSource::kNone);
}

TEST(StreamTap, NonStreamedBodyIsParsedWholeAtTheEnd) {
  StreamTap tap(false);
  const std::string body = R"({"id":"x","model":"m","choices":[{"message":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4},"timings":{"predicted_n":1,"prompt_n":3}})";
  tap.feed(body.substr(0, 10), 1);
  tap.feed(body.substr(10), 2);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kUsage);
  EXPECT_EQ(tap.completion_tokens(), 1);
  EXPECT_FALSE(tap.first_content_us().has_value());
  EXPECT_EQ(tap.server_timings(), R"({"predicted_n":1,"prompt_n":3})");
}

TEST(StreamTap, LlamaCppTimingsAreATokenSourceWhenThereIsNoUsage) {
  StreamTap tap(false);
  tap.feed(R"({"choices":[{"message":{"content":"hi"}}],"timings":{"predicted_n":7,"prompt_n":3}})", 1);
  tap.finish(true);
  EXPECT_EQ(tap.token_source(), TokenSource::kServerTimings);
  EXPECT_EQ(tap.completion_tokens(), 7);
  EXPECT_EQ(tap.prompt_tokens(), 3);
}

}  // namespace
}  // namespace mpo::openai
