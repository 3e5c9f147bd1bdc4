#include "proxy/proxy_metrics.hpp"

#include <fmt/format.h>

namespace mpo::proxy {
namespace {


void histogram(std::string& out, std::string_view name, std::string_view help, const Histogram& h) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"{}\"}} {}\n", name, prom_number(h.bounds()[i]), cumulative);
  }
  cumulative += h.counts().back();
  fmt::format_to(std::back_inserter(out), "{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative, name,
                 prom_number(h.sum()), name, h.count());
}

void counter(std::string& out, std::string_view name, std::string_view help, std::uint64_t v) {
  fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, v);
}

}  // namespace

ProxyMetrics::ProxyMetrics()
    : ttft_(vllm_buckets::kTtftBuckets),
      tpot_(vllm_buckets::kItlBuckets),
      itl_(vllm_buckets::kItlBuckets),
      e2e_(vllm_buckets::kLatencyBuckets),
      ttfb_(vllm_buckets::kTtftBuckets) {}

void ProxyMetrics::record(const ledger::Observation& o) {
  const std::string code = o.http_status ? std::to_string(*o.http_status) : "none";
  ++requests_[{o.model.value_or(""), o.outcome, code}];
  if (o.ttft_ms) ttft_.observe(*o.ttft_ms / 1000.0);
  if (auto t = ledger::tpot_ms(o)) tpot_.observe(*t / 1000.0);
  for (double g : o.itl_ms) itl_.observe(g / 1000.0);
  if (o.e2e_ms) e2e_.observe(*o.e2e_ms / 1000.0);
  if (o.ttfb_ms) ttfb_.observe(*o.ttfb_ms / 1000.0);
  if (o.prompt_tokens) prompt_tokens_ += static_cast<std::uint64_t>(*o.prompt_tokens);
  if (o.completion_tokens) generation_tokens_ += static_cast<std::uint64_t>(*o.completion_tokens);
}

std::string ProxyMetrics::render(const LedgerCounts& ledger) const {
  std::string out;
  out += "# HELP modelperfobs_requests_total Requests seen by the proxy, by model, outcome and HTTP status.\n"
         "# TYPE modelperfobs_requests_total counter\n";
  for (const auto& [key, n] : requests_) {
    const auto& [model, outcome, code] = key;
    fmt::format_to(std::back_inserter(out), "modelperfobs_requests_total{{model=\"{}\",outcome=\"{}\",code=\"{}\"}} {}\n",
                   prom_escape_label(model), outcome, code, n);
  }
  fmt::format_to(std::back_inserter(out),
                 "# HELP modelperfobs_requests_in_flight Requests in flight at the proxy.\n"
                 "# TYPE modelperfobs_requests_in_flight gauge\nmodelperfobs_requests_in_flight {}\n",
                 in_flight_);
  histogram(out, "modelperfobs_time_to_first_token_seconds", "Client-side time to the first generated-content event.", ttft_);
  histogram(out, "modelperfobs_time_per_output_token_seconds", "Client-side (e2e - ttft) / (completion_tokens - 1).", tpot_);
  histogram(out, "modelperfobs_inter_token_latency_seconds", "Gaps between consecutive content events.", itl_);
  histogram(out, "modelperfobs_e2e_request_latency_seconds", "Request head received to last byte forwarded.", e2e_);
  histogram(out, "modelperfobs_time_to_first_byte_seconds", "Request head received to upstream response head.", ttfb_);
  counter(out, "modelperfobs_prompt_tokens_total", "Prompt tokens reported by the backend.", prompt_tokens_);
  counter(out, "modelperfobs_generation_tokens_total", "Completion tokens reported (or estimated) for the backend.", generation_tokens_);
  counter(out, "modelperfobs_ledger_lines_written_total", "Ledger lines written.", ledger.written);
  counter(out, "modelperfobs_ledger_lines_dropped_total", "Ledger lines dropped because the writer queue was full.", ledger.dropped);
  counter(out, "modelperfobs_ledger_write_errors_total", "Failed ledger writes (retried).", ledger.write_errors);
  counter(out, "modelperfobs_upstream_connect_errors_total", "Connections to the backend that could not be made.", upstream_connect_errors_);
  out += "# HELP modelperfobs_upstream_retries_total Requests sent again on a fresh backend connection because the pooled "
         "one was closed before any response byte, by how it failed.\n"
         "# TYPE modelperfobs_upstream_retries_total counter\n";
  for (const auto& [cause, n] : retries_) {
    fmt::format_to(std::back_inserter(out), "modelperfobs_upstream_retries_total{{cause=\"{}\"}} {}\n", cause, n);
  }
  return out;
}

}  // namespace mpo::proxy
