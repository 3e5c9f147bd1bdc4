// The implementation of attribution/render.hpp. Attribution output: ours
// (`modelperfobs.attribution.v1`, one document), fak's (`fak-model-perf-attribution/1`, one
// document per window, as JSON lines), and markdown.
#include "attribution/render.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/envelope.hpp"
#include "core/go_json.hpp"
#include "core/time.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"

namespace mpo::attribution {
namespace {

boost::json::value number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 9e15) return static_cast<std::int64_t>(v);
  return v;
}

boost::json::array strings(const std::vector<std::string>& v) {
  boost::json::array a;
  for (const auto& s : v) a.push_back(boost::json::string(s));
  return a;
}

boost::json::object counters_json(const std::map<std::string, CounterDelta>& counters, bool fak) {
  boost::json::object o;
  for (const auto& [name, d] : counters) {
    if (fak) {
      bool known = false;
      for (const char* k : kFakCounters) known = known || name == k;
      if (!known) continue;
    }
    boost::json::object c;
    if (d.usable() && (!fak || d.value != 0)) c["value"] = number(d.value);
    c["state"] = to_string(d.state);
    o[name] = std::move(c);
  }
  return o;
}

boost::json::object magnitudes_json(const std::map<std::string, double>& m) {
  boost::json::object o;
  for (const auto& [k, v] : m) o[k] = number(v);
  return o;
}

const MetricsSnapshot& after_of(const AttributionRun& run, const GradedWindow& w) {
  return run.snapshots[w.window.after];
}

}  // namespace

std::string fak_json_lines(const AttributionRun& run) {
  std::string out;
  for (const auto& w : run.windows) {
    const auto& r = w.result;
    const auto& d = r.delta;
    const std::string started = go_time(d.scrape_started_at_us);
    const std::string ended = go_time(d.scrape_ended_at_us);
    boost::json::object delta;
    if (!d.server_instance_id.empty()) delta["server_instance_id"] = d.server_instance_id;
    delta["scrape_started_at"] = started;
    delta["scrape_ended_at"] = ended;
    auto counters = counters_json(d.counters, true);
    if (!counters.empty()) delta["counters"] = std::move(counters);
    boost::json::object rc;
    for (const auto& [id, entry] : d.request_counters) {
      if (entry.first != "request-label" && entry.first != "trace" && !entry.first.empty())
        continue;  // fak's sources only
      boost::json::object e;
      if (!entry.first.empty()) e["source"] = entry.first;
      e["counters"] = counters_json(entry.second, true);
      rc[id] = std::move(e);
    }
    if (!rc.empty()) delta["request_counters"] = std::move(rc);
    if (!d.overlapping_request_ids.empty()) delta["overlapping_request_ids"] = strings(d.overlapping_request_ids);
    delta["overlapping_observed_requests"] = d.overlapping_observed_requests;
    if (d.background_unobserved_requests)
      delta["background_unobserved_requests"] = number(*d.background_unobserved_requests);
    if (!d.counter_resets.empty()) delta["counter_resets"] = strings(d.counter_resets);
    if (!d.counter_wraps.empty()) delta["counter_wraps"] = strings(d.counter_wraps);
    delta["grade"] = d.grade;
    delta["reason"] = d.reason;
    boost::json::object o;
    o["schema"] = kFakSchema;
    o["delta"] = std::move(delta);
    if (r.requests.empty()) {
      o["requests"] = nullptr;
    } else {
      boost::json::array rows;
      for (const auto& q : r.requests) {
        // fak knows its own sources only: evidence from the response is ours, and shows as such.
        const bool fak_source = q.correlation_source == "request-label" || q.correlation_source == "trace";
        boost::json::object row;
        row["request_id"] = q.request_id;
        row["grade"] = q.grade == "request-correlated" && !fak_source ? d.grade : q.grade;
        const auto& causes = q.grade == "request-correlated" && !fak_source
                                 ? (d.grade == "isolated-window" ? r.shared_causes : std::vector<std::string>{})
                                 : q.causes;
        if (!causes.empty()) row["causes"] = strings(causes);
        if (fak_source && !q.correlation_source.empty()) row["correlation_source"] = q.correlation_source;
        if (!d.server_instance_id.empty()) row["server_instance_id"] = d.server_instance_id;
        row["scrape_started_at"] = started;
        row["scrape_ended_at"] = ended;
        row["reason"] = q.grade == "request-correlated" && !fak_source ? d.reason : q.reason;
        rows.push_back(std::move(row));
      }
      o["requests"] = std::move(rows);
    }
    if (r.cohort) {
      boost::json::object c;
      if (!r.cohort->request_ids.empty()) c["request_ids"] = strings(r.cohort->request_ids);
      c["grade"] = r.cohort->grade;
      if (!r.cohort->causes.empty()) c["causes"] = strings(r.cohort->causes);
      if (!d.server_instance_id.empty()) c["server_instance_id"] = d.server_instance_id;
      c["scrape_started_at"] = started;
      c["scrape_ended_at"] = ended;
      c["reason"] = r.cohort->reason;
      o["cohort"] = std::move(c);
    }
    out += go_marshal(o) + "\n";
  }
  return out;
}

