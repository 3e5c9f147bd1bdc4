// The implementation of live/engine_evidence.hpp. The engine's own numbers over a window of its
// /metrics snapshots (the proxy's `--scrape` file): speculative-decoding acceptance, the queue and
// load gauges, the queue-time histogram and preemptions, as the report's ranking reads them
// (report::EngineEvidence).
#include "live/engine_evidence.hpp"

#include <cmath>

#include "promtext/histogram.hpp"
#include "scrape/facts_report.hpp"

namespace mpo::live {
namespace {

report::EngineGauge gauge_of(const scrape::GaugeOverWindow& g) {
  return report::EngineGauge{g.source, g.samples, g.max, g.mean, g.share_above_zero};
}

}  // namespace

EngineWindow engine_window(const std::vector<scrape::Snapshot>& snapshots) {
  EngineWindow out;
  const auto facts = scrape::build_facts_report(snapshots);
  if (facts.last) {
    out.waiting_now = facts.last->signals.value(engines::Signal::kWaiting);
    out.running_now = facts.last->signals.value(engines::Signal::kRunning);
    out.kv_usage_now = facts.last->signals.value(engines::Signal::kKvUsage);
  }
  if (!facts.delta) {
    out.no_window = facts.reset;
    return out;
  }
  out.caution = facts.caution;
  report::EngineEvidence e;
  e.window = facts.window;
  e.engine = std::string(engines::engine_name(facts.delta->engine));
  bool any = false;
  if (const engines::Fact* spec = engines::find_fact(facts.facts, "speculative_decoding");
      spec && spec->status != engines::FactStatus::kUnavailable) {
    const engines::FactValue* rate = spec->value("acceptance_rate");
    if (!rate) rate = spec->value("spec_accept_rate");
    const engines::FactValue* length = spec->value("mean_accepted_length");
    if (!length) length = spec->value("spec_accept_length");
    if (rate) {
      e.spec_acceptance_rate = rate->value;
      if (length) e.spec_mean_accepted_length = length->value;
      for (const auto& src : spec->sources) e.spec_source += (e.spec_source.empty() ? "" : ", ") + src;
      any = true;
    }
  }
  for (const auto& g : facts.gauges) {
    if (g.signal == engines::Signal::kWaiting) e.waiting = gauge_of(g), any = true;
    if (g.signal == engines::Signal::kRunning) e.running = gauge_of(g);
  }
  if (const engines::HistogramSignal* q = facts.delta->histogram(engines::Signal::kQueueTime);
      q && q->merged.count && *q->merged.count > 0 && q->merged.sum) {
    report::EngineQueueTime qt;
    qt.source = q->source;
    qt.window = facts.window;
    qt.requests = *q->merged.count;
    for (const promtext::Bucket& b : q->merged.buckets) {
      if (std::isfinite(b.upper) && 1000 * b.upper >= report::kQueueThresholdMs) {
        qt.over = *q->merged.count - b.cumulative;
        qt.over_bound_ms = 1000 * b.upper;
        break;
      }
    }
    qt.mean_ms = 1000 * *q->merged.sum / *q->merged.count;
    if (const auto b = promtext::quantile_bucket(0.5, q->merged.buckets)) {
      qt.p50_bucket_ms = std::pair(1000 * b->first, 1000 * b->second);
    }
    e.queue_time = qt;
    any = true;
  }
  if (const engines::ScalarSignal* p = facts.delta->scalar(engines::Signal::kPreemptions)) {
    e.preemptions = p->value;
    e.preemptions_source = p->source;
  }
  for (const auto& snap : snapshots) {
    if (const auto kv = snap.signals.value(engines::Signal::kKvUsage)) e.kv_usage.push_back({snap.started_at_us, *kv});
  }
  if (any) out.evidence = std::move(e);
  return out;
}

}  // namespace mpo::live
