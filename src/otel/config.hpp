// Where and how the proxy exports OTLP: its flags and the standard OTEL_* environment variables
// resolved into one configuration (docs/OTEL.md "Configuration"), and the exporter's retry rule.
// Pure: the environment comes in as a lookup function.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "otel/otlp.hpp"

namespace mpo::otel {

using Headers = std::vector<std::pair<std::string, std::string>>;
using EnvLookup = std::function<std::optional<std::string>(std::string_view)>;

// What the command line said ("" / nullopt: not given).
struct ExportFlags {
  std::string endpoint;                      // --otlp-endpoint: base URL, /v1/traces and /v1/metrics appended
  std::string protocol;                      // --otlp-protocol: http/protobuf | http/json
  std::optional<double> metrics_interval_s;  // --otlp-metrics-interval
  std::string ca_file;                       // --otlp-ca
  std::string traces_endpoint;  // a traces URL used as it is (simulate's --otlp-traces-endpoint, as vLLM's)
  bool metrics = true;          // false: no metric export whatever the environment says
  std::string default_service_name = "modelperfobs-proxy";
};

struct ExportConfig {
  std::string traces_url;   // "" = no trace export
  std::string metrics_url;  // "" = no metric export
  Encoding encoding = Encoding::kProtobuf;
  Headers headers;  // sent with every export request (the traces' and the metrics' own merged in)
  Headers traces_headers, metrics_headers;
  std::string ca_file;
  Attributes resource;             // service.name first
  double metrics_interval_s = 60;  // OTEL_METRIC_EXPORT_INTERVAL (ms) or the flag
  double timeout_s = 10;           // OTEL_EXPORTER_OTLP_TIMEOUT (ms): one export request
  double batch_delay_s = 1;        // OTEL_BSP_SCHEDULE_DELAY (ms): longest wait before a batch goes
  std::size_t max_queue = 2048;    // OTEL_BSP_MAX_QUEUE_SIZE: spans waiting; more are dropped
  std::size_t max_batch = 512;     // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  bool enabled() const { return !traces_url.empty() || !metrics_url.empty(); }
};

// `service_version`, `instance`: service.version and service.instance.id unless the environment
// sets them. Errors name the variable or flag and what it should hold.
Result<ExportConfig> resolve_export_config(const ExportFlags& flags, const EnvLookup& env,
                                           std::string_view service_version, std::string_view instance);

// "k1=v1,k2=v2" with percent-encoded values (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES).
Result<Headers> parse_key_values(std::string_view text, std::string_view what);

// The exporter's retry rule (OTLP/HTTP: 429, 502, 503 and 504 are retryable, and so is a failed
// connection). nullopt: give up. `attempt` counts from 1 (the attempt that just failed).
struct RetryPolicy {
  int max_attempts = 5;
  double initial_backoff_s = 1;
  double max_backoff_s = 30;
  double max_retry_after_s = 60;
};
bool is_retryable_status(int status);
// The wait before the next attempt: the server's Retry-After (delay-seconds) when it sent one,
// capped, else exponential backoff. nullopt once `attempt` reaches max_attempts.
std::optional<double> retry_delay_s(const RetryPolicy& p, int attempt, std::optional<std::string_view> retry_after);

}  // namespace mpo::otel
