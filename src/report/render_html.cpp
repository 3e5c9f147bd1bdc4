// `report --format html`: one self-contained file (no scripts, no network) with inline SVG charts
// per group: TTFT and TPOT CDFs, TTFT against prompt tokens with the fitted line, latency and
// e2e latency over time, in-flight concurrency over time (its own axis), output tokens/s over time.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "report/render.hpp"
#include "report/svg_chart.hpp"

namespace mpo::report {
namespace {

std::vector<std::pair<double, double>> cdf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (std::size_t i = 0; i < v.size(); ++i)
    out.emplace_back(v[i], static_cast<double>(i + 1) / static_cast<double>(v.size()));
  return out;
}

std::string charts_for(const GroupStats& g, const std::vector<const Row*>& rs) {
  std::vector<double> ttft, tpot;
  std::vector<std::pair<double, double>> scatter, e2e_t;
  std::vector<std::pair<std::int64_t, int>> edges;  // concurrency steps
  double mean_inflight = g.in_flight ? g.in_flight->mean : 0;
  double max_prompt = 0;
  for (const auto* r : rs) {
    if (r->ttft_ms) ttft.push_back(*r->ttft_ms);
    if (r->tpot_ms) tpot.push_back(*r->tpot_ms);
    if (r->ttft_ms && r->prompt_tokens) {
      scatter.emplace_back(static_cast<double>(*r->prompt_tokens), *r->ttft_ms);
      max_prompt = std::max(max_prompt, static_cast<double>(*r->prompt_tokens));
    }
    const double t = static_cast<double>(r->started_at_us - g.window_start_us) / 1e6;
    if (r->e2e_ms) e2e_t.emplace_back(t, *r->e2e_ms);
    edges.emplace_back(r->started_at_us, +1);
    edges.emplace_back(r->ended_at_us.value_or(r->started_at_us), -1);
  }
  std::sort(edges.begin(), edges.end());
  std::vector<std::pair<double, double>> inflight;
  int level = 0;
  for (const auto& [t, d] : edges) {
    const double x = static_cast<double>(t - g.window_start_us) / 1e6;
    inflight.emplace_back(x, level);
    level += d;
    inflight.emplace_back(x, level);
  }
  // Output tokens per second in 30 bins over the window, by completion time.
  constexpr int kBins = 30;
  std::vector<double> bins(kBins, 0.0);
  const double width_s = std::max(g.window_s / kBins, 1e-6);
  for (const auto* r : rs) {
    if (!r->completion_tokens || !r->ended_at_us) continue;
    const auto b = std::min<std::size_t>(
        kBins - 1, static_cast<std::size_t>(static_cast<double>(*r->ended_at_us - g.window_start_us) / 1e6 / width_s));
    bins[b] += static_cast<double>(*r->completion_tokens) / width_s;
  }
  std::vector<std::pair<double, double>> rate;
  for (int i = 0; i < kBins; ++i) rate.emplace_back((i + 0.5) * width_s, bins[static_cast<std::size_t>(i)]);

  Chart c1("TTFT and TPOT, cumulative distribution", "ms", "share of requests");
  c1.line(cdf(ttft), "#1f77b4", "TTFT");
  c1.line(cdf(tpot), "#d62728", "TPOT");
  Chart c2("TTFT against prompt tokens, with the fitted line", "prompt tokens", "TTFT ms");
  c2.dots(scatter, "#1f77b4", "requests");
  // The line only where the fit has a prompt term; a two-variable fit is drawn at the mean in-flight
  // count and says so (its R² is the two-variable one).
  if (g.fit && g.fit->prompt_varies) {
    auto at = [&](double p) {
      return g.fit->a_ms + g.fit->b_ms_per_token * p + g.fit->c_ms_per_in_flight * mean_inflight;
    };
    const std::string label =
        g.fit->in_flight_varies
            ? fmt::format("fit (R² {:.2f}, two variables) at the mean in flight {:.1f}", g.fit->r2, mean_inflight)
            : fmt::format("fit (R² {:.2f})", g.fit->r2);
    c2.line({{0, at(0)}, {max_prompt, at(max_prompt)}}, "#ff7f0e", label);
  }
  // Milliseconds and request counts do not share an axis: two charts.
  Chart c3("End-to-end latency over time", "seconds since window start", "e2e ms");
  c3.dots(e2e_t, "#2ca02c", "e2e ms");
  Chart c3b("Requests in flight over time", "seconds since window start", "requests in flight");
  c3b.line(inflight, "#9467bd", "in flight");
  Chart c4("Output tokens per second over time", "seconds since window start", "tokens/s");
  c4.line(rate, "#8c564b", "output tok/s");
  return c1.svg() + c2.svg() + c3.svg() + c3b.svg() + c4.svg();
}

std::string ms_cell(const std::optional<Summary>& s, double Summary::*q) {
  return s ? fmt::format("{:.1f}", (*s).*q) : "n/a";
}

}  // namespace

