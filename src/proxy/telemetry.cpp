// The implementation of proxy/telemetry.hpp. The proxy's OpenTelemetry side (docs/OTEL.md): each
// request's place in a trace (the client's traceparent continued or a trace started, the proxy's
// span id forwarded upstream), the GenAI client metrics for /metrics and OTLP, and the OTLP
// exporter when an endpoint is configured.
#include "proxy/telemetry.hpp"

#include <fmt/format.h>

#include "core/clock.hpp"
#include "promtext/text_writer.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "dev"
#endif

namespace mpo::proxy {

Telemetry::Telemetry(TelemetryOptions opts)
    : opts_(std::move(opts)), genai_(opts_.genai, SystemClock::instance().wall_us() * 1000) {}

Telemetry::~Telemetry() { stop(0); }

Result<std::unique_ptr<Telemetry>> Telemetry::make(TelemetryOptions opts, const otel::EnvLookup& env) {
  auto config = otel::resolve_export_config(opts.otlp, env, MPO_VERSION, opts.instance);
  if (!config) return config.error();
  // The GenAI metric names' generation, as the conventions ask existing instrumentations to choose it.
  const auto opt_in = env("OTEL_SEMCONV_STABILITY_OPT_IN");
  opts.genai.conventions = otel::genai_conventions(opt_in ? std::optional<std::string_view>(*opt_in) : std::nullopt);
  std::unique_ptr<Telemetry> t(new Telemetry(std::move(opts)));
  if (config->enabled()) {
    otel::Origin origin{config->resource, "modelperfobs", MPO_VERSION};
    t->exporter_ = std::make_unique<otel::Exporter>(std::move(*config), std::move(origin), t->opts_.genai);
    if (auto st = t->exporter_->start(); !st) return st.error();
  }
  return t;
}

void Telemetry::finish(const ledger::Observation& o, const otel::RequestTrace& trace, std::string trace_state) {
  genai_.record(o);
  // A copy for the exporter's thread: the observation itself goes on to the ledger's writer.
  if (exporter_ && trace.sampled()) exporter_->submit(otel::LineSpan{o, trace, std::move(trace_state)});
}

void Telemetry::render_prometheus(promtext::TextWriter& w) const {
  genai_.render_prometheus(w);
  if (exporter_) exporter_->render_prometheus(w);
}

void Telemetry::export_metrics_now() {
  if (!exports_metrics()) return;
  const auto& c = exporter_->config();
  otel::Origin origin{c.resource, "modelperfobs", MPO_VERSION};
  exporter_->submit_metrics(
      otel::encode_metrics(origin, genai_.snapshot(SystemClock::instance().wall_us() * 1000), c.encoding));
}

void Telemetry::stop(double flush_s) {
  if (stopped_ || !exporter_) return;
  stopped_ = true;
  export_metrics_now();
  exporter_->stop(flush_s);
}

std::string Telemetry::describe() const {
  std::string out;
  if (exporter_) {
    const auto& c = exporter_->config();
    out = "OTLP";
    if (!c.traces_url.empty()) out += fmt::format(" traces to {}", c.traces_url);
    if (!c.metrics_url.empty()) {
      out += fmt::format("{} metrics to {} every {} s", c.traces_url.empty() ? "" : ",", c.metrics_url,
                         c.metrics_interval_s);
    }
    out += c.encoding == otel::Encoding::kProtobuf ? " (http/protobuf)" : " (http/json)";
  }
  if (opts_.genai.conventions != otel::GenAiConventions::kV1_41) {
    out += fmt::format("{}GenAI metrics as {}", out.empty() ? "" : ", ", otel::to_string(opts_.genai.conventions));
  }
  return out;
}

}  // namespace mpo::proxy
