// OTLP bodies: the protobuf wire format on hand-checked bytes, and the OTLP/JSON shape. (The
// Node test tests/node/proxy_otlp.test.mjs decodes the proxy's bodies with the OpenTelemetry
// project's own generated decoders.)
#include "otel/otlp.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "otel/protobuf_writer.hpp"

namespace mpo::otel {
namespace {

std::string hex(const std::string& bytes) {
  return to_hex(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

TEST(ProtoWriter, WritesTheEncodingGuidesExamples) {
  ProtoWriter w;
  w.varint(1, 150);  // protobuf.dev encoding guide: 08 96 01
  EXPECT_EQ(hex(w.data()), "089601");
  ProtoWriter s;
  s.bytes(2, "testing");  // 12 07 74 65 73 74 69 6e 67
  EXPECT_EQ(hex(s.data()), "120774657374696e67");
  ProtoWriter d;
  d.dbl(4, 1.0);  // tag 0x21, little-endian IEEE 754
  EXPECT_EQ(hex(d.data()), "21000000000000f03f");
  ProtoWriter f;
  f.fixed64(7, 1);
  EXPECT_EQ(hex(f.data()), "390100000000000000");
  ProtoWriter n;
  n.varint(3, static_cast<std::uint64_t>(std::int64_t{-1}));  // int64 -1: ten bytes
  EXPECT_EQ(hex(n.data()), "18ffffffffffffffffff01");
  ProtoWriter p;
  const std::uint64_t counts[] = {1, 2};
  p.packed_fixed64(6, counts);
  EXPECT_EQ(hex(p.data()), "321001000000000000000200000000000000");
}

Span sample_span() {
  Span s;
  s.trace_id = *trace_id_from_hex("4bf92f3577b34da6a3ce929d0e0e4736");
  s.span_id = *span_id_from_hex("00f067aa0ba902b7");
  s.parent_span_id = *span_id_from_hex("1111111111111111");
  s.name = "chat sim-model";
  s.start_unix_ns = 1'700'000'000'000'000'000;
  s.end_unix_ns = 1'700'000'000'500'000'000;
  s.attributes = {{"gen_ai.operation.name", std::string("chat")},
                  {"gen_ai.usage.input_tokens", std::int64_t{12}},
                  {"gen_ai.response.time_to_first_chunk", 0.25},
                  {"modelperfobs.stream", true},
                  {"gen_ai.response.finish_reasons", std::vector<std::string>{"stop"}}};
  s.status = StatusCode::kError;
  s.status_message = "upstream_timeout";
  return s;
}

TEST(Otlp, TracesAsJsonHaveOtlpsShape) {
  const Origin origin{{{"service.name", std::string("modelperfobs-proxy")}}, "modelperfobs", "1.2.3"};
  const Span spans[] = {sample_span()};
  const auto doc = boost::json::parse(encode_traces(origin, spans, Encoding::kJson));
  const auto& rs = doc.at("resourceSpans").at(0);
  EXPECT_EQ(rs.at("resource").at("attributes").at(0).at("value").at("stringValue"), "modelperfobs-proxy");
  const auto& ss = rs.at("scopeSpans").at(0);
  EXPECT_EQ(ss.at("scope").at("version"), "1.2.3");
  const auto& span = ss.at("spans").at(0);
  EXPECT_EQ(span.at("traceId"), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span.at("spanId"), "00f067aa0ba902b7");
  EXPECT_EQ(span.at("parentSpanId"), "1111111111111111");
  EXPECT_EQ(span.at("kind"), 3);
  EXPECT_EQ(span.at("startTimeUnixNano"), "1700000000000000000");
  EXPECT_EQ(span.at("status").at("code"), 2);
  const auto& attrs = span.at("attributes").as_array();
  EXPECT_EQ(attrs.at(1).at("value").at("intValue"), "12");
  EXPECT_EQ(attrs.at(2).at("value").at("doubleValue"), 0.25);
  EXPECT_EQ(attrs.at(3).at("value").at("boolValue"), true);
  EXPECT_EQ(attrs.at(4).at("value").at("arrayValue").at("values").at(0).at("stringValue"), "stop");
}

TEST(Otlp, TracesAsProtobufCarryTheIdsAsRawBytes) {
  const Origin origin{{}, "modelperfobs", ""};
  const Span spans[] = {sample_span()};
  const auto body = encode_traces(origin, spans, Encoding::kProtobuf);
  // Span.trace_id (field 1, 16 bytes) and span_id (field 2, 8 bytes), as they appear in the body.
  EXPECT_NE(hex(body).find("0a104bf92f3577b34da6a3ce929d0e0e4736120800f067aa0ba902b7"), std::string::npos)
      << "trace_id/span_id with their tags: " << hex(body);
  EXPECT_NE(body.find("chat sim-model"), std::string::npos);
}

TEST(Otlp, MetricsAsJsonCarryCumulativeHistograms) {
  Metric m{"gen_ai.client.operation.duration", "GenAI operation duration.", "s", {}};
  m.points.push_back({{{"gen_ai.operation.name", std::string("chat")}}, 1, 2, 3, 0.75, {1, 2, 0}, {0.1, 1.0}});
  const Metric ms[] = {m};
  const auto doc = boost::json::parse(encode_metrics(Origin{}, ms, Encoding::kJson));
  const auto& metric = doc.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").at(0);
  EXPECT_EQ(metric.at("unit"), "s");
  const auto& h = metric.at("histogram");
  EXPECT_EQ(h.at("aggregationTemporality"), 2);
  const auto& p = h.at("dataPoints").at(0);
  EXPECT_EQ(p.at("count"), "3");
  EXPECT_EQ(p.at("bucketCounts"), boost::json::parse(R"(["1","2","0"])"));
  const auto& bounds = p.at("explicitBounds").as_array();
  ASSERT_EQ(bounds.size(), 2u);
  EXPECT_EQ(bounds[0].to_number<double>(), 0.1);
  EXPECT_EQ(bounds[1].to_number<double>(), 1.0);
}

TEST(Otlp, CountersAreCumulativeMonotonicSums) {
  Metric m{"gen_ai.client.inference.usage.input_tokens", "Input tokens.", "{token}", {}};
  m.is_counter = true;
  m.sum_points.push_back({{{"gen_ai.token.modality", std::string("unknown")}}, 1, 2, 5000000000});
  const Metric ms[] = {m};
  const auto doc = boost::json::parse(encode_metrics(Origin{}, ms, Encoding::kJson));
  const auto& metric = doc.at("resourceMetrics").at(0).at("scopeMetrics").at(0).at("metrics").at(0);
  EXPECT_FALSE(metric.as_object().contains("histogram"));
  const auto& sum = metric.at("sum");
  EXPECT_EQ(sum.at("aggregationTemporality"), 2);
  EXPECT_EQ(sum.at("isMonotonic"), true);
  EXPECT_EQ(sum.at("dataPoints").at(0).at("asInt"), "5000000000");  // 64-bit integers as strings
  EXPECT_EQ(sum.at("dataPoints").at(0).at("attributes").at(0).at("key"), "gen_ai.token.modality");
}

}  // namespace
}  // namespace mpo::otel
