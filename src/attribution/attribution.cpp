// The implementation of attribution/attribution.hpp. Server counter deltas joined to requests, only
// as far as the evidence allows (docs/FAK.md 3; fak's grades, counters, causes and decision order,
// with the improvements of its section 8.3).
#include "attribution/attribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace mpo::attribution {
namespace {

// Causes in fak's fixed order.
constexpr std::pair<const char*, const char*> kCauses[] = {
    {"prefix_cache_hits", "prefix-cache-hit"},
    {"cache_evictions", "cache-eviction"},
    {"queue_events", "queue"},
    {"preemptions", "preemption"},
};

CounterDelta subtract(const Counter& before, const Counter& after) {
  if (after.value >= before.value) return {CounterState::kOk, after.value - before.value};
  if (before.wrap_at && *before.wrap_at > before.value && after.wrap_at == before.wrap_at &&
      after.value < *before.wrap_at) {
    return {CounterState::kWrapped, (*before.wrap_at - before.value) + after.value};
  }
  return {CounterState::kReset, 0};
}

std::map<std::string, CounterDelta> subtract_sets(const CounterSet& before, const CounterSet& after,
                                                  std::vector<std::string>* resets, std::vector<std::string>* wraps) {
  std::set<std::string> names;
  for (const auto& [k, v] : before) names.insert(k);
  for (const auto& [k, v] : after) names.insert(k);
  std::map<std::string, CounterDelta> out;
  for (const auto& name : names) {
    auto b = before.find(name);
    auto a = after.find(name);
    if (b == before.end() || a == after.end()) {
      out[name] = {CounterState::kUnavailable, 0};
      continue;
    }
    const CounterDelta d = subtract(b->second, a->second);
    if (d.state == CounterState::kWrapped && wraps) wraps->push_back(name);
    if (d.state == CounterState::kReset && resets) resets->push_back(name);
    out[name] = d;
  }
  return out;
}

std::string format_duration(std::int64_t us) {
  // Go's time.Duration text for whole seconds and milliseconds, which is all a user gives here.
  if (us % 1'000'000 == 0) return fmt::format("{}s", us / 1'000'000);
  if (us % 1000 == 0) return fmt::format("{}ms", us / 1000);
  return fmt::format("{}µs", us);
}

std::vector<std::string> causes_from(const std::map<std::string, CounterDelta>& counters,
                                     std::map<std::string, double>* magnitudes) {
  std::vector<std::string> out;
  for (const auto& [counter, cause] : kCauses) {
    auto it = counters.find(counter);
    if (it != counters.end() && it->second.usable() && it->second.value > 0) {
      out.emplace_back(cause);
      if (magnitudes) (*magnitudes)[counter] = it->second.value;
    }
  }
  return out;
}

}  // namespace

const char* to_string(CounterState s) {
  switch (s) {
    case CounterState::kOk: return "ok";
    case CounterState::kWrapped: return "wrapped";
    case CounterState::kReset: return "reset";
    case CounterState::kUnavailable: return "unavailable";
  }
  return "unavailable";
}

const char* cause_of(std::string_view counter) {
  for (const auto& [c, cause] : kCauses) {
    if (counter == c) return cause;
  }
  return nullptr;
}

bool trusted_source(std::string_view s) {
  return s == "request-label" || s == "trace" || s == "response-usage" || s == "server-timings";
}

static AttributionResult& finish(AttributionResult& out, const std::vector<std::string>& ids);

WindowBounds window_bounds(const MetricsSnapshot& before, const MetricsSnapshot& after) {
  return {std::min(before.started_at_us ? before.started_at_us : before.scraped_at_us, before.scraped_at_us),
          after.scraped_at_us};
}

