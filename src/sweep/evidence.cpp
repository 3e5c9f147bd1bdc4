// The implementation of sweep/evidence.hpp. What the server and the power source say about one
// point (pure): counter deltas between the scrape before and the scrape after the point, peaks of
// the gauges sampled during it, restart detection (also against the previous point's last scrape),
// and energy from power samples or a DCGM energy counter.
#include "sweep/evidence.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engines/delta.hpp"
#include "promtext/exposition.hpp"
#include "promtext/number.hpp"

namespace mpo::sweep {
namespace {

using engines::Signal;

boost::json::object not_measured(std::string reason) {
  boost::json::object o;
  o["status"] = "not_measured";
  o["reason"] = std::move(reason);
  return o;
}

std::optional<double> requests_counter(const engines::EngineSignals& s) {
  if (auto v = s.value(Signal::kRequestsTotal)) return v;
  auto finished = s.value(Signal::kRequestsFinished);
  if (!finished) return std::nullopt;
  return *finished + s.value(Signal::kRequestsFailed).value_or(0);
}

}  // namespace

std::int64_t requests_reaching_server(const std::vector<loadgen::Sample>& samples) {
  std::int64_t n = 0;
  for (const auto& s : samples) {
    if (s.http_status || s.error_class == "timeout" || s.error_class == "stream_read") ++n;
  }
  return n;
}

namespace {

// Why no delta can be taken (the server restarted or its counters went down, since the previous
// point or during this one), or "".
std::string reset_reason(const scrape::Snapshot* previous_after, const scrape::Snapshot& before,
                         const scrape::Snapshot& after, const Result<engines::EngineSignals>& delta) {
  std::string reset;
  if (previous_after && scrape::has_signals(previous_after->status)) {
    if (scrape::server_instance_id(*previous_after) != scrape::server_instance_id(before)) {
      reset = "the server's identity (process start time) changed since the previous point";
    } else if (auto d = engines::delta_signals(previous_after->signals, before.signals); !d) {
      reset = "between points: " + d.error().message;
    }
  }
  if (reset.empty() && scrape::server_instance_id(before) != scrape::server_instance_id(after)) {
    reset = "the server's identity (process start time) changed during the point";
  }
  if (reset.empty() && !delta) reset = delta.error().message;
  return reset;
}

// The point's counter deltas: requests, preemptions, the prefix cache, tokens, speculative decoding.
void put_counter_deltas(const engines::EngineSignals& d, const scrape::Snapshot& after, std::int64_t requests_sent,
                        boost::json::object& o) {
  o["requests_sent"] = requests_sent;
  if (auto v = requests_counter(d)) o["requests_delta"] = *v;
  if (auto v = d.value(Signal::kPreemptions)) o["preemptions_delta"] = *v;
  if (auto q = d.value(Signal::kPrefixCacheQueries)) {
    if (auto h = d.value(Signal::kPrefixCacheHits)) {
      o["prefix_cache_queries_delta"] = *q;
      o["prefix_cache_hits_delta"] = *h;
      o["prefix_cache_source"] = d.scalar(Signal::kPrefixCacheHits)->source + " / " +
                                 d.scalar(Signal::kPrefixCacheQueries)->source + " (deltas over the point)";
    }
  }
  if (auto v = d.value(Signal::kGenerationTokens)) o["generation_tokens_delta"] = *v;
  if (auto v = d.value(Signal::kPromptTokens)) o["prompt_tokens_delta"] = *v;
  // llama.cpp counts only the prompt tokens it computed (cache hits excluded).
  if (auto v = d.value(Signal::kComputedPromptTokens)) o["computed_prompt_tokens_delta"] = *v;
  // Speculative decoding: a TPOT that depends on acceptance is not a decode step of the same cost,
  // so each point says how many drafted tokens the engine accepted over it.
  const auto drafts = d.value(Signal::kSpecDrafts);
  const auto proposed = d.value(Signal::kSpecDraftTokens);
  const auto accepted = d.value(Signal::kSpecAcceptedTokens);
  if (drafts && proposed && accepted && *drafts > 0 && *proposed > 0) {
    o["spec_drafts_delta"] = *drafts;
    o["spec_draft_tokens_delta"] = *proposed;
    o["spec_accepted_tokens_delta"] = *accepted;
    o["spec_acceptance_rate"] = *accepted / *proposed;
    o["spec_mean_accepted_length"] = 1 + *accepted / *drafts;
    o["spec_source"] = d.scalar(Signal::kSpecAcceptedTokens)->source + " / " +
                       d.scalar(Signal::kSpecDraftTokens)->source + " (deltas over the point)";
  } else if (auto rate = after.signals.value(Signal::kSpecAcceptRate)) {
    o["spec_acceptance_rate"] = *rate;
    if (auto len = after.signals.value(Signal::kSpecAcceptLength)) o["spec_mean_accepted_length"] = *len;
    o["spec_source"] = after.signals.scalar(Signal::kSpecAcceptRate)->source +
                       " (the engine's own recent-window gauge, read after the point)";
  }
}

// Gauges: peaks over every good scrape of the point, before and after included, and the mean of the
// waiting-for-capacity gauge during it.
void put_gauge_peaks(const scrape::Snapshot& before, const std::vector<scrape::Snapshot>& during,
                     const scrape::Snapshot& after, boost::json::object& o) {
  std::optional<double> waiting, waiting_capacity, waiting_deferred, running, kv;
  auto peak = [](std::optional<double>& acc, std::optional<double> v) {
    if (v) acc = acc ? std::max(*acc, *v) : *v;
  };
  std::int64_t used = 0, failed = 0;
  auto absorb = [&](const scrape::Snapshot& s) {
    if (s.status != scrape::ScrapeStatus::kOk) {
      ++failed;
      return;
    }
    ++used;
    peak(waiting, s.signals.value(Signal::kWaiting));
    peak(waiting_capacity, s.signals.value(Signal::kWaitingCapacity));
    peak(waiting_deferred, s.signals.value(Signal::kWaitingDeferred));
    peak(running, s.signals.value(Signal::kRunning));
    peak(kv, s.signals.value(Signal::kKvUsage));
  };
  absorb(before);
  double capacity_sum = 0;
  std::int64_t capacity_n = 0;
  for (const auto& s : during) {
    absorb(s);
    if (s.status != scrape::ScrapeStatus::kOk) continue;
    auto v = s.signals.value(Signal::kWaitingCapacity);
    if (!v) v = s.signals.value(Signal::kWaiting);
    if (v) capacity_sum += *v, ++capacity_n;
  }
  absorb(after);
  // Without a reason breakdown every waiting request is counted as waiting for capacity.
  if (!waiting_capacity && waiting) waiting_capacity = waiting;
  if (waiting) o["waiting_max"] = *waiting;
  if (waiting_capacity) o["waiting_capacity_max"] = *waiting_capacity;
  if (capacity_n > 0) o["waiting_capacity_mean"] = capacity_sum / static_cast<double>(capacity_n);
  if (waiting_deferred) o["waiting_deferred_max"] = *waiting_deferred;
  if (running) o["running_max"] = *running;
  if (kv) o["kv_usage_peak"] = *kv;
  o["scrapes"] = used;
  if (failed) o["scrapes_failed"] = failed;
}

}  // namespace

boost::json::object server_evidence(const scrape::Snapshot* previous_after, const scrape::Snapshot& before,
                                    const std::vector<scrape::Snapshot>& during, const scrape::Snapshot& after,
                                    std::int64_t requests_sent) {
  for (const auto* s : {&before, &after}) {
    if (!scrape::has_signals(s->status) || s->status == scrape::ScrapeStatus::kStale) {
      auto o = not_measured(fmt::format("the scrape {} the point failed: {}", s == &before ? "before" : "after",
                                        scrape::failure_text(*s)));
      o["source"] = before.source;
      return o;
    }
  }
  boost::json::object o;
  o["status"] = "measured";
  o["source"] = before.source;
  o["engine"] = std::string(engines::engine_name(after.signals.engine));
  o["instance_before"] = scrape::server_instance_id(before);
  o["instance_after"] = scrape::server_instance_id(after);
  auto delta = engines::delta_signals(before.signals, after.signals);
  const std::string reset = reset_reason(previous_after, before, after, delta);
  o["restarted"] = !reset.empty();
  if (!reset.empty()) {
    o["reset_reason"] = reset;
    return o;  // no delta from a restarted server
  }
  put_counter_deltas(*delta, after, requests_sent, o);
  put_gauge_peaks(before, during, after, o);
  return o;
}

std::optional<double> parse_power_draw(std::string_view text) {
  double total = 0;
  bool any = false;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.remove_suffix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.front()))) line.remove_prefix(1);
    if (line.empty()) continue;
    auto v = promtext::parse_number(line);
    if (!v || !std::isfinite(*v) || *v < 0) return std::nullopt;
    total += *v;
    any = true;
  }
  return any ? std::optional<double>(total) : std::nullopt;
}

