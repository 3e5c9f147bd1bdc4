// The pure half of the load generator's measurement (loadgen/measure.hpp): fak's sample and the
// ledger outcome from what the driver saw, without sockets.
#include "loadgen/measure.hpp"

#include <gtest/gtest.h>

namespace mpo::loadgen {
namespace {

const char* kEvents[] = {
    "data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" a\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" c\"},\"finish_reason\":\"length\"}]}\n\n",
};
const char* kUsage =
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\n";

// The role prelude at 1 ms, content at 10, 30 and 60 ms after a send at t = 1,000,000 us.
openai::StreamTap streamed(bool usage, bool done = true) {
  openai::StreamTap tap(true);
  const std::int64_t t0 = 1'000'000;
  tap.feed(kEvents[0], t0 + 1000);
  tap.feed(kEvents[1], t0 + 10'000);
  tap.feed(kEvents[2], t0 + 30'000);
  tap.feed(kEvents[3], t0 + 60'000);
  if (usage) tap.feed(kUsage, t0 + 61'000);
  if (done) tap.feed("data: [DONE]\n\n", t0 + 61'000);
  tap.finish(done);
  return tap;
}

Response ok_response() {
  Response r;
  r.sent_us = 1'000'000;
  r.end_us = 1'070'000;
  r.http_status = 200;
  r.sse = true;
  return r;
}

TEST(Measure, TtftAtTheFirstContentItlBetweenContentTpotFromUsage) {
  Sample s;
  ledger::Observation o;
  record_response(s, o, streamed(true), ok_response());
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.stream_mode, "sse");
  EXPECT_EQ(s.ttft_ms, 10.0);  // not the role prelude at 1 ms
  EXPECT_EQ(s.itl_ms, (std::vector<double>{20.0, 30.0}));
  EXPECT_EQ(s.output_tokens_exact, 3);
  EXPECT_EQ(s.output_token_count_basis, "usage.completion_tokens");
  EXPECT_EQ(s.tpot_ms, 30.0);  // (70 - 10) / (3 - 1)
  EXPECT_EQ(s.response_model, "m");
  EXPECT_EQ(o.outcome, "ok");
  EXPECT_EQ(o.http_status, 200);
  EXPECT_EQ(o.completion_tokens, 3);
}

TEST(Measure, WithoutUsageTheBasisIsContentEventsThenBytes) {
  Sample s;
  ledger::Observation o;
  record_response(s, o, streamed(false), ok_response());
  EXPECT_FALSE(s.output_tokens_exact);
  EXPECT_EQ(s.output_token_estimate, 3);
  EXPECT_EQ(s.output_token_count_basis, "stream_content_events");

  openai::StreamTap body(false);
  body.feed(std::string(40, 'x'), 1);
  body.finish(true);
  Sample b;
  ledger::Observation bo;
  auto r = ok_response();
  r.sse = false;
  record_response(b, bo, std::move(body), r);
  EXPECT_EQ(b.stream_mode, "non_sse");
  EXPECT_EQ(b.output_token_estimate, 10);
  EXPECT_EQ(b.output_token_count_basis, "estimated_content_tokens");
  EXPECT_FALSE(b.ttft_ms);
}

TEST(Measure, ABodyThatEndsEarlyFailsTheSampleAndNamesHowItEnded) {
  const std::pair<BodyEnd, const char*> cases[] = {{BodyEnd::kReset, "upstream_reset"},
                                                   {BodyEnd::kTruncated, "stream_truncated"},
                                                   {BodyEnd::kTimeout, "upstream_timeout"}};
  for (const auto& [end, outcome] : cases) {
    Sample s;
    ledger::Observation o;
    auto r = ok_response();
    r.body_end = end;
    r.body_error = "Connection reset by peer";
    record_response(s, o, streamed(false, false), r);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.error_class, end == BodyEnd::kTimeout ? "timeout" : "stream_read");
    EXPECT_EQ(s.error, "the response ended early: Connection reset by peer");
    EXPECT_EQ(o.outcome, outcome);
    EXPECT_EQ(o.error_type, outcome);
    EXPECT_EQ(s.ttft_ms, 10.0);  // what was read still counts
  }
}

TEST(Measure, AnErrorStatusCarriesTheBodyAndAMalformedStreamIsOkForFakButNotForTheLedger) {
  Sample s;
  ledger::Observation o;
  openai::StreamTap tap(false);
  tap.feed(R"({"error":{"message":"slow down","type":"rate_limit"}})", 1);
  tap.finish(true);
  auto r = ok_response();
  r.sse = false;
  r.http_status = 429;
  r.error_body = "{\"error\":{\"message\":\"slow down\"}}\n\n";
  record_response(s, o, std::move(tap), r);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error_class, "http_status");
  EXPECT_EQ(s.error, "{\"error\":{\"message\":\"slow down\"}}");
  EXPECT_EQ(o.outcome, "http_error");

  Sample m;
  ledger::Observation mo;
  openai::StreamTap bad(true);
  bad.feed(kEvents[1], 1'010'000);
  bad.feed("garbage line\n\n", 1'020'000);
  bad.feed("data: [DONE]\n\n", 1'030'000);
  bad.finish(true);
  record_response(m, mo, std::move(bad), ok_response());
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(mo.outcome, "malformed_stream");
}

TEST(Measure, FailuresBeforeAResponseHead) {
  const struct {
    RequestFailure f;
    const char* error_class;
    const char* outcome;
  } cases[] = {
      {{"connect", false, "cannot connect to http://h:1: Connection refused"}, "transport", "upstream_unreachable"},
      {{"header", false, "end of stream"}, "transport", "upstream_reset"},
      {{"header", true, "timed out"}, "timeout", "upstream_timeout"}};
  for (const auto& c : cases) {
    Sample s;
    ledger::Observation o;
    record_failure(s, o, c.f);
    EXPECT_FALSE(s.ok);
    EXPECT_EQ(s.error_class, c.error_class);
    EXPECT_EQ(s.error, c.f.stage + ": " + c.f.message);
    EXPECT_EQ(o.outcome, c.outcome);
    EXPECT_EQ(o.error_message, s.error);
  }
}

// A Messages stream (invented, shaped like llama.cpp's) cut after its deltas: the body's framing
// ended properly, but message_stop never came.
TEST(Measure, AMessagesStreamWithoutMessageStopIsTruncatedAndAnErrorEventIsAStreamError) {
  openai::StreamTap cut(true);
  cut.feed(
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"model\":\"m\","
      "\"usage\":{\"input_tokens\":4,\"output_tokens\":0}}}\n\n",
      1'001'000);
  cut.feed(
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
      "\"text_delta\",\"text\":\"hi\"}}\n\n",
      1'010'000);
  cut.finish(true);
  Sample s;
  ledger::Observation o;
  record_response(s, o, std::move(cut), ok_response());
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.error_class, "stream_read");
  EXPECT_EQ(o.outcome, "stream_truncated");
  EXPECT_EQ(s.ttft_ms, 10.0);
  EXPECT_EQ(o.prompt_tokens, 4);

  openai::StreamTap failed(true);
  failed.feed(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n",
      1'001'000);
  failed.finish(true);
  Sample s2;
  ledger::Observation o2;
  record_response(s2, o2, std::move(failed), ok_response());
  EXPECT_FALSE(s2.ok);
  EXPECT_EQ(o2.outcome, "stream_error");
  EXPECT_EQ(o2.error_type, "overloaded_error");
  EXPECT_NE(s2.error.find("busy"), std::string::npos);
}

}  // namespace
}  // namespace mpo::loadgen
