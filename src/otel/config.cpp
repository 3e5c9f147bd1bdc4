// The implementation of otel/config.hpp. Where and how the proxy exports OTLP: its flags and the
// standard OTEL_* environment variables resolved into one configuration (docs/OTEL.md
// "Configuration"), and the exporter's retry rule.
#include "otel/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/text.hpp"

namespace mpo::otel {
namespace {

std::string_view trim(std::string_view s) { return trim_blanks(s); }

Result<std::string> percent_decode(std::string_view s, std::string_view what) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out.push_back(s[i]);
      continue;
    }
    unsigned v = 0;
    if (i + 2 >= s.size()) return make_error(errc::kOtelConfig, fmt::format("{}: a '%' without two hex digits", what));
    auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
    if (ec != std::errc() || p != s.data() + i + 3) {
      return make_error(errc::kOtelConfig, fmt::format("{}: a '%' without two hex digits", what));
    }
    out.push_back(static_cast<char>(v));
    i += 2;
  }
  return out;
}

// The signal's URL: its own variable as is, else the base with v1/<signal> appended.
std::string signal_url(std::string_view base, std::string_view signal) {
  std::string url(base);
  if (url.empty() || url.back() != '/') url.push_back('/');
  return url + "v1/" + std::string(signal);
}

// The variable `name`, a positive number (`what` says which kind), divided by `divisor` into
// `field`; the field keeps its value when the variable is unset or blank.
template <class T>
Status read_positive(const EnvLookup& env, std::string_view name, std::string_view what, T divisor, T& field) {
  auto v = env(name);
  if (!v || trim(*v).empty()) return Ok{};
  const auto t = trim(*v);
  T n = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
  if (ec != std::errc() || p != t.data() + t.size() || !(n > 0) || !std::isfinite(static_cast<double>(n))) {
    return make_error(errc::kOtelConfig, fmt::format("{}={}: expected {}", name, *v, what));
  }
  field = n / divisor;
  return Ok{};
}

Status read_seconds_from_ms(const EnvLookup& env, std::string_view name, double& seconds) {
  return read_positive(env, name, "a positive number of milliseconds", 1000.0, seconds);
}

Status read_count(const EnvLookup& env, std::string_view name, std::size_t& n) {
  return read_positive<std::size_t>(env, name, "a positive whole number", 1, n);
}

bool is_off(const EnvLookup& env, std::string_view name) {
  auto v = env(name);
  return v && trim(*v) == "none";
}

}  // namespace

Result<Headers> parse_key_values(std::string_view text, std::string_view what) {
  Headers out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const auto item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos || trim(item.substr(0, eq)).empty()) {
      return make_error(errc::kOtelConfig, fmt::format("{}: '{}' is not key=value", what, item));
    }
    auto key = percent_decode(trim(item.substr(0, eq)), what);
    if (!key) return key.error();
    auto value = percent_decode(trim(item.substr(eq + 1)), what);
    if (!value) return value.error();
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

