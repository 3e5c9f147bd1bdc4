#include "sweep/render.hpp"

#include <fmt/format.h>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "report/svg_chart.hpp"

namespace mpo::sweep {
namespace {

std::string fixed(std::optional<double> v, int digits = 1) { return v ? fmt::format("{:.{}f}", *v, digits) : "n/a"; }

// A quantile of a latency when measured.
std::optional<double> p50(const QuantileMetric& q) { return q.measured() ? q.p50 : std::nullopt; }
std::optional<double> p99(const QuantileMetric& q) { return q.measured() ? q.p99 : std::nullopt; }

std::string axis_title(LoadMode m) { return m == LoadMode::kConcurrency ? "concurrency" : "offered rate (req/s)"; }

// Acceptance of speculative decoding per point, where the engine published it: TPOT depends on it.
std::string speculative_section(const SweepReceipt& r) {
  std::string rows;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const auto rate = tp.evidence.server_number("spec_acceptance_rate");
      if (!rate) continue;
      rows += fmt::format("| {} | {} | {:.1f}% | {} | {} | {} |\n", go_float_text(p.coordinate), tp.track, 100 * *rate,
                          fixed(tp.evidence.server_number("spec_mean_accepted_length"), 2),
                          fixed(p50(tp.stats.tpot_ms)), fixed(p50(tp.stats.itl_ms)));
    }
  }
  if (rows.empty()) return "";
  return fmt::format(
      "\n## Speculative decoding\n\nThe engine drafted tokens and verified them: TPOT and ITL here depend on how many "
      "it "
      "accepted, not only on the cost of a decode step. A point with lower acceptance has a slower TPOT at the same "
      "load.\n\n| {} | track | accepted | tokens per step | TPOT p50 | ITL p50 |\n|---|---|---|---|---|---|\n{}",
      axis_title(r.mode), rows);
}

std::string finding(const TrackSummary& t, LoadMode m) {
  std::string out;
  out += fmt::format("- **status**: {}{}\n", t.status, t.reason.empty() ? "" : " — " + t.reason);
  if (t.peak) {
    out += fmt::format("- **peak**: {} tok/s at {} {} ({})\n", fixed(t.peak->throughput_tok_s), axis_title(m),
                       go_float_text(t.peak->coordinate), t.peak_status);
  } else {
    out += fmt::format("- **peak**: {}{}\n", t.peak_status, t.peak_reason.empty() ? "" : " — " + t.peak_reason);
  }
  if (t.sla_knee) {
    out += fmt::format("- **SLA knee**: {} tok/s at {} {} ({})\n", fixed(t.sla_knee->throughput_tok_s), axis_title(m),
                       go_float_text(t.sla_knee->coordinate), t.sla_status);
  } else {
    out += fmt::format("- **SLA knee**: {}{}\n", t.sla_status, t.sla_reason.empty() ? "" : " — " + t.sla_reason);
  }
  const auto& b = t.p99_boundary;
  if (b.coordinate) {
    out +=
        fmt::format("- **p99 SLA boundary**: {} {} ({}, {}{})\n", axis_title(m), go_float_text(*b.coordinate), b.status,
                    b.confidence, b.first_failing ? ", first failing " + go_float_text(*b.first_failing) : "");
  } else {
    out += fmt::format("- **p99 SLA boundary**: {}{}\n", b.status, b.reason.empty() ? "" : " — " + b.reason);
  }
  const auto& s = t.saturation;
  if (s.knee) {
    out += fmt::format("- **saturation**: knee at {}, saturated at {}\n", go_float_text(*s.knee),
                       go_float_text(s.saturated_at.value_or(0)));
  } else {
    out += fmt::format("- **saturation**: {}\n", s.status);
  }
  for (const auto& sig : s.signals) {
    out += fmt::format("  - `{}` at {}: {}\n", sig.signal, go_float_text(sig.at), sig.detail);
  }
  return out;
}

}  // namespace

