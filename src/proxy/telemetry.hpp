// The proxy's OpenTelemetry side (docs/OTEL.md): each request's place in a trace (the client's
// traceparent continued or a trace started, the proxy's span id forwarded upstream), the GenAI
// client metrics for /metrics and OTLP, and the OTLP exporter when an endpoint is configured.
// Lives on the proxy's event loop; the exporter sends from its own thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "ledger/observation.hpp"
#include "otel/config.hpp"
#include "otel/exporter.hpp"
#include "otel/genai.hpp"
#include "otel/trace_context.hpp"

namespace mpo::promtext {
class TextWriter;
}

namespace mpo::proxy {

struct TelemetryOptions {
  otel::ExportFlags otlp;
  otel::GenAiOptions genai;
  std::string instance;  // service.instance.id
};

class Telemetry {
 public:
  // Resolves the flags and OTEL_* variables (`env`); starts the exporter when an endpoint is set.
  static Result<std::unique_ptr<Telemetry>> make(TelemetryOptions opts, const otel::EnvLookup& env);
  ~Telemetry();

  otel::RequestTrace begin(std::optional<std::string_view> traceparent) {
    return otel::trace_for_request(traceparent, ids_);
  }
  // The request's metrics, and its span when sampled and exported (a copy of the line goes to the
  // exporter, which builds the span on its own thread).
  void finish(const ledger::Observation& o, const otel::RequestTrace& trace, std::string trace_state);

  void render_prometheus(promtext::TextWriter& w) const;

  // Metrics export: every interval, a cumulative snapshot handed to the exporter.
  bool exports_metrics() const { return exporter_ && !exporter_->config().metrics_url.empty(); }
  double metrics_interval_s() const { return exporter_ ? exporter_->config().metrics_interval_s : 0; }
  void export_metrics_now();
  // A last metrics snapshot, then what is queued, within `flush_s`.
  void stop(double flush_s);
  // One line for start-up: where the OTLP export goes and which GenAI metric names are used past
  // v1.41.0's, or "" when neither applies.
  std::string describe() const;

 private:
  explicit Telemetry(TelemetryOptions opts);
  TelemetryOptions opts_;
  otel::IdGenerator ids_;
  otel::GenAiMetrics genai_;
  std::unique_ptr<otel::Exporter> exporter_;
  bool stopped_ = false;
};

}  // namespace mpo::proxy
