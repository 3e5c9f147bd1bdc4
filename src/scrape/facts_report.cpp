// The implementation of scrape/facts_report.hpp. What `scrape --format md|json` prints: the facts
// over the widest window the snapshots allow (first to last successful scrape of one server
// instance; one snapshot: since the process started), with a restart or counter reset between them
// said first, never turned into numbers.
#include "scrape/facts_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "core/time.hpp"
#include "engines/delta.hpp"

namespace mpo::scrape {
namespace {

using engines::Fact;
using engines::FactStatus;

// One server answered both: the same engine and models, and the same URL (saved files may come
// from one server under different names). A restart of that server is a reset, found by the delta.
bool same_server(const Snapshot& a, const Snapshot& b) {
  const bool files = a.source.starts_with("file:") && b.source.starts_with("file:");
  return (files || a.source == b.source) && a.signals.engine == b.signals.engine &&
         a.signals.models == b.signals.models;
}

// The latest reset between two successive scrapes with signals (a counter went down: the engine
// restarted), said with the scrapes it fell between; "" when there is none.
std::string reset_between(std::span<const Snapshot> snaps) {
  const Snapshot* after = nullptr;
  for (auto it = snaps.rbegin(); it != snaps.rend(); ++it) {
    if (!has_signals(it->status)) continue;
    if (after && same_server(*it, *after)) {
      if (auto d = engines::delta_signals(it->signals, after->signals); !d) {
        return fmt::format("between scrapes {} and {}: {}", it->seq, after->seq, d.error().message);
      }
    }
    after = &*it;
  }
  return {};
}

// Scrapes refused or answered with an error between `first` and `last`, of an engine that publishes
// no process start time.
std::string gap_caution(std::span<const Snapshot> snaps, const Snapshot& first, const Snapshot& last) {
  if (last.signals.value(engines::Signal::kProcessStartTime)) return {};  // a restart would show in it
  std::size_t failed = 0;
  std::string why;
  bool inside = false;
  for (const Snapshot& s : snaps) {
    if (&s == &first) inside = true;
    if (&s == &last) break;
    // Refused or answered with an error (down, or loading its model again); a scrape that timed
    // out met a server alive but busy (llama.cpp answers /metrics between its batches).
    if (inside && (s.status == ScrapeStatus::kUnreachable || s.status == ScrapeStatus::kHttpError)) {
      if (failed++ == 0) why = fmt::format("scrape {}: {}", s.seq, to_string(s.status));
    }
  }
  if (failed == 0) return {};
  return fmt::format(
      "{} scrape{} inside the window found the engine down or failing (the first, {}): had it restarted then, it "
      "would go unseen (it "
      "publishes no process start time) and what it counted before would be missing from the window's differences",
      failed, failed == 1 ? "" : "s", why);
}

std::string percent(double share) { return fmt::format("{:.0f}%", share * 100); }

std::string amount(const GaugeOverWindow& g, double v) {
  return g.signal == engines::Signal::kKvUsage ? fmt::format("{:.1f}%", v * 100) : fmt::format("{:.3g}", v);
}

// The gauges stated over a window, as one fact; the last-scrape facts say they are the last.
Fact window_fact(const std::vector<GaugeOverWindow>& gauges, double seconds, std::size_t scrapes) {
  Fact f;
  f.id = "gauges_over_window";
  f.status = FactStatus::kStated;
  std::string text;
  for (const auto& g : gauges) {
    const std::string key(engines::signal_name(g.signal));
    const char* unit = g.signal == engines::Signal::kKvUsage ? "fraction" : "requests";
    f.values.push_back({key + "_max", g.max, unit, false});
    f.values.push_back({key + "_mean", g.mean, unit, false});
    f.values.push_back({key + "_share_above_zero", g.share_above_zero, "fraction", false});
    f.sources.push_back(g.source);
    text += fmt::format("{}{}: max {}, time-weighted mean {}, above zero {} of the time", text.empty() ? "" : "; ",
                        g.name, amount(g, g.max), amount(g, g.mean), percent(g.share_above_zero));
  }
  f.statement = fmt::format("Over {:.1f} s ({} scrapes): {}.", seconds, scrapes, text);
  return f;
}

}  // namespace

std::vector<GaugeOverWindow> gauges_over_window(std::span<const Snapshot> snaps, const Snapshot& first,
                                                const Snapshot& last) {
  using S = engines::Signal;
  static constexpr std::pair<S, const char*> kGauges[] = {
      {S::kWaiting, "requests waiting"},          {S::kWaitingCapacity, "waiting for capacity"},
      {S::kWaitingDeferred, "waiting, deferred"}, {S::kRunning, "requests running"},
      {S::kSwapped, "requests swapped"},          {S::kKvUsage, "KV pool used"}};
  std::vector<const Snapshot*> in;
  bool inside = false;
  for (const Snapshot& s : snaps) {
    if (&s == &first) inside = true;
    if (inside && has_signals(s.status) && same_server(first, s)) in.push_back(&s);
    if (&s == &last) break;
  }
  std::vector<GaugeOverWindow> out;
  if (in.size() < 2) return out;
  for (const auto& [signal, name] : kGauges) {
    GaugeOverWindow g{signal, name, {}, 0, 0, 0, 0};
    double weighted = 0, above = 0, total = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto* v = in[i]->signals.scalar(signal);
      if (!v) continue;
      if (g.source.empty()) g.source = v->source;
      g.max = g.samples == 0 ? v->value : std::max(g.max, v->value);
      ++g.samples;
      if (i + 1 < in.size()) {
        const double held = static_cast<double>(in[i + 1]->started_at_us - in[i]->started_at_us) / 1e6;
        if (held > 0) {
          weighted += v->value * held;
          total += held;
          if (v->value > 0) above += held;
        }
      }
    }
    if (g.samples < 2 || total <= 0) continue;
    g.mean = weighted / total;
    g.share_above_zero = above / total;
    out.push_back(std::move(g));
  }
  return out;
}

