// The implementation of attribution/adapter.hpp. From what this project records to attribution's
// neutral inputs: scrape snapshots (any engine the catalogs know) to MetricsSnapshot, ledger lines
// to RequestWindow, and the windows to grade.
#include "attribution/adapter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/simdjson_values.hpp"
#include "core/time.hpp"
#include "engines/signals.hpp"

namespace mpo::attribution {
namespace {

using engines::Signal;

void put(CounterSet& c, const char* name, std::optional<double> v) {
  if (v) c[name] = Counter{*v, std::nullopt};
}

}  // namespace

MetricsSnapshot neutral_snapshot(const scrape::Snapshot& s) {
  MetricsSnapshot m;
  m.started_at_us = s.started_at_us;
  m.scraped_at_us = s.ended_at_us;
  m.source = s.source;
  if (!scrape::has_signals(s.status)) {
    m.failure = fmt::format("{} ({})", scrape::failure_text(s), s.source);
    return m;
  }
  m.stale = s.status == scrape::ScrapeStatus::kStale;
  m.server_instance_id = scrape::server_instance_id(s);
  m.engine = std::string(engines::engine_name(s.signals.engine));
  m.models = s.signals.models;
  m.process_start_time_s = s.signals.value(Signal::kProcessStartTime);
  const auto& sig = s.signals;
  std::optional<double> requests = sig.value(Signal::kRequestsTotal);
  if (!requests) {
    if (auto f = sig.value(Signal::kRequestsFinished)) requests = *f + sig.value(Signal::kRequestsFailed).value_or(0);
  }
  put(m.counters, "requests", requests);
  put(m.counters, "prefix_cache_hits", sig.value(Signal::kPrefixCacheHits));
  put(m.counters, "prefix_cache_queries", sig.value(Signal::kPrefixCacheQueries));
  put(m.counters, "preemptions", sig.value(Signal::kPreemptions));
  put(m.counters, "prompt_tokens", sig.value(Signal::kPromptTokens));
  put(m.counters, "generation_tokens", sig.value(Signal::kGenerationTokens));
  if (const auto* h = sig.histogram(Signal::kQueueTime); h && h->merged.count && !h->merged.buckets.empty()) {
    // Requests that waited longer than the lowest bucket bound (vLLM: 0.3 s).
    m.counters["queue_events"] = Counter{*h->merged.count - h->merged.buckets.front().cumulative, std::nullopt};
    if (h->merged.sum) m.counters["queue_time_seconds"] = Counter{*h->merged.sum, std::nullopt};
  }
  return m;
}

RequestWindow request_window(const ledger::LedgerRecord& r) {
  RequestWindow w;
  w.request_id = r.observation_id;
  w.started_at_us = r.started_at_us;
  w.ended_at_us = r.ended_at_us.value_or(0);
  if (r.server_timings) {
    simdjson::dom::parser parser;
    simdjson::dom::element e;
    if (parser.parse(*r.server_timings).get(e) == simdjson::SUCCESS) {
      if (auto cache_n = sj::number_field(e, "cache_n")) {
        CorrelatedCounters c;
        c.source = "server-timings";
        c.counters["prefix_cache_hits"] = Counter{*cache_n, std::nullopt};
        w.returned = std::move(c);
        return w;
      }
    }
  }
  if (r.cached_prompt_tokens) {
    CorrelatedCounters c;
    c.source = "response-usage";
    c.counters["prefix_cache_hits"] = Counter{static_cast<double>(*r.cached_prompt_tokens), std::nullopt};
    w.returned = std::move(c);
  }
  return w;
}

Result<WindowChoice> parse_window(std::string_view text) {
  WindowChoice c;
  if (text == "auto" || text == "consecutive") return c;
  if (text == "per-request") {
    c.mode = WindowMode::kPerRequest;
    return c;
  }
  const auto comma = text.find(',');
  if (comma == std::string_view::npos) {
    return make_error(errc::kAttributeWindow,
                      fmt::format("--window '{}': use auto, per-request or FROM,TO (RFC 3339)", text));
  }
  auto from = parse_rfc3339(text.substr(0, comma));
  auto to = parse_rfc3339(text.substr(comma + 1));
  if (!from || !to)
    return make_error(errc::kAttributeWindow, fmt::format("--window '{}': FROM and TO must be RFC 3339 times", text));
  if (!(*to > *from)) return make_error(errc::kAttributeWindow, "--window: TO must be after FROM");
  c.mode = WindowMode::kExplicit;
  c.from_us = *from;
  c.to_us = *to;
  return c;
}

void sort_snapshots(std::vector<MetricsSnapshot>& s) {
  std::stable_sort(s.begin(), s.end(), [](const MetricsSnapshot& a, const MetricsSnapshot& b) {
    if (a.scraped_at_us != b.scraped_at_us) return a.scraped_at_us < b.scraped_at_us;
    return a.source < b.source;
  });
}

std::vector<Window> choose_windows(const std::vector<MetricsSnapshot>& snaps,
                                   const std::vector<RequestWindow>& requests, const WindowChoice& choice) {
  std::vector<Window> out;
  if (snaps.size() < 2) return out;
  // The last snapshot that ended at or before t, and the first that started at or after t.
  auto at_or_before = [&](std::int64_t t) -> std::optional<std::size_t> {
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < snaps.size(); ++i) {
      if (snaps[i].scraped_at_us <= t) best = i;
    }
    return best;
  };
  auto at_or_after = [&](std::int64_t t) -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < snaps.size(); ++i) {
      if ((snaps[i].started_at_us ? snaps[i].started_at_us : snaps[i].scraped_at_us) >= t) return i;
    }
    return std::nullopt;
  };
  switch (choice.mode) {
    case WindowMode::kConsecutive:
      for (std::size_t i = 0; i + 1 < snaps.size(); ++i) out.push_back({i, i + 1, {}});
      break;
    case WindowMode::kExplicit: {
      auto b = at_or_before(choice.from_us);
      auto a = at_or_after(choice.to_us);
      if (b && a && *a > *b) out.push_back({*b, *a, {}});
      break;
    }
    case WindowMode::kPerRequest: {
      std::map<std::pair<std::size_t, std::size_t>, std::vector<std::string>> pairs;
      for (const auto& r : requests) {
        if (r.started_at_us == 0 || r.ended_at_us == 0) continue;
        auto b = at_or_before(r.started_at_us);
        auto a = at_or_after(r.ended_at_us);
        if (b && a && *a > *b) pairs[{*b, *a}].push_back(r.request_id);
      }
      for (auto& [k, ids] : pairs) {
        std::sort(ids.begin(), ids.end());
        out.push_back({k.first, k.second, std::move(ids)});
      }
      break;
    }
  }
  return out;
}

