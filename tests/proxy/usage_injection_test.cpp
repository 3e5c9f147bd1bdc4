#include "proxy/usage_injection.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cctype>

#include "proxy/correlation.hpp"

namespace mpo::proxy {
namespace {

TEST(InjectIncludeUsage, AddsStreamOptionsKeepingEveryOtherByte) {
  const std::string body = R"({"model":"m","temperature":0.7000000000000001,"stream":true,"messages":[]})";
  auto out = inject_include_usage(body);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(
      *out,
      R"({"stream_options":{"include_usage":true},"model":"m","temperature":0.7000000000000001,"stream":true,"messages":[]})");
}

TEST(InjectIncludeUsage, AddsToAnExistingStreamOptionsObject) {
  auto out = inject_include_usage(
      R"({"stream":true, "stream_options" : {"continuous_usage_stats":true},"x":"{\"stream_options\":{"})");
  ASSERT_TRUE(out.has_value());
  auto v = boost::json::parse(*out).as_object();
  EXPECT_EQ(v["stream_options"].as_object()["include_usage"], true);
  EXPECT_EQ(v["stream_options"].as_object()["continuous_usage_stats"], true);
  EXPECT_EQ(v["x"], "{\"stream_options\":{");
  EXPECT_TRUE(inject_include_usage(R"({"stream_options":{}})").has_value());
  EXPECT_EQ(boost::json::parse(*inject_include_usage("{}")).as_object()["stream_options"].as_object()["include_usage"],
            true);
}

TEST(InjectIncludeUsage, LeavesAloneWhatAlreadyAsksOrIsNotAnObject) {
  EXPECT_FALSE(inject_include_usage(R"({"stream_options":{"include_usage":true}})").has_value());
  EXPECT_FALSE(inject_include_usage(R"({"stream_options":{"include_usage":false}})").has_value());
  EXPECT_FALSE(inject_include_usage(R"({"stream_options":null})").has_value());
  EXPECT_FALSE(inject_include_usage("[1]").has_value());
  EXPECT_FALSE(inject_include_usage("{broken").has_value());
}

// The stream cut in two at every byte gives `expected`, one usage-only event stripped.
void expect_one_stripped_at_every_cut(const std::string& stream, const std::string& expected) {
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    UsageStripper s;
    std::string out = s.filter(std::string_view(stream).substr(0, cut), false);
    out += s.filter(std::string_view(stream).substr(cut), true);
    EXPECT_EQ(out, expected) << cut;
    EXPECT_EQ(s.stripped(), 1);
  }
}

TEST(UsageStripper, DropsOnlyUsageOnlyEventsWhateverTheSplit) {
  const std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\r\n\r\n"
      "data: [DONE]\r\n\r\n";
  const std::string expected = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
  expect_one_stripped_at_every_cut(stream, expected);
}

// llama.cpp b10309 asked for usage puts its `timings` on the usage chunk (its capture), which a
// client that did not ask for usage would otherwise get on the finish chunk: the chunk reaches the
// client without its usage, the timings kept, whatever the split.
TEST(UsageStripper, ALlamaCppUsageChunksTimingsReachTheClientWithoutItsUsage) {
  const std::string usage_chunk =
      R"(data: {"choices":[],"created":1,"id":"chatcmpl-1","object":"chat.completion.chunk","usage":)"
      R"({"completion_tokens":6,"prompt_tokens":10,"prompt_tokens_details":{"cached_tokens":9}},)"
      R"("timings":{"cache_n":9,"prompt_n":1,"predicted_n":6}})";
  const std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" + usage_chunk + "\n\ndata: [DONE]\n\n";
  const std::string expected =
      "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
      R"(data: {"choices":[],"created":1,"id":"chatcmpl-1","object":"chat.completion.chunk",)"
      R"("timings":{"cache_n":9,"prompt_n":1,"predicted_n":6}})"
      "\n\ndata: [DONE]\n\n";
  expect_one_stripped_at_every_cut(stream, expected);
  // The usage last, after the timings: the comma before it goes.
  UsageStripper last;
  EXPECT_EQ(last.filter("data: {\"choices\":[],\"timings\":{\"a\":1}, \"usage\":{\"total_tokens\":2}}\n\n", true),
            "data: {\"choices\":[],\"timings\":{\"a\":1}}\n\n");
}

TEST(Correlation, AdoptsValidIdsAndReplacesOthers) {
  Uuid7Generator gen(1);
  EXPECT_EQ(adopt_or_new_id("agent-7.step:3_x", gen, 1), "agent-7.step:3_x");
  EXPECT_TRUE(is_uuid_v7(adopt_or_new_id("has space", gen, 1)));
  EXPECT_TRUE(is_uuid_v7(adopt_or_new_id("", gen, 1)));
  EXPECT_TRUE(is_uuid_v7(adopt_or_new_id(std::string(129, 'a'), gen, 1)));
  EXPECT_EQ(adopt_or_new_id(std::string(128, 'a'), gen, 1), std::string(128, 'a'));
}

// Contract 2's alphabet, byte by byte: each of the 256 values alone, and at either end of an
// otherwise valid id (the check reads every byte, not the first or last few).
TEST(Correlation, AnIdIsValidExactlyWhenEveryByteIsALetterDigitOrOneOfFourMarks) {
  for (int c = 0; c < 256; ++c) {
    const char ch = static_cast<char>(c);
    const bool allowed = std::isalnum(c) != 0 || ch == '.' || ch == '_' || ch == ':' || ch == '-';
    EXPECT_EQ(is_valid_observation_id(std::string(1, ch)), allowed) << c;
    EXPECT_EQ(is_valid_observation_id("agent-7" + std::string(1, ch)), allowed) << c;
    EXPECT_EQ(is_valid_observation_id(std::string(1, ch) + "agent-7" + std::string(60, 'x')), allowed) << c;
  }
}

}  // namespace
}  // namespace mpo::proxy