namespace {

// Each request's row of a window: its grade, causes and magnitudes, where its counters came from.
boost::json::array request_rows_json(const AttributionResult& r) {
  boost::json::array rows;
  for (const auto& q : r.requests) {
    boost::json::object row;
    row["request_id"] = q.request_id;
    row["grade"] = q.grade;
    row["causes"] = strings(q.causes);
    row["magnitudes"] = magnitudes_json(q.magnitudes);
    if (!q.correlation_source.empty()) row["correlation_source"] = q.correlation_source;
    boost::json::object states;
    for (const auto& [k, v] : q.cause_counters) states[k] = to_string(v);
    row["cause_counters"] = std::move(states);
    row["reason"] = q.reason;
    rows.push_back(std::move(row));
  }
  return rows;
}

// One graded window: the server, the scrapes' bounds, the grade and why, the counters, the cohort
// and the requests' rows.
boost::json::object window_json(const AttributionRun& run, const GradedWindow& w) {
  const auto& r = w.result;
  const auto& d = r.delta;
  const auto& a = after_of(run, w);
  boost::json::object j;
  boost::json::object server;
  server["instance_id"] = d.server_instance_id;
  server["source"] = a.source;
  server["engine"] = a.engine;
  server["models"] = strings(a.models);
  if (a.process_start_time_s) server["process_start_time_s"] = *a.process_start_time_s;
  j["server"] = std::move(server);
  j["scrape_started_at"] = format_rfc3339_us(d.scrape_started_at_us);
  j["scrape_ended_at"] = format_rfc3339_us(d.scrape_ended_at_us);
  j["grade"] = d.grade;
  j["reason"] = d.reason;
  if (!d.notes.empty()) j["notes"] = strings(d.notes);
  j["counters"] = counters_json(d.counters, false);
  j["overlapping_request_ids"] = strings(d.overlapping_request_ids);
  j["overlapping_observed_requests"] = d.overlapping_observed_requests;
  // Unknown is not zero: absent when the server's request counter is not usable.
  if (d.background_unobserved_requests) j["background_unobserved_requests"] = number(*d.background_unobserved_requests);
  j["counter_resets"] = strings(d.counter_resets);
  j["counter_wraps"] = strings(d.counter_wraps);
  if (!w.window.for_requests.empty()) j["enclosing_window_of"] = strings(w.window.for_requests);
  if (r.cohort) {
    boost::json::object c;
    c["request_ids"] = strings(r.cohort->request_ids);
    c["grade"] = r.cohort->grade;
    c["causes"] = strings(r.cohort->causes);
    c["magnitudes"] = magnitudes_json(r.cohort->magnitudes);
    c["reason"] = r.cohort->reason;
    j["cohort"] = std::move(c);
  }
  j["requests"] = request_rows_json(r);
  return j;
}

}  // namespace

std::string attribution_json(const AttributionRun& run, const RunInputs& in) {
  boost::json::object o;
  put_envelope_head(o, kSchema, in.created_at_us, in.tool_version);
  boost::json::object inputs;
  if (!in.ledger.empty()) inputs["ledger"] = in.ledger;
  if (!in.ledger_sha256.empty()) inputs["ledger_sha256"] = strings(in.ledger_sha256);
  if (!in.scrapes.empty()) inputs["scrapes"] = in.scrapes;
  if (!in.scrapes_sha256.empty()) inputs["scrapes_sha256"] = strings(in.scrapes_sha256);
  if (!in.probe.empty()) inputs["probe"] = in.probe;
  inputs["window"] = in.window;
  if (in.max_scrape_age_s > 0) inputs["max_scrape_age_s"] = in.max_scrape_age_s;
  inputs["requests"] = static_cast<std::int64_t>(run.requests.size());
  if (run.left_out) {
    // The lines that run no inference, left out of the requests (by operation; {} when none).
    boost::json::object left_out;
    for (const auto& [op, n] : *run.left_out) left_out[op] = static_cast<std::int64_t>(n);
    inputs["calls_left_out"] = std::move(left_out);
  }
  inputs["snapshots"] = static_cast<std::int64_t>(run.snapshots.size());
  o["inputs"] = std::move(inputs);
  boost::json::array windows;
  std::map<std::string, std::int64_t> by_grade;
  std::vector<std::string> reasons;
  for (const auto& w : run.windows) {
    const auto& d = w.result.delta;
    ++by_grade[d.grade];
    boost::json::object j = window_json(run, w);
    if ((d.grade == "unavailable" || d.grade == "stale") &&
        std::find(reasons.begin(), reasons.end(), d.grade + ": " + d.reason) == reasons.end()) {
      reasons.push_back(d.grade + ": " + d.reason);
    }
    windows.push_back(std::move(j));
  }
  boost::json::object grades;
  for (const auto& [g, n] : by_grade) grades[g] = n;
  o["result"] = boost::json::object{{"windows", std::move(windows)}, {"windows_by_grade", std::move(grades)}};
  if (run.windows.empty()) reasons.push_back("no window: fewer than two snapshots cover the requests");
  o["validity"] = validity_object({reasons.empty(), reasons, {}});
  return go_marshal_indent(o);
}