namespace {

// The observed requests that overlap the window, by id (sorted), and whether an id came twice.
struct Overlap {
  std::vector<std::string> ids;
  std::map<std::string, const RequestWindow*> by_id;
  bool duplicate = false;
};

Overlap overlapping(const std::vector<RequestWindow>& requests, const WindowBounds& bounds) {
  Overlap o;
  for (const auto& r : requests) {
    if (r.request_id.empty() || r.started_at_us == 0) continue;
    if (bounds.overlaps(r)) {
      if (o.by_id.count(r.request_id))
        o.duplicate = true;
      else
        o.ids.push_back(r.request_id);
      o.by_id[r.request_id] = &r;
    }
  }
  std::sort(o.ids.begin(), o.ids.end());
  return o;
}

// Per-request counters: those the snapshots correlate to a request (request label or trace), then
// ours, the evidence the server returned in each request's own response. Returns whether any
// correlation came from a source that is not trusted.
bool request_counters(const MetricsSnapshot& before, const MetricsSnapshot& after, const Overlap& o, MetricsDelta& d) {
  bool untrusted = false;
  std::set<std::string> correlated_ids;
  for (const auto& [id, c] : after.request_counters) correlated_ids.insert(id);
  for (const auto& [id, c] : before.request_counters) correlated_ids.insert(id);
  for (const auto& id : correlated_ids) {
    auto b = before.request_counters.find(id);
    auto a = after.request_counters.find(id);
    const std::string& source = a != after.request_counters.end() ? a->second.source : b->second.source;
    if (!source.empty() && !trusted_source(source)) untrusted = true;
    if (a != after.request_counters.end() && b == before.request_counters.end() && !a->second.source.empty()) {
      CounterSet zero;
      for (const auto& [k, v] : a->second.counters) zero[k] = Counter{0, v.wrap_at};
      d.request_counters[id] = {a->second.source, subtract_sets(zero, a->second.counters, nullptr, nullptr)};
    } else if (a != after.request_counters.end() && b != before.request_counters.end() && !a->second.source.empty() &&
               a->second.source == b->second.source) {
      d.request_counters[id] = {a->second.source,
                                subtract_sets(b->second.counters, a->second.counters, nullptr, nullptr)};
    } else {
      d.request_counters[id] = {"", {}};
    }
  }
  for (const auto& id : o.ids) {
    const RequestWindow* r = o.by_id.at(id);
    if (!r->returned || d.request_counters.count(id)) continue;
    std::map<std::string, CounterDelta> counters;
    for (const auto& [k, v] : r->returned->counters) counters[k] = {CounterState::kOk, v.value};
    d.request_counters[id] = {r->returned->source, std::move(counters)};
  }
  return untrusted;
}

// The window's grade and its reason: stale, cohort-only (duplicate ids, several requests,
// no usable request counter), contaminated (the server counted requests nobody observed) or
// isolated-window (one observed request is the whole delta); what the counters' resets and
// untrusted correlation take away is said after the reason.
void grade_window(const AttributionInput& in, std::size_t observed, bool duplicate, bool untrusted, MetricsDelta& d) {
  const MetricsSnapshot& before = *in.before;
  const MetricsSnapshot& after = *in.after;
  auto suffixes = [&] {
    std::string s;
    for (const auto& name : d.counter_resets) {
      if (cause_of(name)) {
        s += fmt::format("; {} reset, so no request cause is emitted; capture a fresh monotonic {} counter pair", name,
                         name);
      }
    }
    if (untrusted) s += "; untrusted correlation evidence is ignored; use request-label or trace correlation";
    return s;
  };
  const auto requests_it = d.counters.find("requests");
  const bool requests_usable = requests_it != d.counters.end() && requests_it->second.usable();
  const double R = requests_usable ? requests_it->second.value : 0;
  if (requests_usable && R < static_cast<double>(observed)) {
    d.notes.push_back(fmt::format(
        "the server counted {} finished request(s) in the window but {} observed request(s) overlap it: some were "
        "still running at the after scrape, or the server does not count them",
        R, observed));
  }

  const bool stale_flag = before.stale || after.stale;
  const bool too_old = in.max_scrape_age_us > 0 && in.observed_at_us > 0 &&
                       in.observed_at_us - after.scraped_at_us > in.max_scrape_age_us;
  if (stale_flag || too_old) {
    d.grade = "stale";
    d.reason =
        too_old
            ? fmt::format("latest scrape is older than {}; refresh the after scrape within the configured maximum age",
                          format_duration(in.max_scrape_age_us))
            : std::string(
                  "a scrape of the window ended after the next one was due (marked stale); scrape "
                  "less often or with a longer timeout");
    d.reason += suffixes();
  } else if (duplicate) {
    d.grade = "cohort-only";
    d.reason =
        "duplicate request IDs make the shared counter window ambiguous; use unique request IDs or trusted "
        "request-label or trace correlation" +
        suffixes();
  } else {
    if (requests_usable) {
      const double background = std::max(0.0, R - static_cast<double>(observed));
      d.background_unobserved_requests = background;
      if (background > 0) {
        d.grade = "contaminated";
        d.reason = fmt::format(
                       "server request counter proves {} unobserved request(s) in the scrape window; isolate "
                       "observed traffic or use request-label or trace correlation",
                       background) +
                   suffixes();
      } else if (observed == 1 && R == 1) {
        d.grade = "isolated-window";
        d.reason = "one observed request accounts for the complete server request delta" + suffixes();
      }
    }
    if (d.grade == "unavailable") {
      d.grade = "cohort-only";
      if (observed > 1) {
        d.reason =
            "multiple observed requests overlap the shared counter window; use request-label or trace correlation "
            "for per-request attribution";
      } else if (!requests_usable) {
        d.reason =
            "background traffic cannot be excluded without a usable server request counter; capture a monotonic "
            "server request counter in both snapshots or use request-label or trace correlation";
      } else {
        d.reason =
            "the server request counter does not prove an isolated request window; capture a window where one "
            "observed request matches one server request delta or use request-label or trace correlation";
      }
      d.reason += suffixes();
    }
  }
}

}  // namespace

