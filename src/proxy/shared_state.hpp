// What the proxy's event loops share (edge): one ledger writer (its queue is thread-safe), one set
// of metrics and what the backend's answers showed (under one mutex), the OpenTelemetry side
// (under another), the requests and connections in flight, and the loops themselves (the primary
// stops them all once it has drained).
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/histogram.hpp"
#include "ledger/writer.hpp"
#include "proxy/backend_notes.hpp"
#include "proxy/options.hpp"
#include "proxy/proxy_metrics.hpp"
#include "proxy/recent_lines.hpp"
#include "proxy/sessions.hpp"
#include "proxy/telemetry.hpp"

namespace mpo::proxy {

struct Shared {
  explicit Shared(const ProxyOptions& o)
      : metrics(o.max_model_labels, o.max_label_bytes), notes(o.backend), ledger(ledger_options(o)) {}
  Shared(const Shared&) = delete;
  Shared& operator=(const Shared&) = delete;
  // The ledger's writer renders each request's line on its own thread and hands the lines, batch
  // by batch, to the ring of recent lines (only read through the admin listener: none without it).
  ledger::LedgerWriter::Options ledger_options(const ProxyOptions& o) {
    ledger::LedgerWriter::Options w{o.ledger_path, o.fsync, 1.0, 65536};
    if (!o.admin_enabled) return w;
    w.on_lines = [this](std::span<const std::string_view> lines) {
      std::lock_guard lock(metrics_mutex);
      for (const auto& line : lines) recent.add(line);
    };
    return w;
  }
  std::mutex metrics_mutex;  // metrics, notes and the recent lines
  ProxyMetrics metrics;
  BackendNotes notes;
  RecentLines recent;         // the admin listener's /lines
  std::mutex sessions_mutex;  // every loop's requests share one table of sessions
  SessionTable sessions;
  std::mutex telemetry_mutex;
  std::unique_ptr<Telemetry> telemetry;
  std::atomic<std::int64_t> in_flight{0};
  std::atomic<int> connections{0};
  std::atomic<int> refusing{0};       // connections over the limit waiting for their 503
  std::atomic<int> loops_running{0};  // loops that have not finished their drain
  std::vector<boost::asio::io_context*> loops;
  // Client connections each loop accepted (the kernel spreads them over the SO_REUSEPORT
  // listeners): /metrics shows whether the loops share the work. A deque: atomics do not move.
  std::deque<std::atomic<std::uint64_t>> accepted_by_loop;
  // The proxy's lateness per read, each loop its own (observed on every read without a lock;
  // merged when /metrics is read).
  std::deque<AtomicHistogram> lag_by_loop;
  // Last: its thread, which adds to `recent` under `metrics_mutex`, is stopped before they go.
  ledger::LedgerWriter ledger;

  // The admin listener's /metrics: the proxy's own metrics and the GenAI metrics.
  std::string render_metrics();

  template <class F>
  auto with_metrics(F&& f) {
    std::lock_guard lock(metrics_mutex);
    return f(metrics);
  }
  template <class F>
  auto with_telemetry(F&& f) {
    std::lock_guard lock(telemetry_mutex);
    return f(*telemetry);
  }
};

}  // namespace mpo::proxy
