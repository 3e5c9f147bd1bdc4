#include "proxy/shared_state.hpp"

#include "promtext/text_writer.hpp"

namespace mpo::proxy {

std::string Shared::render_metrics() {
  const ProxyMetrics::LedgerCounts counts{ledger.lines_written(), ledger.lines_dropped(), ledger.write_errors()};
  std::string body = with_metrics([&](ProxyMetrics& m) {
    m.set_in_flight(in_flight);
    return m.render(counts);
  });
  promtext::TextWriter w(promtext::Format::kText004, promtext::NumberStyle::kPython);
  with_telemetry([&](Telemetry& t) { t.render_prometheus(w); });
  return body + std::move(w).take();
}

}  // namespace mpo::proxy
