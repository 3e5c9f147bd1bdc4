// The implementation of sweep/render.hpp. A sweep receipt for people: a markdown summary (points,
// findings, validity) and a self-contained HTML page (throughput and p99 TTFT/ITL against the load
// axis, budgets drawn, knee marked).
#include "sweep/render.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/fold.hpp"

namespace mpo::sweep {

std::string fixed(std::optional<double> v, int digits) { return v ? fmt::format("{:.{}f}", *v, digits) : "n/a"; }

std::string axis_title(loadgen::LoadMode m) {
  return m == loadgen::LoadMode::kConcurrency ? "concurrency" : "offered rate (req/s)";
}

std::string markdown_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows) {
  std::string out = fmt::format("| {} |\n", fmt::join(headers, " | "));
  for (std::size_t i = 0; i < headers.size(); ++i) out += "|---";
  out += "|\n";
  for (const auto& row : rows) out += fmt::format("| {} |\n", fmt::join(row, " | "));
  return out;
}

namespace {

// A quantile of a latency when measured.
std::optional<double> p50(const QuantileMetric& q) { return q.measured() ? q.p50 : std::nullopt; }
std::optional<double> p99(const QuantileMetric& q) { return q.measured() ? q.p99 : std::nullopt; }

// Acceptance of speculative decoding per point, where the engine published it: TPOT depends on it.
const char* kSpeculativeNote =
    "The engine drafted tokens and verified them: TPOT and ITL here depend on how many it accepted, not only on the "
    "cost of a decode step. A point with lower acceptance has a slower TPOT at the same load. ITL is the gap "
    "between streamed tokens: a step's accepted tokens arrive together (llama.cpp b10309 sends each as an event "
    "of its own at once), so most gaps are near 0 and ITL p50 says little where acceptance is high; TPOT is the "
    "pace.";

std::vector<std::vector<std::string>> speculative_rows(const SweepReceipt& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const auto rate = tp.evidence.server_number("spec_acceptance_rate");
      if (!rate) continue;
      rows.push_back({go_float_text(p.coordinate), tp.track, fmt::format("{:.1f}%", 100 * *rate),
                      fixed(tp.evidence.server_number("spec_mean_accepted_length"), 2), fixed(p50(tp.stats.tpot_ms)),
                      fixed(p50(tp.stats.itl_ms))});
    }
  }
  return rows;
}

std::vector<std::string> speculative_headers(loadgen::LoadMode m) {
  return {axis_title(m), "track", "accepted", "tokens per step", "TPOT p50", "ITL p50"};
}

// Energy per point, where a meter was read (or why not).
std::vector<std::vector<std::string>> energy_rows(const SweepReceipt& r) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (!tp.evidence.energy) continue;
      const auto* e = &*tp.evidence.energy;
      rows.push_back({go_float_text(p.coordinate), fixed(json_double(*e, "joules"), 1),
                      fixed(json_double(*e, "output_tokens_per_joule"), 3),
                      json_string(*e, "status").value_or("") == "measured"
                          ? std::string(json_string(*e, "source").value_or(""))
                          : "not measured: " + std::string(json_string(*e, "reason").value_or(""))});
    }
  }
  return rows;
}

// A track's findings as name: value pairs, and the saturation signals behind them.
struct Findings {
  std::vector<std::pair<std::string, std::string>> items;
  std::vector<std::string> signals;  // "`signal` at X: detail" (markdown's code marks stripped on the page)
};

