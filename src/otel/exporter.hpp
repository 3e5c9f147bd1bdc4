// The OTLP/HTTP exporter (edge): spans and metric snapshots handed over by the proxy's event loop
// are sent from a thread of their own, so a dead, slow or refusing collector costs the relay
// nothing but a lock and a queue push. Spans wait in a bounded queue (full: dropped and counted)
// and go in batches; failed exports are retried with backoff, honouring Retry-After; every drop
// and every attempt is counted on the proxy's /metrics (docs/OTEL.md "Export").
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>

#include "core/result.hpp"
#include "ledger/observation.hpp"
#include "net/backend_url.hpp"
#include "otel/config.hpp"
#include "otel/genai.hpp"
#include "otel/otlp.hpp"
#include "otel/trace_context.hpp"

namespace mpo::promtext {
class TextWriter;
}

namespace mpo::otel {

// A proxy's finished request, turned into its span on the exporter's thread: the relay's loop
// only moves the line in.
struct LineSpan {
  ledger::Observation line;
  RequestTrace trace;
  std::string trace_state;
};

class Exporter {
 public:
  // `genai`: how LineSpans become spans (span_from_observation).
  Exporter(ExportConfig config, Origin origin, GenAiOptions genai = {}, RetryPolicy retry = {});
  ~Exporter();
  Exporter(const Exporter&) = delete;
  Exporter& operator=(const Exporter&) = delete;

  // Checks the URLs and starts the thread. The error names the bad URL.
  Status start();
  const ExportConfig& config() const { return config_; }

  // From an event loop; never waits on the network.
  void submit(Span span);
  void submit(LineSpan line);
  // A whole cumulative snapshot, encoded; replaces one not yet sent (a later snapshot holds it).
  void submit_metrics(std::string body);
  // Sends what is queued (retrying only within `flush_s`), then stops the thread.
  void stop(double flush_s);

  // modelperfobs_otlp_* counters for the proxy's /metrics.
  void render_prometheus(promtext::TextWriter& w) const;

 private:
  enum class Signal { kTraces, kMetrics };
  void run();
  void enqueue(std::variant<Span, LineSpan> item);
  // One request with its retries; true when the collector accepted it.
  bool send(Signal signal, const std::string& body);
  // Waits `seconds` unless stopping past the flush deadline; false when the wait was cut short.
  bool pause(double seconds);

  ExportConfig config_;
  Origin origin_;
  GenAiOptions genai_;
  RetryPolicy retry_;
  std::optional<net::BackendUrl> traces_url_, metrics_url_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::variant<Span, LineSpan>> spans_;
  std::optional<std::string> metrics_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point flush_deadline_{};
  std::thread thread_;

  struct Counters {
    std::atomic<std::uint64_t> ok{0}, retried{0}, failed{0}, rejected{0};
  };
  Counters traces_, metrics_counts_;
  std::atomic<std::uint64_t> spans_exported_{0}, spans_dropped_queue_{0}, spans_dropped_failed_{0};
  std::atomic<std::uint64_t> metric_snapshots_replaced_{0};
  std::atomic<std::size_t> queued_{0};
};

}  // namespace mpo::otel
