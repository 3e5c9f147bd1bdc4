// The implementation of proxy/proxy_metrics.hpp. The proxy's own Prometheus metrics (client-side
// SLO signals for any backend, hosted providers included), fed from finished observations: requests
// and the latency histograms by model and operation (so dashboards and alerts can be per model),
// the rest for the whole proxy.
#include "proxy/proxy_metrics.hpp"

#include <fmt/format.h>

#include "promtext/text_writer.hpp"

namespace mpo::proxy {
namespace {

using promtext::MetricType;

void histogram(promtext::TextWriter& w, std::string_view name, std::string_view help, const Histogram& h) {
  w.family(name, MetricType::kHistogram, help);
  w.histogram_samples(name, {}, h.bounds(), h.counts(), h.sum());
}

// One histogram family with a series per model and operation; `member` picks the histogram.
template <class Map, class Latencies>
void histograms_by_model(promtext::TextWriter& w, std::string_view name, std::string_view help, const Map& latencies,
                         Histogram Latencies::*member) {
  w.family(name, MetricType::kHistogram, help);
  for (const auto& [key, l] : latencies) {
    const Histogram& h = l.*member;
    w.histogram_samples(name, {{"model", key.first}, {"operation", key.second}}, h.bounds(), h.counts(), h.sum());
  }
}

void counter(promtext::TextWriter& w, std::string_view name, std::string_view help, std::uint64_t v) {
  w.family(name, MetricType::kCounter, help).sample(name, {}, static_cast<double>(v));
}

// A counter by one label, a sample per value of the label.
void counter_by(promtext::TextWriter& w, std::string_view name, std::string_view help, std::string_view label,
                const std::map<std::string, std::uint64_t>& counts) {
  w.family(name, MetricType::kCounter, help);
  for (const auto& [value, n] : counts) w.sample(name, {{label, value}}, static_cast<double>(n));
}

}  // namespace

ProxyMetrics::Latencies::Latencies()
    : ttft(vllm_buckets::kTtftBuckets),
      tpot(vllm_buckets::kItlBuckets),
      itl(vllm_buckets::kItlBuckets),
      e2e(vllm_buckets::kLatencyBuckets),
      ttfb(vllm_buckets::kTtftBuckets) {}

ProxyMetrics::ProxyMetrics(std::size_t max_models, std::size_t max_model_bytes)
    : models_(max_models, max_model_bytes) {}

std::int64_t* ProxyMetrics::request_started(const std::optional<std::string>& model, std::string_view operation) {
  const std::string_view label = model && !model->empty() ? models_.label(*model, false) : std::string_view();
  RecentStarted& r = recent_started_;
  if (r.in_flight == nullptr || r.model != label || r.operation != operation) {
    r.model = label;
    r.operation = operation;
    r.in_flight = &in_flight_by_model_[{r.model, r.operation}];
  }
  ++*r.in_flight;
  return r.in_flight;
}

void ProxyMetrics::request_ended(std::int64_t* in_flight) {
  if (in_flight != nullptr && *in_flight > 0) --*in_flight;
}

void ProxyMetrics::record(const ledger::Observation& o) {
  const std::string_view label = o.model && !o.model->empty() ? models_.label(*o.model) : std::string_view();
  Recent& r = recent_;
  if (r.count == nullptr || r.status != o.http_status || r.model != label || r.operation != o.operation ||
      r.outcome != o.outcome) {
    const std::string code = o.http_status ? std::to_string(*o.http_status) : "none";
    const std::string model(label);
    r.count = &requests_[{model, o.operation, o.outcome, code}];
    auto it = latencies_.find({model, o.operation});
    if (it == latencies_.end()) it = latencies_.emplace(std::pair{model, o.operation}, Latencies{}).first;
    r.latencies = &it->second;
    r.model = model;
    r.operation = o.operation;
    r.outcome = o.outcome;
    r.status = o.http_status;
  }
  ++*r.count;
  Latencies& l = *r.latencies;
  if (o.stream && ledger::began_with_tool_call(o.first_output)) {
    ++l.tool_call_first;
  } else if (o.ttft_ms) {
    l.ttft.observe(*o.ttft_ms / 1000.0);
  }
  if (auto t = ledger::tpot_ms(o)) l.tpot.observe(*t / 1000.0);
  for (double g : o.itl_ms) l.itl.observe(g / 1000.0);
  if (o.e2e_ms) l.e2e.observe(*o.e2e_ms / 1000.0);
  if (o.ttfb_ms) l.ttfb.observe(*o.ttfb_ms / 1000.0);
  if (o.prompt_tokens) prompt_tokens_ += static_cast<std::uint64_t>(*o.prompt_tokens);
  if (o.completion_tokens) generation_tokens_ += static_cast<std::uint64_t>(*o.completion_tokens);
}

std::string ProxyMetrics::render(const LedgerCounts& ledger, const Histogram& lag) const {
  promtext::TextWriter w(promtext::Format::kText004, promtext::NumberStyle::kPython);
  w.family("modelperfobs_requests_total", MetricType::kCounter,
           "Requests seen by the proxy, by model, operation, outcome and HTTP status.");
  for (const auto& [key, n] : requests_) {
    const auto& [model, operation, outcome, code] = key;
    w.sample("modelperfobs_requests_total",
             {{"code", code}, {"model", model}, {"operation", operation}, {"outcome", outcome}},
             static_cast<double>(n));
  }
  w.family("modelperfobs_requests_in_flight", MetricType::kGauge, "Requests in flight at the proxy.")
      .sample("modelperfobs_requests_in_flight", {}, static_cast<double>(in_flight_));
  w.family("modelperfobs_requests_in_flight_by_model", MetricType::kGauge,
           "Requests in flight at the proxy, by model and operation (the model as the request named it).");
  for (const auto& [key, n] : in_flight_by_model_) {
    w.sample("modelperfobs_requests_in_flight_by_model", {{"model", key.first}, {"operation", key.second}},
             static_cast<double>(n));
  }
  using L = Latencies;
  histograms_by_model(w, "modelperfobs_time_to_first_token_seconds",
                      "Client-side time to the first generated-content event, by model and operation (streams whose "
                      "first event was a tool call are left out: modelperfobs_tool_call_first_total).",
                      latencies_, &L::ttft);
  w.family("modelperfobs_tool_call_first_total", MetricType::kCounter,
           "Streams whose first event was a tool call, by model and operation: an engine sends a call only once it "
           "has parsed the function's name, so that event came after part of the decode and dates no first token.");
  for (const auto& [key, l] : latencies_) {
    w.sample("modelperfobs_tool_call_first_total", {{"model", key.first}, {"operation", key.second}},
             static_cast<double>(l.tool_call_first));
  }
  histograms_by_model(w, "modelperfobs_time_per_output_token_seconds",
                      "Client-side (e2e - ttft) / (completion_tokens - 1), by model and operation.", latencies_,
                      &L::tpot);
  histograms_by_model(w, "modelperfobs_inter_token_latency_seconds",
                      "Gaps between consecutive content events, by model and operation.", latencies_, &L::itl);
  histograms_by_model(w, "modelperfobs_e2e_request_latency_seconds",
                      "Request head received to last byte forwarded, by model and operation.", latencies_, &L::e2e);
  histograms_by_model(w, "modelperfobs_time_to_first_byte_seconds",
                      "Request head received to upstream response head, by model and operation.", latencies_, &L::ttfb);
  histogram(w, "modelperfobs_proxy_lag_seconds",
            "The proxy's own lateness: the kernel's receive timestamp of bytes to the moment the proxy read them, "
            "per read (requests and responses; reads without a kernel timestamp are not counted).",
            lag);
  counter(w, "modelperfobs_prompt_tokens_total", "Prompt tokens reported by the backend.", prompt_tokens_);
  counter(w, "modelperfobs_generation_tokens_total", "Completion tokens reported (or estimated) for the backend.",
          generation_tokens_);
  counter(w, "modelperfobs_ledger_lines_written_total", "Ledger lines written.", ledger.written);
  counter(w, "modelperfobs_ledger_lines_dropped_total", "Ledger lines dropped because the writer queue was full.",
          ledger.dropped);
  counter(w, "modelperfobs_ledger_write_errors_total", "Failed ledger writes (retried).", ledger.write_errors);
  counter_by(w, "modelperfobs_accept_paused_total",
             "Times a loop paused accepting connections because accept() failed for want of file descriptors or "
             "memory, by errno (it resumes with backoff; connections already held are served).",
             "reason", accept_pauses_);
  w.family("modelperfobs_connections_refused_total", MetricType::kCounter,
           "Client connections over --max-connections: answered 503, or closed unread when too many were "
           "already waiting for their 503.");
  w.sample("modelperfobs_connections_refused_total", {{"how", "answered"}}, static_cast<double>(refused_answered_));
  w.sample("modelperfobs_connections_refused_total", {{"how", "closed"}}, static_cast<double>(refused_closed_));
  counter(w, "modelperfobs_model_labels_folded_total",
          "Requests whose model name was counted as _other (over --max-model-labels names or --max-label-bytes "
          "bytes).",
          models_.folded());
  counter(w, "modelperfobs_upstream_connect_errors_total", "Connections to the backend that could not be made.",
          upstream_connect_errors_);
  counter_by(w, "modelperfobs_upstream_retries_total",
             "Requests sent again on a fresh backend connection because the pooled one was closed before any "
             "response byte, by how it failed.",
             "cause", retries_);
  counter_by(w, "modelperfobs_stream_unknown_events_total",
             "Streamed events of a type the proxy does not know (ignored for timing and tokens), by operation.",
             "operation", unknown_events_);
  return std::move(w).take();
}

}  // namespace mpo::proxy
