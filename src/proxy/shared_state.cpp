// The implementation of proxy/shared_state.hpp. What the proxy's event loops share (edge): one
// ledger writer (its queue is thread-safe), one set of metrics and what the backend's answers
// showed (under one mutex), the OpenTelemetry side (under another), the requests and connections in
// flight, and the loops themselves (the primary stops them all once it has drained).
#include "proxy/shared_state.hpp"

#include "promtext/text_writer.hpp"

namespace mpo::proxy {

std::string Shared::render_metrics() {
  const ProxyMetrics::LedgerCounts counts{ledger.lines_written(), ledger.lines_dropped(), ledger.write_errors()};
  Histogram lag(kLagBuckets);
  for (const auto& loop : lag_by_loop) loop.add_to(lag);
  std::string body = with_metrics([&](ProxyMetrics& m) {
    m.set_in_flight(in_flight);
    return m.render(counts, lag);
  });
  promtext::TextWriter w(promtext::Format::kText004, promtext::NumberStyle::kPython);
  with_telemetry([&](Telemetry& t) { t.render_prometheus(w); });
  w.family("modelperfobs_connections_accepted_total", promtext::MetricType::kCounter,
           "Client connections each event loop accepted (proxy --threads)");
  for (std::size_t i = 0; i < accepted_by_loop.size(); ++i) {
    const std::string loop = std::to_string(i);
    w.sample("modelperfobs_connections_accepted_total", {{"loop", loop}},
             static_cast<double>(accepted_by_loop[i].load()));
  }
  return body + std::move(w).take();
}

}  // namespace mpo::proxy