FactsReport build_facts_report(std::span<const Snapshot> snaps) {
  FactsReport r;
  r.scrapes = snaps.size();
  for (const Snapshot& s : snaps) {
    if (s.status == ScrapeStatus::kStale) ++r.stale;
    if (!has_signals(s.status)) {
      ++r.failed;
      if (r.errors.size() < 5)
        r.errors.push_back(fmt::format("scrape {}: {}: {}", s.seq, to_string(s.status), s.error));
      continue;
    }
    if (!r.first) r.first = &s;
    r.last = &s;
  }
  if (!r.last) return r;
  const engines::EngineSignals* window = &r.last->signals;
  std::optional<engines::EngineSignals> delta;
  if (r.first != r.last) {
    if (!same_server(*r.first, *r.last)) {
      r.reset = fmt::format("another server instance answered ({} -> {}); no interval is formed",
                            server_instance_id(*r.first), server_instance_id(*r.last));
    } else if (auto between = reset_between(snaps); !between.empty()) {
      // A restart inside the window (its counters began again from zero and grew past where the
      // first scrape saw them): the first and last scrapes alone would hide it.
      r.reset = std::move(between);
    } else if (auto d = engines::delta_signals(r.first->signals, r.last->signals); d) {
      delta = std::move(*d);
      window = &*delta;
      r.window_seconds = static_cast<double>(r.last->started_at_us - r.first->started_at_us) / 1e6;
      r.window = fmt::format("{:.1f} s between scrapes {} and {}", *r.window_seconds, r.first->seq, r.last->seq);
      r.caution = gap_caution(snaps, *r.first, *r.last);
    } else {
      r.reset = d.error().message;
    }
  }
  if (!delta) {
    r.first = nullptr;
    r.window = fmt::format("since the process started (scrape {})", r.last->seq);
  }
  r.facts = engines::derive_facts(*window, r.window_seconds);
  if (delta) {
    r.gauges = gauges_over_window(snaps, *r.first, *r.last);
    r.delta = std::move(delta);
    const auto& gauges = r.gauges;
    if (!gauges.empty()) {
      std::size_t scrapes = 0;
      for (const auto& g : gauges) scrapes = std::max(scrapes, g.samples);
      // Gauges are instants: the facts read from the last scrape say so, and the window's own
      // statement comes first.
      for (Fact& f : r.facts) {
        if ((f.id == "load" || f.id == "queueing_reason") && !f.statement.empty()) {
          f.statement = fmt::format("At the last scrape ({}): {}", r.last->seq, f.statement);
        }
      }
      r.facts.insert(r.facts.begin(), window_fact(gauges, *r.window_seconds, scrapes));
    }
  }
  return r;
}

