#include "proxy/outcome.hpp"

#include <gtest/gtest.h>

namespace mpo::proxy {
namespace {

RelayEnd stream_end() {
  RelayEnd e;
  e.http_status = 200;
  e.sse = true;
  return e;
}

TEST(RelayOutcome, AClientLeavingAfterTheTerminalEventGotEverythingAndIsOk) {
  auto e = stream_end();
  e.client_left = true;
  e.terminal_forwarded = true;
  EXPECT_EQ(relay_outcome(e), "ok");
  // What the backend's connection did afterwards (the proxy closed it when the client left, or
  // llama.cpp closed it) is not a failure of the exchange.
  for (auto u : {UpstreamEnd::kReset, UpstreamEnd::kTruncated, UpstreamEnd::kTimeout}) {
    e.upstream = u;
    EXPECT_EQ(relay_outcome(e), "ok");
  }
  e.malformed = true;
  EXPECT_EQ(relay_outcome(e), "malformed_stream");
  e.http_status = 500;
  EXPECT_EQ(relay_outcome(e), "http_error");
}

TEST(RelayOutcome, AClientLeavingBeforeTheTerminalEventIsADisconnectWhateverTheBackendDid) {
  auto e = stream_end();
  e.client_left = true;
  EXPECT_EQ(relay_outcome(e), "client_disconnected");
  e.upstream = UpstreamEnd::kTruncated;
  EXPECT_EQ(relay_outcome(e), "client_disconnected");
}

TEST(RelayOutcome, UpstreamFailuresComeBeforeStatusAndStreamShape) {
  auto e = stream_end();
  e.upstream = UpstreamEnd::kTimeout;
  EXPECT_EQ(relay_outcome(e), "upstream_timeout");
  e.upstream = UpstreamEnd::kReset;
  EXPECT_EQ(relay_outcome(e), "upstream_reset");
  e.upstream = UpstreamEnd::kTruncated;
  e.terminal_forwarded = true;  // [DONE] came, then the body's framing was cut: still truncated
  EXPECT_EQ(relay_outcome(e), "stream_truncated");
  EXPECT_TRUE(is_upstream_failure(relay_outcome(e)));
  EXPECT_FALSE(is_upstream_failure("ok"));
}

TEST(RelayOutcome, CompleteResponsesByStatusAndShape) {
  auto e = stream_end();
  EXPECT_EQ(relay_outcome(e), "ok");
  e.malformed = true;
  EXPECT_EQ(relay_outcome(e), "malformed_stream");
  e.sse = false;  // only an event stream can be malformed
  EXPECT_EQ(relay_outcome(e), "ok");
  e.http_status = 429;
  EXPECT_EQ(relay_outcome(e), "http_error");
}

TEST(RelayOutcome, AResponsesOrMessagesStreamWithoutItsTerminalEventWasCutShort) {
  auto e = stream_end();
  e.terminal_required = true;
  EXPECT_EQ(relay_outcome(e), "stream_truncated");  // framing complete, response.completed missing
  EXPECT_TRUE(missing_terminal_event(e));
  e.terminal_seen = true;
  EXPECT_EQ(relay_outcome(e), "ok");
  e.terminal_seen = false;
  e.terminal_required = false;  // chat: [DONE] is customary, not required
  EXPECT_EQ(relay_outcome(e), "ok");
  e.terminal_required = true;
  e.client_left = true;  // the client left before the end: its doing, not the backend's
  EXPECT_EQ(relay_outcome(e), "client_disconnected");
}

TEST(RelayOutcome, AnErrorEventInsideA2xxStreamIsAStreamError) {
  auto e = stream_end();
  e.error_event = true;
  EXPECT_EQ(relay_outcome(e), "stream_error");
  e.terminal_required = true;  // Anthropic's error event ends its stream without message_stop
  EXPECT_EQ(relay_outcome(e), "stream_error");
  e.terminal_seen = true;  // response.failed is terminal and carries the error
  EXPECT_EQ(relay_outcome(e), "stream_error");
  e.http_status = 500;
  EXPECT_EQ(relay_outcome(e), "http_error");
  e.http_status = 200;
  e.upstream = UpstreamEnd::kReset;
  EXPECT_EQ(relay_outcome(e), "upstream_reset");
}

}  // namespace
}  // namespace mpo::proxy