std::string sweep_markdown(const SweepReceipt& r) {
  std::string out = fmt::format("# Serving sweep: {}\n\n", r.model);
  out += fmt::format("{} points of {} requests, workload {}, generated {} on {}.\n\n", r.points.size(),
                     r.workload_requests, r.workload_digest.substr(0, 19), r.generated_at, r.machine_id);
  out += fmt::format("**Verdict: {}**\n\n", r.valid ? "valid" : "not valid for claims");
  for (const auto& why : r.validity_reasons) out += fmt::format("- {}\n", why);
  for (const auto& w : r.warnings) out += fmt::format("- warning: {}\n", w);
  if (!r.validity_reasons.empty() || !r.warnings.empty()) out += "\n";
  out += fmt::format(
      "| {} | status | ok | failed | tok/s | steady tok/s | goodput req/s | TTFT p50 | TTFT p99 | ITL p99 | e2e p99 | "
      "max in flight | lateness p99 ms | KV peak | waiting (capacity) max |\n",
      axis_title(r.mode));
  out += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const auto& s = tp.stats;
      out += fmt::format(
          "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
          go_float_text(p.coordinate), tp.status, tp.reason_code.empty() ? "" : " `" + tp.reason_code + "`", s.ok,
          s.failed, fixed(s.throughput_tok_s.measured_value()),
          fixed(tp.evidence.steady_state ? tp.evidence.steady_state->throughput_tok_s : std::nullopt),
          fixed(s.goodput_rps.measured_value(), 2), fixed(p50(s.ttft_ms)), fixed(p99(s.ttft_ms)), fixed(p99(s.itl_ms)),
          fixed(p99(s.end_to_end_ms)), s.observed_max_in_flight ? std::to_string(*s.observed_max_in_flight) : "n/a",
          fixed(tp.evidence.generator ? tp.evidence.generator->send_lateness_p99_ms : std::nullopt, 3),
          fixed(tp.evidence.server_number("kv_usage_peak"), 2),
          fixed(tp.evidence.server_number("waiting_capacity_max"), 0));
    }
  }
  out +=
      "\nTimes in ms. p99s are nearest-rank over the point's requests (warm-up excluded); the receipt holds a "
      "bootstrap interval for each.\n";
  for (const auto& t : r.tracks) {
    out += fmt::format("\n## Track {}\n\n", t.track);
    out += finding(t, r.mode);
  }
  out += speculative_section(r);
  bool energy = false;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) energy = energy || tp.evidence.energy;
  }
  if (energy) {
    out += fmt::format("\n## Energy\n\n| {} | joules | output tokens / J | source |\n|---|---|---|---|\n",
                       axis_title(r.mode));
    for (const auto& p : r.points) {
      for (const auto& tp : p.tracks) {
        if (!tp.evidence.energy) continue;
        const auto* e = &*tp.evidence.energy;
        out += fmt::format("| {} | {} | {} | {} |\n", go_float_text(p.coordinate), fixed(json_double(*e, "joules"), 1),
                           fixed(json_double(*e, "output_tokens_per_joule"), 3),
                           json_string(*e, "status").value_or("") == "measured"
                               ? std::string(json_string(*e, "source").value_or(""))
                               : "not measured: " + std::string(json_string(*e, "reason").value_or("")));
      }
    }
  }
  return out;
}

std::string sweep_html(const SweepReceipt& r) {
  using report::Chart;
  using report::esc;
  std::string body;
  const std::string x = axis_title(r.mode);
  for (const auto& t : r.tracks) {
    std::vector<std::pair<double, double>> thr, ttft, itl, valid;
    double x0 = 0, x1 = 0;
    for (const auto& p : r.points) {
      for (const auto& tp : p.tracks) {
        if (tp.track != t.track) continue;
        if (x0 == 0 || p.coordinate < x0) x0 = p.coordinate;
        x1 = std::max(x1, p.coordinate);
        if (auto v = tp.stats.throughput_tok_s.measured_value()) {
          thr.emplace_back(p.coordinate, *v);
          if (tp.status == "valid") valid.emplace_back(p.coordinate, *v);
        }
        if (auto v = p99(tp.stats.ttft_ms)) ttft.emplace_back(p.coordinate, *v);
        if (auto v = p99(tp.stats.itl_ms)) itl.emplace_back(p.coordinate, *v);
      }
    }
    Chart throughput(fmt::format("Track {}: output token throughput", t.track), x, "tok/s");
    throughput.line(thr, "#1f77b4", "throughput");
    throughput.dots(valid, "#2ca02c", "valid points");
    auto mark = [&](Chart& c, std::optional<double> at, const std::vector<std::pair<double, double>>& series,
                    const std::string& name, const char* color) {
      if (!at) return;
      for (const auto& [px, py] : series) {
        if (px == *at) c.dots({{px, py}}, color, name);
      }
    };
    mark(throughput, t.saturation.knee, thr, "saturation knee", "#d62728");
    if (t.peak) mark(throughput, t.peak->coordinate, thr, "peak", "#9467bd");
    Chart latency(fmt::format("Track {}: p99 TTFT and ITL", t.track), x, "ms");
    latency.line(ttft, "#ff7f0e", "TTFT p99");
    latency.line(itl, "#17becf", "ITL p99");
    if (r.sla.ttft_p99_ms > 0)
      latency.line({{x0, r.sla.ttft_p99_ms}, {x1, r.sla.ttft_p99_ms}}, "#ff7f0e", "TTFT budget");
    if (r.sla.itl_p99_ms > 0) latency.line({{x0, r.sla.itl_p99_ms}, {x1, r.sla.itl_p99_ms}}, "#17becf", "ITL budget");
    mark(latency, t.p99_boundary.coordinate, ttft, "p99 SLA boundary", "#d62728");
    if (t.sla_knee) mark(latency, t.sla_knee->coordinate, ttft, "SLA knee", "#9467bd");
    body += throughput.svg() + latency.svg();
  }
  std::string md = sweep_markdown(r);
  return fmt::format(R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Serving sweep: {}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}}
.chart{{background:#fafafa;border:1px solid #ddd}} .axis{{stroke:#555}} .tick,.label,.legend{{font-size:11px}}
figure{{display:inline-block;margin:0.5em}} pre{{white-space:pre-wrap;background:#f4f4f4;padding:1em}}</style></head>
<body><h1>Serving sweep: {}</h1><p>Verdict: <strong>{}</strong></p>{}<h2>Summary</h2><pre>{}</pre></body></html>
)",
                     esc(r.model), esc(r.model), r.valid ? "valid" : "not valid for claims", body, esc(md));
}

}  // namespace mpo::sweep