// A closed-loop track left without a claim only because some points went past the batch capacity
// (the usual way to find saturation): what the points within it show, and how to get a claim. Not
// a claim itself: by fak's capacity rule such a track carries none (docs/SWEEP.md).
std::optional<std::string> within_capacity(const SweepReceipt& r, const TrackSummary& t) {
  if (r.mode != loadgen::LoadMode::kConcurrency) return std::nullopt;
  const auto c =
      std::find_if(r.contracts.begin(), r.contracts.end(), [&](const Contract& k) { return k.track == t.track; });
  if (c == r.contracts.end() || c->batch_capacity <= 0) return std::nullopt;
  bool exceeded = false;
  std::vector<const Point*> valid;
  const TrackPoint* best = nullptr;
  double best_at = 0;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.track != t.track) continue;
      if (tp.reason_code == "capacity_exceeded") {
        exceeded = true;
      } else if (tp.status == "valid") {
        valid.push_back(&p);
        const auto tok = tp.stats.throughput_tok_s.measured_value();
        if (tok && (!best || *tok > *best->stats.throughput_tok_s.measured_value())) {
          best = &tp;
          best_at = p.coordinate;
        }
      } else if (is_hard_code(tp.reason_code)) {
        return std::nullopt;  // something else leaves the track without a claim
      }
    }
  }
  if (!exceeded || valid.size() < 2 || !best) return std::nullopt;
  std::string coords;
  for (const auto* p : valid) coords += (coords.empty() ? "" : ",") + go_float_text(p->coordinate);
  return fmt::format(
      "{} tok/s at concurrency {} is the highest of the valid points {} (not a claim: the points above the batch "
      "capacity {} measure the server's queue, and by fak's capacity rule the track carries no peak or knee; for one, "
      "sweep within it: --concurrencies {})",
      fixed(best->stats.throughput_tok_s.measured_value()), go_float_text(best_at), coords, c->batch_capacity, coords);
}

Findings findings(const SweepReceipt& r, const TrackSummary& t) {
  const auto m = r.mode;
  Findings f;
  auto add = [&](const char* name, std::string value) { f.items.emplace_back(name, std::move(value)); };
  add("status", t.status + (t.reason.empty() ? "" : " — " + t.reason));
  if (auto w = within_capacity(r, t)) add("within capacity", std::move(*w));
  add("peak", t.peak ? fmt::format("{} tok/s at {} {} ({})", fixed(t.peak->throughput_tok_s), axis_title(m),
                                   go_float_text(t.peak->coordinate), t.peak_status)
                     : t.peak_status + (t.peak_reason.empty() ? "" : " — " + t.peak_reason));
  add("SLA knee", t.sla_knee ? fmt::format("{} tok/s at {} {} ({})", fixed(t.sla_knee->throughput_tok_s), axis_title(m),
                                           go_float_text(t.sla_knee->coordinate), t.sla_status)
                             : t.sla_status + (t.sla_reason.empty() ? "" : " — " + t.sla_reason));
  const auto& b = t.p99_boundary;
  add("p99 SLA boundary",
      b.coordinate
          ? fmt::format("{} {} ({}, {}{})", axis_title(m), go_float_text(*b.coordinate), b.status, b.confidence,
                        b.first_failing ? ", first failing " + go_float_text(*b.first_failing) : "")
          : b.status + (b.reason.empty() ? "" : " — " + b.reason));
  const auto& sat = t.saturation;
  add("saturation", sat.knee ? fmt::format("knee at {}, saturated at {}", go_float_text(*sat.knee),
                                           go_float_text(sat.saturated_at.value_or(0)))
                             : sat.status);
  for (const auto& sig : sat.signals)
    f.signals.push_back(fmt::format("{} at {}: {}", sig.signal, go_float_text(sig.at), sig.detail));
  return f;
}

std::string finding(const SweepReceipt& r, const TrackSummary& t) {
  const auto f = findings(r, t);
  std::string out;
  for (const auto& [name, value] : f.items) out += fmt::format("- **{}**: {}\n", name, value);
  for (const auto& sig : f.signals) {
    const auto at = sig.find(" at ");
    out += fmt::format("  - `{}`{}\n", sig.substr(0, at), sig.substr(at));
  }
  return out;
}

// The prompt and output tokens of a point's measured requests, p50, as the server's usage counted
// them: what a prompt of `--input-tokens N` came to (with --approximate-input-tokens a word is not
// a token: 100 words were 286 tokens on llama.cpp's vocabulary).
std::string tokens_in_out(const std::optional<TokenEvidence>& t) {
  if (!t || !t->input_p50 || !t->output_p50) return "n/a";
  return fmt::format("{} / {}", *t->input_p50, *t->output_p50);
}

// The points table, cell by cell: markdown and the page render the same cells.
std::vector<std::string> point_headers(loadgen::LoadMode m) {
  return {axis_title(m),
          "status",
          "ok",
          "failed",
          "tokens in / out p50",
          "tok/s",
          "steady tok/s",
          "goodput req/s",
          "TTFT p50",
          "TTFT p99",
          "ITL p99",
          "e2e p99",
          "max in flight",
          "lateness p99 ms",
          "KV peak",
          "waiting (capacity) max"};
}