namespace {

// Resource: OTEL_RESOURCE_ATTRIBUTES, then OTEL_SERVICE_NAME over its service.name, then ours
// where the user set none; service.name first.
Status resolve_resource(const ExportFlags& flags, const EnvLookup& env, std::string_view service_version,
                        std::string_view instance, ExportConfig& c) {
  Headers resource;
  if (auto v = env("OTEL_RESOURCE_ATTRIBUTES")) {
    auto r = parse_key_values(*v, "OTEL_RESOURCE_ATTRIBUTES");
    if (!r) return r.error();
    resource = std::move(*r);
  }
  auto set = [&](std::string key, std::string value, bool override_existing) {
    auto it = std::find_if(resource.begin(), resource.end(), [&](const auto& kv) { return kv.first == key; });
    if (it == resource.end()) {
      resource.emplace_back(std::move(key), std::move(value));
    } else if (override_existing) {
      it->second = std::move(value);
    }
  };
  if (auto v = env("OTEL_SERVICE_NAME"); v && !trim(*v).empty()) set("service.name", std::string(trim(*v)), true);
  set("service.name", flags.default_service_name, false);
  set("service.version", std::string(service_version), false);
  set("service.instance.id", std::string(instance), false);
  // service.name first: it is what a person looks for.
  std::stable_partition(resource.begin(), resource.end(), [](const auto& kv) { return kv.first == "service.name"; });
  for (auto& [k, v] : resource) c.resource.push_back({k, v});
  return Ok{};
}

// Intervals, timeouts and the batch processor's limits: flags, then OTEL_* variables, then defaults.
Status resolve_timing(const ExportFlags& flags, const EnvLookup& env, ExportConfig& c) {
  if (flags.metrics_interval_s) {
    if (!(*flags.metrics_interval_s > 0)) {
      return make_error(errc::kOtelConfig, "--otlp-metrics-interval: expected a positive number of seconds");
    }
    c.metrics_interval_s = *flags.metrics_interval_s;
  } else if (auto st = read_seconds_from_ms(env, "OTEL_METRIC_EXPORT_INTERVAL", c.metrics_interval_s); !st) {
    return st;
  }
  if (auto st = read_seconds_from_ms(env, "OTEL_EXPORTER_OTLP_TIMEOUT", c.timeout_s); !st) return st;
  if (auto st = read_seconds_from_ms(env, "OTEL_BSP_SCHEDULE_DELAY", c.batch_delay_s); !st) return st;
  if (auto st = read_count(env, "OTEL_BSP_MAX_QUEUE_SIZE", c.max_queue); !st) return st;
  if (auto st = read_count(env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", c.max_batch); !st) return st;
  c.max_batch = std::min(c.max_batch, c.max_queue);
  return Ok{};
}

}  // namespace

Result<ExportConfig> resolve_export_config(const ExportFlags& flags, const EnvLookup& env,
                                           std::string_view service_version, std::string_view instance) {
  ExportConfig c;
  if (auto v = env("OTEL_SDK_DISABLED"); v && trim(*v) == "true") return c;

  const std::string base = !flags.endpoint.empty() ? flags.endpoint : env("OTEL_EXPORTER_OTLP_ENDPOINT").value_or("");
  auto own = [&](std::string_view var, std::string_view signal) -> std::string {
    // The flag wins over the environment; a signal's own variable over the shared base.
    if (signal == "traces" && !flags.traces_endpoint.empty()) return flags.traces_endpoint;
    if (!flags.endpoint.empty()) return signal_url(flags.endpoint, signal);
    if (auto v = env(var); v && !trim(*v).empty()) return std::string(trim(*v));
    return trim(base).empty() ? std::string() : signal_url(trim(base), signal);
  };
  if (!is_off(env, "OTEL_TRACES_EXPORTER")) c.traces_url = own("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "traces");
  if (flags.metrics && !is_off(env, "OTEL_METRICS_EXPORTER"))
    c.metrics_url = own("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "metrics");

  std::string protocol = flags.protocol;
  if (protocol.empty()) protocol = env("OTEL_EXPORTER_OTLP_PROTOCOL").value_or("http/protobuf");
  protocol = std::string(trim(protocol));
  if (protocol == "http/protobuf") {
    c.encoding = Encoding::kProtobuf;
  } else if (protocol == "http/json") {
    c.encoding = Encoding::kJson;
  } else {
    return make_error(errc::kOtelConfig,
                      fmt::format("OTLP protocol '{}' is not supported: use http/protobuf (the default) or http/json "
                                  "(grpc is not spoken; point at the collector's OTLP/HTTP port, usually 4318)",
                                  protocol));
  }

  for (auto [var, into] : {std::pair{"OTEL_EXPORTER_OTLP_HEADERS", &c.headers},
                           std::pair{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", &c.traces_headers},
                           std::pair{"OTEL_EXPORTER_OTLP_METRICS_HEADERS", &c.metrics_headers}}) {
    if (auto v = env(var)) {
      auto h = parse_key_values(*v, var);
      if (!h) return h.error();
      *into = std::move(*h);
    }
  }
  c.ca_file = !flags.ca_file.empty() ? flags.ca_file : env("OTEL_EXPORTER_OTLP_CERTIFICATE").value_or("");

  if (auto st = resolve_resource(flags, env, service_version, instance, c); !st) return st.error();
  if (auto st = resolve_timing(flags, env, c); !st) return st.error();
  return c;
}

bool is_retryable_status(int status) { return status == 429 || status == 502 || status == 503 || status == 504; }

std::optional<double> retry_delay_s(const RetryPolicy& p, int attempt, std::optional<std::string_view> retry_after) {
  if (attempt >= p.max_attempts) return std::nullopt;
  if (retry_after) {
    const auto t = trim(*retry_after);
    double s = 0;
    auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), s);
    if (ec == std::errc() && ptr == t.data() + t.size() && s >= 0 && std::isfinite(s)) {
      return std::min(s, p.max_retry_after_s);
    }
    // An HTTP-date or garbage: the backoff below.
  }
  return std::min(p.initial_backoff_s * std::pow(2.0, attempt - 1), p.max_backoff_s);
}

}  // namespace mpo::otel
