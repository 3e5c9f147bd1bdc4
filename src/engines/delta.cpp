// The implementation of engines/delta.hpp. Two snapshots' signals as one interval: counters and
// histograms become their increase, gauges keep the later value.
#include "engines/delta.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "promtext/number.hpp"

namespace mpo::engines {
namespace {

// The increase of each part; a part that went down is a reset, a part the first scrape lacks makes
// the split unknown over the window (no parts; the total stands).
Result<std::vector<SignalPart>> part_increases(const std::vector<SignalPart>& before,
                                               const std::vector<SignalPart>& after, const std::string& source,
                                               std::vector<std::string>& notes) {
  std::vector<SignalPart> out;
  for (const SignalPart& p : after) {
    auto prev = std::find_if(before.begin(), before.end(), [&](const SignalPart& x) { return x.key == p.key; });
    if (prev == before.end()) {
      notes.push_back(
          fmt::format("{}: part \"{}\" appeared after the first scrape; its split is not claimed", source, p.key));
      return std::vector<SignalPart>{};
    }
    if (p.value < prev->value) {
      return make_error(errc::kScrapeReset,
                        fmt::format("{} part \"{}\" went down from {} to {}: a reset; no delta", source, p.key,
                                    promtext::format_number(prev->value), promtext::format_number(p.value)));
    }
    out.push_back(SignalPart{p.key, p.value - prev->value});
  }
  return out;
}

}  // namespace

Result<EngineSignals> delta_signals(const EngineSignals& before, const EngineSignals& after) {
  if (before.engine != after.engine || before.prefix != after.prefix) {
    return make_error(errc::kScrapeIdentity, fmt::format("the engine changed between scrapes ({} -> {}); no delta",
                                                         engine_name(before.engine), engine_name(after.engine)));
  }
  const auto start_before = before.value(Signal::kProcessStartTime);
  const auto start_after = after.value(Signal::kProcessStartTime);
  if (start_before && start_after && *start_before != *start_after) {
    return make_error(errc::kScrapeReset,
                      fmt::format("process_start_time_seconds changed from {} to {}: the server "
                                  "restarted between scrapes, so its counters restarted; no delta",
                                  promtext::format_number(*start_before), promtext::format_number(*start_after)));
  }
  EngineSignals d = after;
  for (std::size_t i = 0; i < kSignalCount; ++i) {
    const auto s = static_cast<Signal>(i);
    if (signal_kind(s) == SignalKind::kCounter && d.scalars[i]) {
      if (!before.scalars[i]) {
        d.notes.push_back(
            fmt::format("{} appeared after the first scrape; no increase is claimed", d.scalars[i]->source));
        d.scalars[i].reset();
        continue;
      }
      const double a = before.scalars[i]->value;
      const double b = d.scalars[i]->value;
      if (b < a) {
        return make_error(errc::kScrapeReset,
                          fmt::format("{} went down from {} to {}: a counter reset (a restart or a "
                                      "re-created exporter); no delta",
                                      d.scalars[i]->source, promtext::format_number(a), promtext::format_number(b)));
      }
      d.scalars[i]->value = b - a;
      if (auto parts = part_increases(before.scalars[i]->parts, d.scalars[i]->parts, d.scalars[i]->source, d.notes);
          !parts) {
        return parts.error();
      } else {
        d.scalars[i]->parts = std::move(*parts);
      }
    }
    if (d.histograms[i]) {
      const HistogramSignal* prev = before.histogram(s);
      promtext::HistogramSeries& h = d.histograms[i]->merged;
      if (!prev || prev->merged.buckets.size() != h.buckets.size()) {
        d.notes.push_back(fmt::format("{}: no matching histogram in the first scrape; no increase is claimed",
                                      d.histograms[i]->source));
        d.histograms[i].reset();
        continue;
      }
      const promtext::HistogramSeries& p = prev->merged;
      for (std::size_t k = 0; k < h.buckets.size(); ++k) {
        if (h.buckets[k].upper != p.buckets[k].upper) {
          return make_error(errc::kScrapeReset, fmt::format("{}: bucket bounds changed between scrapes; no delta",
                                                            d.histograms[i]->source));
        }
        if (h.buckets[k].cumulative < p.buckets[k].cumulative) {
          return make_error(
              errc::kScrapeReset,
              fmt::format("{}: bucket le=\"{}\" went down from {} to {}: a reset; no delta", d.histograms[i]->source,
                          promtext::format_number(h.buckets[k].upper), promtext::format_number(p.buckets[k].cumulative),
                          promtext::format_number(h.buckets[k].cumulative)));
        }
        h.buckets[k].cumulative -= p.buckets[k].cumulative;
      }
      if (h.count && p.count) {
        if (*h.count < *p.count) {
          return make_error(errc::kScrapeReset,
                            fmt::format("{}_count went down: a reset; no delta", d.histograms[i]->source));
        }
        *h.count -= *p.count;
      } else {
        h.count.reset();
      }
      if (h.sum && p.sum)
        *h.sum -= *p.sum;
      else
        h.sum.reset();
    }
  }
  return d;
}

}  // namespace mpo::engines
