// The proxy's own Prometheus metrics (client-side SLO signals for any backend, hosted providers
// included), fed from finished observations: requests and the latency histograms by model and
// operation (so dashboards and alerts can be per model), the rest for the whole proxy. Pure; the
// admin listener renders it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "core/histogram.hpp"
#include "core/label_cap.hpp"
#include "ledger/observation.hpp"

namespace mpo::proxy {

class ProxyMetrics {
 public:
  // Model names become label values: at most `max_models` distinct ones, each at most
  // `max_model_bytes` long; the rest are counted as _other (core/label_cap.hpp). Operations are
  // the ledger's fixed set (chat, responses, messages, ...), so they need no bound.
  explicit ProxyMetrics(std::size_t max_models = 50, std::size_t max_model_bytes = 256);
  void record(const ledger::Observation& o);
  void set_in_flight(std::int64_t n) { in_flight_ = n; }
  // A request begun and ended, for the in-flight gauge by model and operation: started returns the
  // gauge's series (model label, operation), which its end must give back (a map node: it stays
  // where it is, and no series is erased).
  std::int64_t* request_started(const std::optional<std::string>& model, std::string_view operation);
  void request_ended(std::int64_t* in_flight);
  void count_connect_error() { ++upstream_connect_errors_; }
  // accept() failed for want of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM) and
  // the loop paused accepting; `reason`: the errno's name.
  void count_accept_pause(std::string_view reason) { ++accept_pauses_[std::string(reason)]; }
  // Connections over --max-connections: answered 503, or closed unread when too many wait for it.
  void count_refused_connection(bool answered) { ++(answered ? refused_answered_ : refused_closed_); }
  // A request sent again on a fresh connection; `cause`: how the pooled one failed (eof, reset,
  // broken_pipe).
  void count_retry(std::string_view cause) { ++retries_[std::string(cause)]; }
  // Stream events of a type no reader knows (ignored), by the request's operation.
  void count_unknown_events(std::string_view operation, int n) {
    unknown_events_[std::string(operation)] += static_cast<std::uint64_t>(n);
  }

  struct LedgerCounts {
    std::uint64_t written = 0;
    std::uint64_t dropped = 0;
    std::uint64_t write_errors = 0;
  };
  // `lag`: the proxy's own lateness per read (the event loops' AtomicHistograms merged: they are
  // observed without this object's lock; Shared::lag_by_loop).
  std::string render(const LedgerCounts& ledger, const Histogram& lag) const;

 private:
  // The latency histograms of one model and operation.
  struct Latencies {
    Latencies();
    Histogram ttft, tpot, itl, e2e, ttfb;
    // Streams whose first event was a tool call: left out of ttft (their first event came after part
    // of the decode: docs/REPORT.md "Tool calls first").
    std::uint64_t tool_call_first = 0;
  };
  LabelCap models_;
  // model, operation, outcome, code
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::uint64_t> requests_;
  std::map<std::pair<std::string, std::string>, Latencies> latencies_;  // model, operation
  std::map<std::pair<std::string, std::string>, std::int64_t> in_flight_by_model_;
  std::map<std::string, std::uint64_t> accept_pauses_;
  std::uint64_t refused_answered_ = 0, refused_closed_ = 0;
  std::int64_t in_flight_ = 0;
  std::uint64_t upstream_connect_errors_ = 0;
  std::map<std::string, std::uint64_t> retries_{{"eof", 0}, {"reset", 0}, {"broken_pipe", 0}};
  std::map<std::string, std::uint64_t> unknown_events_;
  std::uint64_t prompt_tokens_ = 0;
  std::uint64_t generation_tokens_ = 0;
  // The last request's counter and histograms (issue 43): the next request usually has the same
  // model, operation, outcome and status, compared once instead of looked up in two maps whose
  // keys are tuples of strings. Map nodes stay where they are; no series is erased.
  struct Recent {
    std::string model, operation, outcome;
    std::optional<int> status;
    std::uint64_t* count = nullptr;
    Latencies* latencies = nullptr;
  };
  Recent recent_;
  // The last request begun's series of the in-flight gauge, reused while its key repeats.
  struct RecentStarted {
    std::string model, operation;
    std::int64_t* in_flight = nullptr;
  };
  RecentStarted recent_started_;
};

// The lag histogram's bounds, from 10 us (a loop keeping up) to 1 s (a loop stalled): the proxy's
// lateness is usually far below the engine's latencies, so the engine's buckets would put it all in
// the first one.
inline constexpr double kLagBuckets[] = {1e-5, 2.5e-5, 5e-5,   1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                         5e-3, 1e-2,   2.5e-2, 5e-2, 0.1,    0.25, 0.5,  1.0};

}  // namespace mpo::proxy