namespace {

// The windows' table and the per-request causes, cell by cell: markdown and the page show the same.
const std::vector<std::string> kWindowHeaders = {"from", "to", "grade", "observed", "background", "causes", "reason"};
const std::vector<std::string> kCauseHeaders = {"requests", "grade", "causes", "magnitudes", "source"};

std::vector<std::vector<std::string>> window_rows(const AttributionRun& run) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& w : run.windows) {
    const auto& d = w.result.delta;
    std::string causes;
    for (const auto& c : w.result.shared_causes) causes += (causes.empty() ? "" : ", ") + c;
    // A window whose scrape failed has no delta times: the snapshots' own times, or a dash.
    auto at = [&](std::int64_t delta_us, std::size_t snapshot) {
      std::int64_t t = delta_us;
      if (t == 0 && snapshot < run.snapshots.size()) {
        const auto& snap = run.snapshots[snapshot];
        t = snap.scraped_at_us != 0 ? snap.scraped_at_us : snap.started_at_us;
      }
      return t == 0 ? std::string("-") : format_rfc3339_us(t).substr(11);
    };
    rows.push_back({at(d.scrape_started_at_us, w.window.before), at(d.scrape_ended_at_us, w.window.after), d.grade,
                    std::to_string(d.overlapping_observed_requests),
                    d.background_unobserved_requests ? fmt::format("{}", *d.background_unobserved_requests) : "unknown",
                    causes.empty() ? "-" : causes, d.reason});
  }
  return rows;
}

// The causes that reach requests, one row per distinct (grade, causes, magnitudes, source), listing
// the requests it reaches: a request in several windows, or many requests with the same evidence,
// make one row, not one each (issue 37: 24 requests gave 148 rows). `note` says, once, a cause
// every request shares at the size of a chat template's common start (a few tokens of
// prefix-cache hit): that is the template, not the prompt served from the cache.
struct CauseRows {
  std::vector<std::vector<std::string>> rows;
  std::string note;
};

constexpr double kTemplateTokens = 16;  // a chat template's shared start (as sweep's cache allowance)

CauseRows cause_rows(const AttributionRun& run) {
  struct Group {
    std::vector<std::string> key;  // grade, causes, magnitudes, source
    std::vector<std::string> requests;
    std::set<std::string> seen;
    bool template_sized = false;
  };
  std::vector<Group> groups;
  for (const auto& w : run.windows) {
    for (const auto& q : w.result.requests) {
      if (q.causes.empty()) continue;
      std::string causes;
      for (const auto& c : q.causes) causes += (causes.empty() ? "" : ", ") + c;
      std::string mags;
      for (const auto& [k, v] : q.magnitudes) mags += fmt::format("{}{} {}", mags.empty() ? "" : ", ", k, v);
      std::vector<std::string> key{q.grade, causes, mags, q.correlation_source};
      auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) { return x.key == key; });
      if (g == groups.end()) {
        const auto hits = q.magnitudes.find("prefix_cache_hits");
        const bool small_hit = q.causes.size() == 1 && q.causes.front() == "prefix-cache-hit" &&
                               hits != q.magnitudes.end() && hits->second <= kTemplateTokens;
        groups.push_back({key, {}, {}, small_hit});
        g = std::prev(groups.end());
      }
      if (g->seen.insert(q.request_id).second) g->requests.push_back(q.request_id);
    }
  }
  CauseRows out;
  if (groups.size() == 1 && groups.front().template_sized && groups.front().requests.size() == run.requests.size() &&
      run.requests.size() > 1) {
    const auto& g = groups.front();
    out.note = fmt::format(
        "Every one of the {} requests reused the same prompt tokens from the prefix cache ({}): the size of a chat "
        "template's shared start, not a prompt served from the cache; no request is listed for it.",
        g.requests.size(), g.key[2]);
    return out;
  }
  for (const auto& g : groups) {
    std::string who = g.requests.front();
    if (g.requests.size() > 1) {
      who = fmt::format("{} requests: {}", g.requests.size(), g.requests.front());
      for (std::size_t i = 1; i < std::min<std::size_t>(3, g.requests.size()); ++i) who += ", " + g.requests[i];
      if (g.requests.size() > 3) who += ", ...";
    }
    out.rows.push_back({who, g.key[0], g.key[1], g.key[2], g.key[3]});
  }
  return out;
}

