// W3C Trace Context: the traceparent rules (https://www.w3.org/TR/trace-context/ section 3.2)
// and what the proxy does with a request's trace headers.
#include "otel/trace_context.hpp"

#include <gtest/gtest.h>

namespace mpo::otel {
namespace {

constexpr const char* kValid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceParent, ReadsTheSpecificationsExample) {
  auto tp = parse_traceparent(kValid);
  ASSERT_TRUE(tp) << tp.error().message;
  EXPECT_EQ(to_hex(tp->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(to_hex(tp->parent_id), "00f067aa0ba902b7");
  EXPECT_EQ(tp->flags, 0x01);
  EXPECT_EQ(format_traceparent(tp->trace_id, tp->parent_id, tp->flags), kValid);
}

TEST(TraceParent, RefusesWhatTheSpecificationRefuses) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",         // short
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",  // v00 with more
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version ff
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",        // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",        // zero parent id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",        // uppercase
           "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // separator
           "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",        // version not hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",        // flags not hex
       }) {
    EXPECT_FALSE(parse_traceparent(bad)) << bad;
  }
}

TEST(TraceParent, ALaterVersionIsReadAsVersionZero) {
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_TRUE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"));
  EXPECT_FALSE(parse_traceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01more"));
}

TEST(RequestTrace, ContinuesTheClientsTraceWithANewSpan) {
  IdGenerator ids(7);
  const auto t = trace_for_request(std::string_view(kValid), ids);
  EXPECT_TRUE(t.continued);
  EXPECT_EQ(to_hex(t.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  ASSERT_TRUE(t.parent_id);
  EXPECT_EQ(to_hex(*t.parent_id), "00f067aa0ba902b7");
  EXPECT_NE(t.span_id, *t.parent_id);
  EXPECT_TRUE(t.sampled());
  // Upstream: the same trace, the proxy's span as the parent.
  EXPECT_EQ(t.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-" + to_hex(t.span_id) + "-01");
}

TEST(RequestTrace, KeepsTheClientsSamplingDecision) {
  IdGenerator ids(7);
  const auto t = trace_for_request(std::string_view("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), ids);
  EXPECT_FALSE(t.sampled());
  EXPECT_TRUE(t.traceparent().ends_with("-00"));
}

TEST(RequestTrace, StartsASampledTraceWhenTheClientSentNoneOrGarbage) {
  IdGenerator ids(7);
  for (std::optional<std::string_view> header :
       {std::optional<std::string_view>(), std::optional<std::string_view>("junk")}) {
    const auto t = trace_for_request(header, ids);
    EXPECT_FALSE(t.continued);
    EXPECT_FALSE(t.parent_id);
    EXPECT_TRUE(t.sampled());
    auto back = parse_traceparent(t.traceparent());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->trace_id, t.trace_id);
  }
}

TEST(IdGenerator, IdsAreDistinctAndNeverZero) {
  IdGenerator ids;
  const auto a = ids.trace_id();
  const auto b = ids.trace_id();
  EXPECT_NE(a, b);
  EXPECT_NE(a, TraceId{});
  EXPECT_NE(ids.span_id(), SpanId{});
}

TEST(Hex, RoundTripsAndRefusesWrongLengths) {
  EXPECT_EQ(to_hex(*trace_id_from_hex("4BF92F3577B34DA6A3CE929D0E0E4736")), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_FALSE(trace_id_from_hex("4bf9"));
  EXPECT_FALSE(span_id_from_hex("00f067aa0ba902bz"));
  EXPECT_EQ(to_hex(*span_id_from_hex("00f067aa0ba902b7")), "00f067aa0ba902b7");
}

}  // namespace
}  // namespace mpo::otel