AttributionResult attribute(const AttributionInput& in) {
  AttributionResult out;
  MetricsDelta& d = out.delta;
  if (!in.scrape_failure.empty()) {
    d.reason = "metrics scrape failed: " + in.scrape_failure +
               "; capture successful before and after metrics scrapes before retrying attribution";
    return out;
  }
  if (!in.before || !in.after) {
    d.reason = "both metrics scrapes are required; capture both snapshots around the request window";
    return out;
  }
  const MetricsSnapshot& before = *in.before;
  const MetricsSnapshot& after = *in.after;
  d.server_instance_id = after.server_instance_id;
  d.scrape_started_at_us = before.scraped_at_us;
  d.scrape_ended_at_us = after.scraped_at_us;
  if (!(after.scraped_at_us > before.scraped_at_us)) {
    d.reason = "scrape bounds are invalid; capture an after scrape timestamp later than the before scrape";
    return out;
  }
  const WindowBounds bounds = window_bounds(before, after);
  const Overlap overlap = overlapping(in.requests, bounds);
  const std::vector<std::string>& ids = overlap.ids;
  const bool duplicate = overlap.duplicate;
  d.overlapping_request_ids = ids;
  d.overlapping_observed_requests = static_cast<std::int64_t>(ids.size());
  if (before.server_instance_id.empty() || after.server_instance_id.empty()) {
    d.reason =
        "server-instance identity is unavailable; record the same non-empty server instance ID in both snapshots";
    return finish(out, ids);
  }
  if (before.server_instance_id != after.server_instance_id) {
    d.server_instance_id = before.server_instance_id + "->" + after.server_instance_id;
    d.reason = "server instance changed between scrapes; capture a new before/after pair from one server instance";
    return finish(out, ids);
  }
  d.counters = subtract_sets(before.counters, after.counters, &d.counter_resets, &d.counter_wraps);
  const bool untrusted = request_counters(before, after, overlap, d);

  std::map<std::string, double> shared_magnitudes;
  out.shared_causes = causes_from(d.counters, &shared_magnitudes);
  grade_window(in, ids.size(), duplicate, untrusted, d);
  if (d.grade == "stale" || d.grade == "unavailable") out.shared_causes.clear(), shared_magnitudes.clear();
  out.shared_magnitudes = std::move(shared_magnitudes);
  return finish(out, ids);
}

// Per-request rows and the cohort (3.6), whatever the grade.
static AttributionResult& finish(AttributionResult& out, const std::vector<std::string>& ids) {
  const MetricsDelta& d = out.delta;
  const auto& shared_magnitudes = out.shared_magnitudes;
  for (const auto& id : ids) {
    RequestAttribution row;
    row.request_id = id;
    row.grade = d.grade;
    row.reason = d.reason;
    auto rc = d.request_counters.find(id);
    std::map<std::string, double> own;
    std::vector<std::string> own_causes;
    if (rc != d.request_counters.end()) own_causes = causes_from(rc->second.second, &own);
    if (rc != d.request_counters.end() && trusted_source(rc->second.first) && d.grade != "stale" &&
        d.grade != "unavailable" && !own_causes.empty()) {
      row.grade = "request-correlated";
      row.causes = own_causes;
      row.magnitudes = own;
      row.correlation_source = rc->second.first;
      row.reason = rc->second.first == "response-usage" || rc->second.first == "server-timings"
                       ? "the server's own response to this request identifies the evidence"
                       : "backend request label or trace identifies the evidence owner";
    } else if (d.grade == "isolated-window") {
      row.causes = out.shared_causes;
      row.magnitudes = shared_magnitudes;
    }
    for (const auto& [counter, cause] : kCauses) {
      auto it = d.counters.find(counter);
      row.cause_counters[counter] = it == d.counters.end() ? CounterState::kUnavailable : it->second.state;
    }
    out.requests.push_back(std::move(row));
  }
  if (d.grade != "isolated-window") {
    CohortAttribution c;
    c.request_ids = ids;
    c.grade = d.grade;
    c.causes = out.shared_causes;
    c.reason = d.reason;
    c.magnitudes = shared_magnitudes;
    out.cohort = std::move(c);
  }
  return out;
}

}  // namespace mpo::attribution
