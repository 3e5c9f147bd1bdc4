// The implementation of otel/exporter.hpp. The OTLP/HTTP exporter (edge): spans and metric
// snapshots handed over by the proxy's event loop are sent from a thread of their own, so a dead,
// slow or refusing collector costs the relay nothing but a lock and a queue push.
#include "otel/exporter.hpp"

#include <fmt/format.h>

#include <iostream>

#include "net/client.hpp"
#include "promtext/text_writer.hpp"

namespace mpo::otel {

Exporter::Exporter(ExportConfig config, Origin origin, GenAiOptions genai, RetryPolicy retry)
    : config_(std::move(config)), origin_(std::move(origin)), genai_(std::move(genai)), retry_(retry) {}

Exporter::~Exporter() { stop(0); }

Status Exporter::start() {
  for (auto [text, into, what] : {std::tuple{&config_.traces_url, &traces_url_, "traces"},
                                  std::tuple{&config_.metrics_url, &metrics_url_, "metrics"}}) {
    if (text->empty()) continue;
    auto url = net::parse_backend_url(*text);
    if (!url) {
      return make_error(errc::kOtelEndpoint, fmt::format("OTLP {} endpoint {}: {}", what, *text, url.error().message));
    }
    *into = std::move(*url);
  }
  thread_ = std::thread([this] { run(); });
  return Ok{};
}

void Exporter::submit(Span span) { enqueue(std::move(span)); }

void Exporter::submit(LineSpan line) { enqueue(std::move(line)); }

void Exporter::enqueue(std::variant<Span, LineSpan> item) {
  if (!traces_url_) return;
  {
    std::lock_guard lk(mu_);
    if (stopping_) return;
    if (spans_.size() >= config_.max_queue) {
      spans_dropped_queue_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    spans_.push_back(std::move(item));
    queued_.store(spans_.size(), std::memory_order_relaxed);
    if (spans_.size() < config_.max_batch) return;
  }
  cv_.notify_one();
}

void Exporter::submit_metrics(std::string body) {
  if (!metrics_url_) return;
  {
    std::lock_guard lk(mu_);
    if (metrics_) metric_snapshots_replaced_.fetch_add(1, std::memory_order_relaxed);
    metrics_ = std::move(body);
  }
  cv_.notify_one();
}

void Exporter::stop(double flush_s) {
  {
    std::lock_guard lk(mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    flush_deadline_ =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(flush_s));
  }
  cv_.notify_one();
  thread_.join();
}

bool Exporter::pause(double seconds) {
  std::unique_lock lk(mu_);
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(seconds));
  // Stopping: wait no further than the flush deadline.
  cv_.wait_until(lk, until, [&] { return stopping_ && std::chrono::steady_clock::now() >= flush_deadline_; });
  return !(stopping_ && std::chrono::steady_clock::now() >= flush_deadline_);
}

void Exporter::run() {
  const auto delay = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(config_.batch_delay_s));
  for (;;) {
    std::vector<Span> batch;
    std::optional<std::string> metrics;
    {
      std::unique_lock lk(mu_);
      cv_.wait_for(lk, delay, [&] { return stopping_ || spans_.size() >= config_.max_batch || metrics_.has_value(); });
      if (stopping_ && (spans_.empty() && !metrics_)) return;
      if (stopping_ && std::chrono::steady_clock::now() >= flush_deadline_) {
        spans_dropped_failed_.fetch_add(spans_.size(), std::memory_order_relaxed);
        spans_.clear();
        queued_.store(0, std::memory_order_relaxed);
        return;
      }
      const std::size_t n = std::min(spans_.size(), config_.max_batch);
      batch.reserve(n);
      std::vector<std::variant<Span, LineSpan>> taken;
      taken.reserve(n);
      for (std::size_t i = 0; i < n; ++i) {
        taken.push_back(std::move(spans_.front()));
        spans_.pop_front();
      }
      lk.unlock();
      for (auto& item : taken) {
        if (auto* l = std::get_if<LineSpan>(&item)) {
          batch.push_back(span_from_observation(l->line, l->trace, l->trace_state, genai_));
        } else {
          batch.push_back(std::move(std::get<Span>(item)));
        }
      }
      lk.lock();
      queued_.store(spans_.size(), std::memory_order_relaxed);
      metrics.swap(metrics_);
    }
    if (!batch.empty()) {
      if (send(Signal::kTraces, encode_traces(origin_, batch, config_.encoding))) {
        spans_exported_.fetch_add(batch.size(), std::memory_order_relaxed);
      } else {
        spans_dropped_failed_.fetch_add(batch.size(), std::memory_order_relaxed);
      }
    }
    if (metrics) send(Signal::kMetrics, *metrics);
  }
}