std::vector<std::vector<std::string>> point_rows(const SweepReceipt& r, bool markdown) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const auto& s = tp.stats;
      const std::string code = tp.reason_code.empty() ? ""
                               : markdown             ? " `" + tp.reason_code + "`"
                                                      : " (" + tp.reason_code + ")";
      rows.push_back({go_float_text(p.coordinate), tp.status + code, std::to_string(s.ok), std::to_string(s.failed),
                      tokens_in_out(tp.evidence.tokens), fixed(s.throughput_tok_s.measured_value()),
                      fixed(tp.evidence.steady_state ? tp.evidence.steady_state->throughput_tok_s : std::nullopt),
                      fixed(s.goodput_rps.measured_value(), 2), fixed(p50(s.ttft_ms)), fixed(p99(s.ttft_ms)),
                      fixed(p99(s.itl_ms)), fixed(p99(s.end_to_end_ms)),
                      s.observed_max_in_flight ? std::to_string(*s.observed_max_in_flight) : "n/a",
                      fixed(tp.evidence.generator ? tp.evidence.generator->send_lateness_p99_ms : std::nullopt, 3),
                      fixed(tp.evidence.server_number("kv_usage_peak"), 2),
                      fixed(tp.evidence.server_number("waiting_capacity_max"), 0)});
    }
  }
  return rows;
}

}  // namespace

namespace {

// The batch capacity the track's points are judged against, and where it came from (the operator's
// --batch-capacity, or the server's own word).
std::string capacity_line(const SweepReceipt& r, const std::string& track) {
  for (const auto& c : r.contracts) {
    if (c.track != track) continue;
    if (c.batch_capacity <= 0 || c.capacity_source.empty()) {
      return "- **batch capacity**: unknown (declare it: --batch-capacity N --capacity-source LABEL)\n";
    }
    return fmt::format("- **batch capacity**: {} ({})\n", c.batch_capacity, c.capacity_source);
  }
  return {};
}

// "Steady tok/s: " and the rule the receipt's steady-state figures were counted by (its first
// point's; receipts before 2026-12-06 counted the requests completed in the window), "" when none.
std::string steady_rule_sentence(const SweepReceipt& r) {
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.evidence.steady_state && !tp.evidence.steady_state->rule.empty()) {
        return fmt::format(" Steady tok/s: {}.", tp.evidence.steady_state->rule);
      }
    }
  }
  return {};
}

// " Goodput: ..." with the end-to-end budget it was counted within (--slo), "" when none: a goodput
// of 0 beside requests that all succeeded reads as a fault without it.
std::string goodput_sentence(const SweepReceipt& r) {
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.stats.goodput_slo_seconds) {
        return fmt::format(
            " Goodput: the successful requests a second that ended within {:g} ms of being sent (--slo).",
            *tp.stats.goodput_slo_seconds * 1000.0);
      }
    }
  }
  return {};
}

// Where answers began with a tool call, or ended without output, how many each point's TTFT left out
// (a call's first event waited for the tokens an engine holds back before its name; REPORT.md "Tool
// calls first" and "Streams that ended without output").
std::string left_out_of_ttft_sentence(const SweepReceipt& r) {
  std::string calls, silent;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const std::string where =
          fmt::format(" of {} at {} {}{}", tp.stats.ok, point_key(r.mode), go_float_text(p.coordinate),
                      r.tracks.size() > 1 ? " (" + tp.track + ")" : "");
      if (tp.stats.tool_call_first) {
        calls += fmt::format("{}{}{}", calls.empty() ? "" : ", ", *tp.stats.tool_call_first, where);
      }
      if (tp.stats.no_output) silent += fmt::format("{}{}{}", silent.empty() ? "" : ", ", *tp.stats.no_output, where);
    }
  }
  std::string out;
  if (!calls.empty()) {
    out +=
        " TTFT leaves out the successful answers that began with a tool call (their first event waited for the "
        "tokens the engine holds back before a call's name): " +
        calls + ".";
  }
  if (!silent.empty()) {
    out +=
        " It leaves out those that ended without any output although the server counted tokens for them (a "
        "tool call cut before its name, unstreamed reasoning): " +
        silent + ".";
  }
  return out;
}

}  // namespace