std::optional<double> parse_dcgm_energy_mj(std::string_view text) {
  auto e = promtext::parse_exposition(text);
  if (!e) return std::nullopt;
  std::optional<double> total;
  for (const auto& f : e->families) {
    for (const auto& s : f.samples) {
      if (s.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" && std::isfinite(s.value)) {
        total = total.value_or(0) + s.value;
      }
    }
  }
  return total;
}

boost::json::object energy_from_power(const std::vector<PowerSample>& samples, std::int64_t from_us, std::int64_t to_us,
                                      std::int64_t output_tokens) {
  std::vector<PowerSample> in;
  for (const auto& s : samples) {
    if (s.steady_us >= from_us && s.steady_us <= to_us) in.push_back(s);
  }
  if (in.size() < 2) {
    auto o = not_measured("fewer than two power samples inside the point");
    o["source"] = "nvidia-smi power.draw";
    return o;
  }
  double joules = 0;
  for (std::size_t i = 1; i < in.size(); ++i) {
    joules += (in[i].watts + in[i - 1].watts) / 2 * static_cast<double>(in[i].steady_us - in[i - 1].steady_us) / 1e6;
  }
  // The edges of the window outside the first and last sample are held at those samples' power.
  joules += in.front().watts * static_cast<double>(in.front().steady_us - from_us) / 1e6;
  joules += in.back().watts * static_cast<double>(to_us - in.back().steady_us) / 1e6;
  boost::json::object o;
  o["status"] = "measured";
  o["source"] = "nvidia-smi power.draw";
  o["method"] = "trapezoid over sampled power";
  o["samples"] = static_cast<std::int64_t>(in.size());
  o["joules"] = joules;
  if (joules > 0 && output_tokens > 0) o["output_tokens_per_joule"] = static_cast<double>(output_tokens) / joules;
  return o;
}

boost::json::object energy_from_dcgm(std::optional<double> before_mj, std::optional<double> after_mj,
                                     std::int64_t output_tokens, const std::string& source) {
  if (!before_mj || !after_mj) {
    auto o = not_measured("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION was not found before and after the point");
    o["source"] = source;
    return o;
  }
  if (*after_mj < *before_mj) {
    auto o = not_measured("the DCGM energy counter went down (exporter or GPU reset)");
    o["source"] = source;
    return o;
  }
  const double joules = (*after_mj - *before_mj) / 1000.0;
  boost::json::object o;
  o["status"] = "measured";
  o["source"] = source;
  o["method"] = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION delta (mJ)";
  o["joules"] = joules;
  if (joules > 0 && output_tokens > 0) o["output_tokens_per_joule"] = static_cast<double>(output_tokens) / joules;
  return o;
}

}  // namespace mpo::sweep