bool Exporter::send(Signal signal, const std::string& body) {
  const bool traces = signal == Signal::kTraces;
  const net::BackendUrl& url = traces ? *traces_url_ : *metrics_url_;
  Counters& counts = traces ? traces_ : metrics_counts_;
  net::ExchangeOptions opts;
  opts.method = net::http::verb::post;
  opts.target = url.base_path.empty() ? "/" : url.base_path;
  opts.headers = config_.headers;
  for (const auto& h : traces ? config_.traces_headers : config_.metrics_headers) opts.headers.push_back(h);
  opts.headers.emplace_back("Content-Type", std::string(content_type(config_.encoding)));
  opts.user_agent = "modelperfobs-otlp-exporter";
  opts.max_body = 1 << 20;
  for (int attempt = 1;; ++attempt) {
    opts.body = body;
    const auto x = net::exchange_blocking(url, config_.ca_file, opts, config_.timeout_s);
    if (!x.failure && x.status >= 200 && x.status < 300) {
      counts.ok.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    const bool retryable = x.failure.has_value() || is_retryable_status(x.status);
    if (!retryable) {
      // 400 and the like: the collector will never take this body.
      counts.rejected.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    const auto wait = retry_delay_s(retry_, attempt, x.failure ? std::nullopt : x.retry_after);
    if (!wait || !pause(*wait)) {
      counts.failed.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    counts.retried.fetch_add(1, std::memory_order_relaxed);
  }
}

void Exporter::render_prometheus(promtext::TextWriter& w) const {
  using promtext::MetricType;
  constexpr std::string_view requests = "modelperfobs_otlp_export_requests_total";
  w.family(requests, MetricType::kCounter,
           "OTLP export requests by signal and result: ok (accepted), retried (a retryable failure followed by "
           "another attempt), failed (retries exhausted or the flush deadline passed), rejected (a status that is "
           "never retried, such as 400).");
  for (auto [signal, c] : {std::pair{"traces", &traces_}, std::pair{"metrics", &metrics_counts_}}) {
    for (auto [result, v] : {std::pair{"ok", &c->ok}, std::pair{"retried", &c->retried},
                             std::pair{"failed", &c->failed}, std::pair{"rejected", &c->rejected}}) {
      w.sample(requests, {{"result", result}, {"signal", signal}}, static_cast<double>(v->load()));
    }
  }
  w.family("modelperfobs_otlp_spans_exported_total", MetricType::kCounter, "Spans the collector accepted.")
      .sample("modelperfobs_otlp_spans_exported_total", {}, static_cast<double>(spans_exported_.load()));
  constexpr std::string_view dropped = "modelperfobs_otlp_spans_dropped_total";
  w.family(dropped, MetricType::kCounter,
           "Spans not exported: queue_full (the exporter's queue was full), export_failed (their batch was not "
           "accepted). The ledger keeps every request either way.");
  w.sample(dropped, {{"reason", "export_failed"}}, static_cast<double>(spans_dropped_failed_.load()));
  w.sample(dropped, {{"reason", "queue_full"}}, static_cast<double>(spans_dropped_queue_.load()));
  w.family("modelperfobs_otlp_spans_queued", MetricType::kGauge, "Spans waiting to be exported.")
      .sample("modelperfobs_otlp_spans_queued", {}, static_cast<double>(queued_.load()));
  w.family("modelperfobs_otlp_metric_snapshots_replaced_total", MetricType::kCounter,
           "Metric snapshots replaced by a later one before they could be sent (cumulative: nothing is lost).")
      .sample("modelperfobs_otlp_metric_snapshots_replaced_total", {},
              static_cast<double>(metric_snapshots_replaced_.load()));
}

}  // namespace mpo::otel
