#include "scrape/facts_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "core/time.hpp"
#include "promtext/delta.hpp"

namespace mpo::scrape {
namespace {

using promtext::Fact;
using promtext::FactStatus;

// One server answered both: the same engine and models, and the same URL (saved files may come
// from one server under different names). A restart of that server is a reset, found by the delta.
bool same_server(const Snapshot& a, const Snapshot& b) {
  const bool files = a.source.starts_with("file:") && b.source.starts_with("file:");
  return (files || a.source == b.source) && a.signals.engine == b.signals.engine &&
         a.signals.models == b.signals.models;
}

}  // namespace

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
  const promtext::EngineSignals* window = &r.last->signals;
  std::optional<promtext::EngineSignals> delta;
  if (r.first != r.last) {
    if (!same_server(*r.first, *r.last)) {
      r.reset = fmt::format("another server instance answered ({} -> {}); no interval is formed",
                            server_instance_id(*r.first), server_instance_id(*r.last));
    } else if (auto d = promtext::delta_signals(r.first->signals, r.last->signals); d) {
      delta = std::move(*d);
      window = &*delta;
      r.window_seconds = static_cast<double>(r.last->started_at_us - r.first->started_at_us) / 1e6;
      r.window = fmt::format("{:.1f} s between scrapes {} and {}", *r.window_seconds, r.first->seq, r.last->seq);
    } else {
      r.reset = d.error().message;
    }
  }
  if (!delta) {
    r.first = nullptr;
    r.window = fmt::format("since the process started (scrape {})", r.last->seq);
  }
  r.facts = promtext::derive_facts(*window, r.window_seconds);
  return r;
}

std::string facts_markdown(const FactsReport& r) {
  std::string out = "# Engine facts\n\n";
  if (!r.last) {
    out += fmt::format("No successful scrape out of {}.\n", r.scrapes);
    for (const std::string& e : r.errors) out += fmt::format("- {}\n", e);
    return out;
  }
  const promtext::EngineSignals& s = r.last->signals;
  std::string models;
  for (const std::string& m : s.models) models += (models.empty() ? "" : ", ") + m;
  const auto gen = promtext::engine_generation(s.engine);
  out += fmt::format("- Source: {}\n- Engine: {}{}{}\n- Window: {}\n- Scrapes: {} ({} failed, {} stale)\n",
                     r.last->source, promtext::engine_name(s.engine), gen.empty() ? "" : fmt::format(" {}", gen),
                     models.empty() ? "" : fmt::format(", model {}", models), r.window, r.scrapes, r.failed, r.stale);
  if (!r.reset.empty())
    out +=
        fmt::format("\n**Reset between scrapes:** {}. The facts below are since the latest process start.\n", r.reset);
  for (const std::string& n : s.notes) out += fmt::format("- Note: {}\n", n);
  for (const std::string& e : r.errors) out += fmt::format("- Failed: {}\n", e);
  if (s.engine == promtext::Engine::kUnknown) {
    out += "\nNo known engine's metric names: the exposition parsed, and nothing is claimed about it.\n";
    return out;
  }
  out += "\n| fact | status | statement | source |\n|---|---|---|---|\n";
  for (const Fact& f : r.facts) {
    std::string statement = f.statement.empty() ? f.reason : f.statement;
    if (f.status == FactStatus::kNotEnabled) statement += " " + f.reason;
    std::string sources;
    for (const std::string& src : f.sources) sources += (sources.empty() ? "" : "<br>") + ("`" + src + "`");
    out += fmt::format("| {} | {} | {} | {} |\n", f.id, promtext::to_string(f.status), statement, sources);
  }
  return out;
}

std::string facts_json(const FactsReport& r, std::string_view tool_version) {
  JsonObjectWriter w;
  w.field("schema", "modelperfobs.engine-facts.v1")
      .field("created_at", format_rfc3339_us(SystemClock::instance().wall_us()));
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
    result.field("engine", promtext::engine_name(r.last->signals.engine))
        .field("generation", promtext::engine_generation(r.last->signals.engine));
  }
  std::string facts = "[";
  for (std::size_t i = 0; i < r.facts.size(); ++i) {
    const Fact& f = r.facts[i];
    if (i) facts += ',';
    JsonObjectWriter o;
    o.field("id", f.id).field("status", promtext::to_string(f.status));
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
  if (r.last && r.last->signals.engine == promtext::Engine::kUnknown)
    reasons.emplace_back("unknown engine: no facts claimed");
  JsonObjectWriter validity;
  validity.field("valid", r.last != nullptr && r.reset.empty()).raw_field("reasons", json_string_array(reasons));
  w.raw_field("validity", std::move(validity).finish());
  return std::move(w).finish();
}

}  // namespace mpo::scrape