std::string sweep_markdown(const SweepReceipt& r) {
  std::string out = fmt::format("# Serving sweep: {}\n\n", r.model);
  out += fmt::format("{} points of {} requests, workload {}, generated {} on {}.\n\n", r.points.size(),
                     r.workload_requests, r.workload_digest.substr(0, 19), r.generated_at, r.machine_id);
  if (r.load && r.load->sessions) out += fmt::format("Sessions: {}.\n\n", *r.load->sessions);
  out += fmt::format("**Verdict: {}**\n\n", r.valid ? "valid" : "not valid for claims");
  for (const auto& why : r.validity_reasons) out += fmt::format("- {}\n", why);
  for (const auto& w : r.warnings) out += fmt::format("- warning: {}\n", w);
  if (!r.validity_reasons.empty() || !r.warnings.empty()) out += "\n";
  out += markdown_table(point_headers(r.mode), point_rows(r, true));
  out +=
      "\nTimes in ms. p99s are nearest-rank over the point's successful requests (warm-up excluded); the receipt "
      "holds a bootstrap interval for each. The p99 boundary counts a failed request as missing every budget." +
      steady_rule_sentence(r) + goodput_sentence(r) + left_out_of_ttft_sentence(r) + "\n";
  for (const auto& t : r.tracks) {
    out += fmt::format("\n## Track {}\n\n", t.track);
    out += capacity_line(r, t.track);
    out += finding(r, t);
  }
  // Why requests failed, in the server's own words, point by point (issue 38: the reason was only in
  // the ledger).
  std::string failures;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      for (const auto& line : failure_lines(tp.samples)) {
        failures += fmt::format("- {} {}{}: {}\n", point_key(r.mode), go_float_text(p.coordinate),
                                r.tracks.size() > 1 ? " (" + tp.track + ")" : "", line);
      }
    }
  }
  if (!failures.empty()) out += "\n## Failed requests\n\n" + failures;
  if (const auto spec = speculative_rows(r); !spec.empty()) {
    out += fmt::format("\n## Speculative decoding\n\n{}\n\n", kSpeculativeNote);
    out += markdown_table(speculative_headers(r.mode), spec);
  }
  if (const auto energy = energy_rows(r); !energy.empty()) {
    out += "\n## Energy\n\n" + markdown_table({axis_title(r.mode), "joules", "output tokens / J", "source"}, energy);
  }
  return out;
}