bool runs_inference(const ledger::LedgerRecord& r) {
  const std::string_view op = r.operation ? std::string_view(*r.operation) : std::string_view();
  if (op == "models") return false;
  if (op != "other") return true;
  return r.ttft_ms.has_value() || r.prompt_tokens.value_or(0) > 0 || r.completion_tokens.value_or(0) > 0;
}

AttributionRun attribute_run(std::vector<scrape::Snapshot> snapshots, const std::vector<ledger::LedgerRecord>& records,
                             const WindowChoice& choice, std::int64_t max_scrape_age_us, bool every_line) {
  AttributionRun run;
  for (const auto& s : snapshots) run.snapshots.push_back(neutral_snapshot(s));
  sort_snapshots(run.snapshots);
  if (!every_line) run.left_out.emplace();
  for (const auto& r : records) {
    if (!every_line && !runs_inference(r)) {
      ++(*run.left_out)[r.operation ? std::string(*r.operation) : std::string("other")];
      continue;
    }
    run.requests.push_back(request_window(r));
  }
  std::sort(run.requests.begin(), run.requests.end(), [](const RequestWindow& a, const RequestWindow& b) {
    if (a.started_at_us != b.started_at_us) return a.started_at_us < b.started_at_us;
    return a.request_id < b.request_id;
  });
  for (const auto& w : choose_windows(run.snapshots, run.requests, choice)) {
    AttributionInput in;
    const auto& b = run.snapshots[w.before];
    const auto& a = run.snapshots[w.after];
    if (!b.failure.empty())
      in.scrape_failure = b.failure;
    else if (!a.failure.empty())
      in.scrape_failure = a.failure;
    in.before = b;
    in.after = a;
    // Only the requests that overlap the window (attribute() grades those): a long run has many
    // windows and many requests; they are sorted by start, so the scan stops at the upper bound.
    const WindowBounds bounds = window_bounds(b, a);
    const auto last = std::lower_bound(run.requests.begin(), run.requests.end(), bounds.hi,
                                       [](const RequestWindow& r, std::int64_t t) { return r.started_at_us < t; });
    for (auto it = run.requests.begin(); it != last; ++it) {
      if (bounds.overlaps(*it)) in.requests.push_back(*it);
    }
    if (max_scrape_age_us > 0) {
      // Staleness against when the window's own requests were last observed.
      std::int64_t observed = 0;
      for (const auto& r : run.requests) {
        const std::int64_t end = r.ended_at_us ? r.ended_at_us : r.started_at_us;
        if (r.started_at_us < a.scraped_at_us && end > b.scraped_at_us) observed = std::max(observed, end);
      }
      in.observed_at_us = observed;
      in.max_scrape_age_us = max_scrape_age_us;
    }
    run.windows.push_back({w, attribute(in)});
  }
  return run;
}

}  // namespace mpo::attribution