std::string facts_markdown(const FactsReport& r) {
  std::string out = "# Engine facts\n\n";
  if (!r.last) {
    out += fmt::format("No successful scrape out of {}.\n", r.scrapes);
    for (const std::string& e : r.errors) out += fmt::format("- {}\n", e);
    return out;
  }
  const engines::EngineSignals& s = r.last->signals;
  std::string models;
  for (const std::string& m : s.models) models += (models.empty() ? "" : ", ") + m;
  const auto gen = engines::engine_generation(s.engine);
  out += fmt::format("- Source: {}\n- Engine: {}{}{}\n- Window: {}\n- Scrapes: {} ({} failed, {} stale)\n",
                     r.last->source, engines::engine_name(s.engine), gen.empty() ? "" : fmt::format(" {}", gen),
                     models.empty() ? "" : fmt::format(", model {}", models), r.window, r.scrapes, r.failed, r.stale);
  if (!r.reset.empty())
    out +=
        fmt::format("\n**Reset between scrapes:** {}. The facts below are since the latest process start.\n", r.reset);
  if (!r.caution.empty()) out += fmt::format("- Caution: {}.\n", r.caution);
  for (const std::string& n : s.notes) out += fmt::format("- Note: {}\n", n);
  for (const std::string& e : r.errors) out += fmt::format("- Failed: {}\n", e);
  if (s.engine == engines::Engine::kUnknown) {
    out += "\nNo known engine's metric names: the exposition parsed, and nothing is claimed about it.\n";
    return out;
  }
  out += "\n| fact | status | statement | source |\n|---|---|---|---|\n";
  for (const Fact& f : r.facts) {
    std::string statement = f.statement.empty() ? f.reason : f.statement;
    if (f.status == FactStatus::kNotEnabled) statement += " " + f.reason;
    std::string sources;
    for (const std::string& src : f.sources) sources += (sources.empty() ? "" : "<br>") + ("`" + src + "`");
    out += fmt::format("| {} | {} | {} | {} |\n", f.id, engines::to_string(f.status), statement, sources);
  }
  return out;
}

std::string facts_json(const FactsReport& r, std::string_view tool_version) {
  JsonObjectWriter w;
  w.field("schema", "modelperfobs.engine-facts.v1").field("created_at", format_rfc3339_us(document_time_us()));
  JsonObjectWriter tool;
  tool.field("name", "modelperfobs").field("version", tool_version);
  w.raw_field("tool", std::move(tool).finish());
  JsonObjectWriter inputs;
  inputs.field("scrapes", static_cast<std::uint64_t>(r.scrapes))
      .field("failed", static_cast<std::uint64_t>(r.failed))
      .field("stale", static_cast<std::uint64_t>(r.stale));
  if (r.last) inputs.field("source", r.last->source).field("server_instance_id", server_instance_id(*r.last));
  if (r.first) inputs.field("window_start", format_rfc3339_us(r.first->started_at_us));
  if (r.last) inputs.field("window_end", format_rfc3339_us(r.last->started_at_us));
  if (r.window_seconds) inputs.field("window_seconds", *r.window_seconds);
  inputs.field("window", r.window);
  w.raw_field("inputs", std::move(inputs).finish());

  JsonObjectWriter result;
  if (r.last) {
    result.field("engine", engines::engine_name(r.last->signals.engine))
        .field("generation", engines::engine_generation(r.last->signals.engine));
  }
  std::string facts = "[";
  for (std::size_t i = 0; i < r.facts.size(); ++i) {
    const Fact& f = r.facts[i];
    if (i) facts += ',';
    JsonObjectWriter o;
    o.field("id", f.id).field("status", engines::to_string(f.status));
    if (!f.statement.empty()) o.field("statement", f.statement);
    if (!f.reason.empty()) o.field("reason", f.reason);
    std::string values = "{";
    for (std::size_t k = 0; k < f.values.size(); ++k) {
      if (k) values += ',';
      append_json_string(values, f.values[k].name);
      JsonObjectWriter v;
      v.field("value", f.values[k].value).field("unit", f.values[k].unit);
      if (f.values[k].estimate) v.field("estimate", true);
      if (const auto& b = f.values[k].bucket) {
        std::string range = "[";
        append_json_number(range, b->first);
        range += ',';
        if (std::isinf(b->second))
          range += "\"+Inf\"";
        else
          append_json_number(range, b->second);
        v.raw_field("bucket", range + "]");
      }
      values += ':' + std::move(v).finish();
    }
    o.raw_field("values", values + "}");
    o.raw_field("sources", json_string_array(f.sources));
    facts += std::move(o).finish();
  }
  result.raw_field("facts", facts + "]");
  w.raw_field("result", std::move(result).finish());

  std::vector<std::string> reasons;
  if (!r.last) reasons.emplace_back("no successful scrape");
  if (!r.reset.empty()) reasons.push_back(r.reset);
  if (r.last && r.last->signals.engine == engines::Engine::kUnknown)
    reasons.emplace_back("unknown engine: no facts claimed");
  JsonObjectWriter validity;
  validity.field("valid", r.last != nullptr && r.reset.empty())
      .raw_field("reasons", json_string_array(reasons))
      .raw_field("warnings", json_string_array(r.caution.empty() ? std::vector<std::string>{}
                                                                 : std::vector<std::string>{r.caution}));
  w.raw_field("validity", std::move(validity).finish());
  return std::move(w).finish();
}

}  // namespace mpo::scrape