std::string render_html(const ReportInput& in) {
  const auto by_group = rows_by_group(in.table, in.options);
  std::string o =
      R"x(<!doctype html><html lang="en"><head><meta charset="utf-8"><title>modelperfobs report</title><style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1120px;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}
figure{display:inline-block;margin:8px}figcaption{font-size:13px;font-weight:600}
.axis{stroke:#444;stroke-width:1}.tick,.legend{font-size:11px}.label{font-size:12px;fill:#444}
.verdict{font-size:18px;margin:.5em 0}
</style></head><body><h1>modelperfobs report</h1>)x";
  o += fmt::format("<p>{} observations from {}; grouped by {}.</p>", in.table.size(),
                   esc(fmt::format("{}", fmt::join(in.sources, ", "))), group_by_name(in.options.by));
  for (const auto& g : in.groups) {
    o += fmt::format("<section class=\"group\"><h2>{}</h2>", esc(g.key));
    const auto& top = g.ranking.front();
    o += top.score >= 1 ? fmt::format("<p class=\"verdict\">Likely bottleneck: <b>{}</b> (score {:.1f})</p>",
                                      esc(top.name), top.score)
                        : std::string("<p class=\"verdict\">No candidate crosses its threshold.</p>");
    if (auto t = timing_summary(g); !t.empty()) {
      // The summary marks its warning with Markdown's ** (stripped here: the page escapes text).
      std::string plain;
      for (std::size_t i = 0; i < t.size(); ++i) {
        if (t.compare(i, 2, "**") == 0) {
          ++i;
          continue;
        }
        plain.push_back(t[i]);
      }
      o += fmt::format("<p class=\"timing\">{}</p>", esc(plain));
    }
    o +=
        "<table class=\"percentiles\"><tr><th>ms</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th></tr>";
    for (const auto& [name, summary] :
         {std::pair{"TTFT", &g.ttft_ms}, std::pair{"TPOT", &g.tpot_ms}, std::pair{"ITL p95", &g.itl_p95_ms},
          std::pair{"e2e", &g.e2e_ms}, std::pair{"TTFB", &g.ttfb_ms}}) {
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", name,
                       ms_cell(*summary, &Summary::p50), ms_cell(*summary, &Summary::p90),
                       ms_cell(*summary, &Summary::p95), ms_cell(*summary, &Summary::p99),
                       ms_cell(*summary, &Summary::max));
    }
    o += "</table>";
    o += "<table><tr><th>rank</th><th>candidate</th><th>score</th><th>evidence</th></tr>";
    int rank = 0;
    for (const auto& c : g.ranking) {
      if (!shown_in_ranking(c)) continue;
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.2f}</td><td>{}</td></tr>", ++rank, esc(c.name), c.score,
                       esc(fmt::format("{}", fmt::join(c.evidence, "; "))));
    }
    o += "</table>";
    if (!g.apis.empty()) {
      o += "<table><tr><th>API</th><th>requests</th><th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>TPOT p50 ms</th>"
           "<th>TPOT p99 ms</th><th>e2e p99 ms</th></tr>";
      for (const auto& a : g.apis) {
        o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                         esc(a.operation), a.requests, ms_cell(a.ttft_ms, &Summary::p50),
                         ms_cell(a.ttft_ms, &Summary::p99), ms_cell(a.tpot_ms, &Summary::p50),
                         ms_cell(a.tpot_ms, &Summary::p99), ms_cell(a.e2e_ms, &Summary::p99));
      }
      o += "</table>";
    }
    const auto rows = by_group.find(g.key);
    o += charts_for(g, rows == by_group.end() ? std::vector<const Row*>{} : rows->second);
    o += "</section>";
  }
  if (!in.others.empty()) {
    o += "<section class=\"others\"><h2>Other requests</h2><p>They generate nothing (no TTFT, no decode) and are "
         "not ranked.</p><table><tr><th>operation</th><th>requests</th><th>error rate</th><th>e2e p50 ms</th>"
         "<th>e2e p99 ms</th><th>prompt tokens</th></tr>";
    for (const auto& x : in.others) {
      o += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       esc(x.operation), x.requests, x.error_rate, ms_cell(x.e2e_ms, &Summary::p50),
                       ms_cell(x.e2e_ms, &Summary::p99), x.prompt_tokens_total);
    }
    o += "</table></section>";
  }
  o += in.engine_trace_html;
  return o + "</body></html>\n";
}

}  // namespace mpo::report
