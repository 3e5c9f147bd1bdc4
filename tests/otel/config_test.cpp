// The export configuration from flags and the standard OTEL_* variables, and the retry rule.
#include "otel/config.hpp"

#include <gtest/gtest.h>

#include <map>

namespace mpo::otel {
namespace {

EnvLookup env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string resource(const ExportConfig& c, std::string_view key) {
  for (const auto& a : c.resource) {
    if (a.key == key) return std::get<std::string>(a.value);
  }
  return "(absent)";
}

TEST(ExportConfig, NothingConfiguredExportsNothing) {
  auto c = resolve_export_config({}, env({}), "1.0", "host:1");
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->enabled());
}

TEST(ExportConfig, TheBaseEndpointGetsEachSignalsPath) {
  auto c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}), "1.0", "h:1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->traces_url, "http://collector:4318/v1/traces");
  EXPECT_EQ(c->metrics_url, "http://collector:4318/v1/metrics");
  EXPECT_EQ(c->encoding, Encoding::kProtobuf);
  c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/otlp/"}}), "1.0", "h:1");
  EXPECT_EQ(c->traces_url, "http://collector:4318/otlp/v1/traces");
}

TEST(ExportConfig, ASignalsOwnEndpointIsUsedAsItIs) {
  auto c = resolve_export_config({},
                                 env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                                      {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9999/custom"},
                                      {"OTEL_METRICS_EXPORTER", "none"}}),
                                 "1.0", "h:1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->traces_url, "http://b:9999/custom");
  EXPECT_EQ(c->metrics_url, "");
}

TEST(ExportConfig, TheFlagWinsOverTheEnvironment) {
  ExportFlags f;
  f.endpoint = "http://127.0.0.1:4318";
  f.protocol = "http/json";
  f.metrics_interval_s = 2;
  auto c = resolve_export_config(f,
                                 env({{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:1/x"},
                                      {"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"},
                                      {"OTEL_METRIC_EXPORT_INTERVAL", "60000"}}),
                                 "1.0", "h:1");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->traces_url, "http://127.0.0.1:4318/v1/traces");
  EXPECT_EQ(c->encoding, Encoding::kJson);
  EXPECT_EQ(c->metrics_interval_s, 2);
}

TEST(ExportConfig, HeadersResourceAndTimings) {
  auto c = resolve_export_config({},
                                 env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                                      {"OTEL_EXPORTER_OTLP_HEADERS", "api-key=s%3Dcret, x-team = infra"},
                                      {"OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=prod,service.name=old"},
                                      {"OTEL_SERVICE_NAME", "gateway"},
                                      {"OTEL_METRIC_EXPORT_INTERVAL", "500"},
                                      {"OTEL_EXPORTER_OTLP_TIMEOUT", "2500"},
                                      {"OTEL_BSP_MAX_QUEUE_SIZE", "100"},
                                      {"OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1000"}}),
                                 "1.0", "h:1");
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[0], (std::pair<std::string, std::string>{"api-key", "s=cret"}));
  EXPECT_EQ(c->headers[1], (std::pair<std::string, std::string>{"x-team", "infra"}));
  EXPECT_EQ(c->resource.front().key, "service.name");
  EXPECT_EQ(resource(*c, "service.name"), "gateway");
  EXPECT_EQ(resource(*c, "deployment.environment"), "prod");
  EXPECT_EQ(resource(*c, "service.version"), "1.0");
  EXPECT_EQ(resource(*c, "service.instance.id"), "h:1");
  EXPECT_DOUBLE_EQ(c->metrics_interval_s, 0.5);
  EXPECT_DOUBLE_EQ(c->timeout_s, 2.5);
  EXPECT_EQ(c->max_queue, 100u);
  EXPECT_EQ(c->max_batch, 100u);  // never above the queue
}

TEST(ExportConfig, DefaultServiceNameAndDisabledSdk) {
  auto c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"}}), "1.0", "h:1");
  EXPECT_EQ(resource(*c, "service.name"), "modelperfobs-proxy");
  c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"}, {"OTEL_SDK_DISABLED", "true"}}),
                            "1.0", "h:1");
  EXPECT_FALSE(c->enabled());
}

TEST(ExportConfig, ErrorsNameTheVariable) {
  auto c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}), "1", "h");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("4318"), std::string::npos) << c.error().message;
  c = resolve_export_config({}, env({{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}}), "1", "h");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("OTEL_EXPORTER_OTLP_HEADERS"), std::string::npos);
  c = resolve_export_config({}, env({{"OTEL_METRIC_EXPORT_INTERVAL", "soon"}}), "1", "h");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("OTEL_METRIC_EXPORT_INTERVAL"), std::string::npos);
  EXPECT_FALSE(parse_key_values("a=%4", "X"));
}

TEST(RetryPolicy, RetryableStatusesAndDelays) {
  for (int s : {429, 502, 503, 504}) EXPECT_TRUE(is_retryable_status(s)) << s;
  for (int s : {200, 400, 401, 404, 413, 500}) EXPECT_FALSE(is_retryable_status(s)) << s;
  RetryPolicy p;
  EXPECT_EQ(retry_delay_s(p, 1, std::nullopt), 1.0);
  EXPECT_EQ(retry_delay_s(p, 2, std::nullopt), 2.0);
  EXPECT_EQ(retry_delay_s(p, 4, std::nullopt), 8.0);
  EXPECT_EQ(retry_delay_s(p, 5, std::nullopt), std::nullopt);  // five attempts in all
  EXPECT_EQ(retry_delay_s(p, 1, "3"), 3.0);
  EXPECT_EQ(retry_delay_s(p, 1, "3600"), 60.0);                          // capped
  EXPECT_EQ(retry_delay_s(p, 2, "Wed, 21 Oct 2026 07:28:00 GMT"), 2.0);  // a date: backoff
}

}  // namespace
}  // namespace mpo::otel