namespace {

// The page's header: what was measured, the verdict, the facts of the run.
present::Header sweep_header(const SweepReceipt& r) {
  present::Header h;
  h.title = "Serving sweep: " + r.model;
  h.measured = fmt::format(
      "{} load points of {} requests each against {}: throughput and latency at each {}, where "
      "it saturates and where the p99 budgets stop holding.",
      r.points.size(), r.workload_requests, r.load && r.load->url ? *r.load->url : std::string("the server"),
      axis_title(r.mode));
  h.verdict = present::Verdict{r.valid, r.valid ? "valid for claims" : "not valid for claims", r.validity_reasons};
  h.facts = {{"generated", r.generated_at}, {"machine", r.machine_id}, {"workload", r.workload_digest.substr(0, 19)}};
  if (r.load && r.load->api) h.facts.emplace_back("API", *r.load->api);
  if (r.load && r.load->mode)
    h.facts.emplace_back("load", *r.load->mode + (r.load->arrival ? ", " + *r.load->arrival : ""));
  if (r.sla.ttft_p99_ms > 0)
    h.facts.emplace_back("TTFT p99 budget", fmt::format("{} ms", go_float_text(r.sla.ttft_p99_ms)));
  if (r.sla.itl_p99_ms > 0)
    h.facts.emplace_back("ITL p99 budget", fmt::format("{} ms", go_float_text(r.sla.itl_p99_ms)));
  for (const auto& c : r.contracts) {
    if (c.batch_capacity > 0 && !c.capacity_source.empty()) {
      h.facts.emplace_back(r.contracts.size() > 1 ? "batch capacity (" + c.track + ")" : "batch capacity",
                           fmt::format("{} ({})", c.batch_capacity, c.capacity_source));
    }
  }
  if (!r.tool_version.empty()) h.facts.emplace_back("made by", r.tool_name + " " + r.tool_version);
  h.warnings = r.warnings;
  return h;
}

// One track's section: its findings, the throughput chart (knee, peak) and the latency chart (budgets,
// the p99 boundary).
std::string track_section(const SweepReceipt& r, const TrackSummary& t, const std::string& x) {
  using present::Axis;
  using present::Chart;
  using present::Mark;
  std::vector<present::Point> thr, valid, ttft99, ttft50, itl99;
  std::vector<double> xs, ms;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.track != t.track) continue;
      xs.push_back(p.coordinate);
      if (auto v = tp.stats.throughput_tok_s.measured_value()) {
        thr.push_back({p.coordinate, *v});
        if (tp.status == "valid") valid.push_back({p.coordinate, *v});
      }
      if (auto v = p99(tp.stats.ttft_ms)) ttft99.push_back({p.coordinate, *v}), ms.push_back(*v);
      if (auto v = p50(tp.stats.ttft_ms)) ttft50.push_back({p.coordinate, *v}), ms.push_back(*v);
      if (auto v = p99(tp.stats.itl_ms)) itl99.push_back({p.coordinate, *v}), ms.push_back(*v);
    }
  }
  if (r.sla.ttft_p99_ms > 0) ms.push_back(r.sla.ttft_p99_ms);
  if (r.sla.itl_p99_ms > 0) ms.push_back(r.sla.itl_p99_ms);
  const auto xscale =
      r.mode == loadgen::LoadMode::kConcurrency ? present::scale_for_counts(xs) : present::scale_for(xs, 8);
  Chart throughput("Output token throughput", Axis{x, xscale}, Axis{"tokens/s"});
  throughput.add({"throughput", thr, Mark::kLineDots, "#1f77b4"});
  throughput.add({"valid points", valid, Mark::kDots, "#2ca02c"});
  if (t.saturation.knee) throughput.vline("saturation knee", *t.saturation.knee, "#d62728");
  if (t.peak) throughput.vline("peak", t.peak->coordinate, "#7a1fa2");
  Chart latency("TTFT and ITL", Axis{x, xscale}, Axis{"ms", present::scale_for(ms)});
  latency.add({"TTFT p50", ttft50, Mark::kLineDots, "#9ecae1"});
  latency.add({"TTFT p99", ttft99, Mark::kLineDots, "#ff7f0e"});
  latency.add({"ITL p99", itl99, Mark::kLineDots, "#17becf"});
  if (r.sla.ttft_p99_ms > 0) latency.hline("TTFT p99 budget", r.sla.ttft_p99_ms, "#c4501a");
  if (r.sla.itl_p99_ms > 0) latency.hline("ITL p99 budget", r.sla.itl_p99_ms, "#0f7f8c");
  if (t.p99_boundary.coordinate) latency.vline("p99 SLA boundary", *t.p99_boundary.coordinate, "#d62728");
  const auto f = findings(r, t);
  return present::facts(f.items) + present::bullets(f.signals) + throughput.svg() + latency.svg();
}

}  // namespace

std::string sweep_html(const SweepReceipt& r) {
  present::Page page(sweep_header(r));

  present::Table points(point_headers(r.mode));
  for (auto& row : point_rows(r, false)) {
    const bool valid = row[1] == "valid";
    points.row(std::move(row), valid ? "" : "worse");
  }
  page.section("Points",
               points.html("points") +
                   present::paragraph("Times in ms. p99s are nearest-rank over the point's successful "
                                      "requests (warm-up excluded); the receipt holds a bootstrap interval "
                                      "for each. The p99 boundary counts a failed request as missing every "
                                      "budget." +
                                          steady_rule_sentence(r) + goodput_sentence(r) + left_out_of_ttft_sentence(r) +
                                          " Rows not valid for claims are shaded.",
                                      "note"));
  const std::string x = r.mode == loadgen::LoadMode::kConcurrency ? "concurrency" : "offered rate (req/s)";
  for (const auto& t : r.tracks) {
    page.section("Track " + t.track, track_section(r, t, x));
  }
  if (const auto spec = speculative_rows(r); !spec.empty()) {
    present::Table t(speculative_headers(r.mode));
    for (auto row : spec) t.row(std::move(row));
    page.section("Speculative decoding", present::paragraph(kSpeculativeNote) + t.html());
  }
  if (const auto energy = energy_rows(r); !energy.empty()) {
    present::Table t({axis_title(r.mode), "joules", "output tokens / J", "source"});
    for (auto row : energy) t.row(std::move(row));
    page.section("Energy", t.html());
  }
  return page.html();
}

}  // namespace mpo::sweep