constexpr const char* kCohortNote =
    "Shared counter deltas reach one request only in an isolated window or through evidence the server tied to it; "
    "everything else stays with the cohort (docs/ATTRIBUTION.md).";

}  // namespace

std::string attribution_markdown(const AttributionRun& run, const RunInputs& in) {
  std::string out = "# Attribution of server counters to requests\n\n";
  std::string left_out;
  if (run.left_out && !run.left_out->empty()) {
    std::size_t calls = 0;
    std::string kinds;
    for (const auto& [op, n] : *run.left_out) {
      calls += n;
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", op, n);
    }
    left_out = fmt::format(" ({} {} no inference left out: {})", calls,
                           calls == 1 ? "call that runs" : "calls that run", kinds);
  }
  out += fmt::format("{} requests{}, {} snapshots, window `{}`{}.\n\n", run.requests.size(), left_out,
                     run.snapshots.size(), in.window, in.probe.empty() ? "" : ", probe of " + in.probe);
  if (run.windows.empty()) return out + "No window: fewer than two snapshots cover the requests.\n";
  out += "| from | to | grade | observed | background | causes | reason |\n|---|---|---|---|---|---|---|\n";
  for (const auto& r : window_rows(run)) {
    out += fmt::format("| {} | {} | **{}** | {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3], r[4], r[5], r[6]);
  }
  std::string per;
  const auto causes = cause_rows(run);
  for (const auto& r : causes.rows) {
    per += fmt::format("- `{}`: **{}**: {} ({}){}\n", r[0], r[1], r[2], r[3], r[4].empty() ? "" : "; source " + r[4]);
  }
  if (!causes.note.empty()) per += causes.note + "\n";
  if (!per.empty()) out += "\n## Causes that reach a request\n\n" + per;
  out += fmt::format("\n{}\n", kCohortNote);
  return out;
}

std::string attribution_html(const AttributionRun& run, const RunInputs& in) {
  present::Header h;
  h.title = "Attribution of server counters to requests";
  h.measured = fmt::format(
      "{} requests and {} engine snapshots: which of the engine's counter changes (preemptions, "
      "queueing, cache hits, ...) can be tied to which requests, and how surely.",
      run.requests.size(), run.snapshots.size());
  h.facts = {{"ledger", in.ledger}, {"snapshots", in.scrapes}, {"window", in.window}};
  if (!in.probe.empty()) h.facts.emplace_back("probe", in.probe);
  if (in.created_at_us > 0) h.facts.emplace_back("made", format_rfc3339_us(in.created_at_us));
  if (!in.tool_version.empty()) h.facts.emplace_back("made by", "modelperfobs " + in.tool_version);
  present::Page page(std::move(h));
  if (run.windows.empty()) {
    page.section("Windows", present::paragraph("No window: fewer than two snapshots cover the requests."));
    return page.html();
  }
  present::Table windows(kWindowHeaders);
  std::map<std::string, std::vector<present::Point>> by_grade;
  const std::int64_t t0 = run.windows.front().result.delta.scrape_started_at_us;
  for (std::size_t i = 0; i < run.windows.size(); ++i) {
    const auto& d = run.windows[i].result.delta;
    const double x = d.scrape_started_at_us != 0 && t0 != 0 ? static_cast<double>(d.scrape_started_at_us - t0) / 1e6
                                                            : static_cast<double>(i);
    by_grade[d.grade].push_back({x, static_cast<double>(d.overlapping_observed_requests)});
  }
  for (auto& r : window_rows(run)) windows.row(std::move(r));
  present::Chart chart("Requests observed in each window, by grade",
                       present::Axis{t0 != 0 ? "window start (s after the first)" : "window"},
                       present::Axis{"observed requests"});
  for (auto& [grade, pts] : by_grade) chart.add({grade, std::move(pts), present::Mark::kDots, ""});
  chart.note("An isolated window holds one observed request and no background: its counters are that request's.");
  page.section("Windows", windows.html("windows") + chart.svg() + present::paragraph(kCohortNote, "note"));
  if (const auto causes = cause_rows(run); !causes.rows.empty() || !causes.note.empty()) {
    std::string body;
    if (!causes.rows.empty()) {
      present::Table t(kCauseHeaders);
      for (auto r : causes.rows) t.row(std::move(r));
      body += t.html("causes");
    }
    if (!causes.note.empty()) body += present::paragraph(causes.note, "note");
    page.section("Causes that reach a request", body);
  }
  return page.html();
}

}  // namespace mpo::attribution
