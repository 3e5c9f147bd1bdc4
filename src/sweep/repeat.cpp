// The implementation of sweep/repeat.hpp.
#include "sweep/repeat.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/go_json.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"
#include "sweep/render.hpp"

namespace mpo::sweep {
namespace {

std::string joined(const std::vector<std::optional<double>>& values, int digits = 1) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + fixed(v, digits);
  return out;
}

struct Across {
  std::vector<std::optional<double>> throughput, ttft_p99, itl_p99;
  std::size_t valid = 0;
};

// (highest - lowest) / mean over the runs that measured it; nullopt under two.
std::optional<double> spread(const std::vector<std::optional<double>>& values) {
  std::vector<double> v;
  for (const auto& x : values) {
    if (x) v.push_back(*x);
  }
  if (v.size() < 2) return std::nullopt;
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  if (mean <= 0) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return (*hi - *lo) / mean;
}

std::optional<double> mean(const std::vector<std::optional<double>>& values) {
  double sum = 0;
  std::size_t n = 0;
  for (const auto& x : values) {
    if (x) sum += *x, ++n;
  }
  return n > 0 ? std::optional<double>(sum / static_cast<double>(n)) : std::nullopt;
}

std::optional<double> p99_of(const QuantileMetric& q) { return q.measured() ? q.p99 : std::nullopt; }

// What both the summary and the page say: the table's rows, the findings (name, text), the runs'
// throughput by point for the chart.
struct RepeatView {
  std::string intro;
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::pair<std::string, std::string>> findings;
  std::vector<std::vector<present::Point>> throughput_by_run;  // ours track only
};

RepeatView repeat_view(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files) {
  RepeatView v;
  const SweepReceipt& first = runs.front();
  const char* key = point_key(first.mode);
  v.intro = fmt::format(
      "The same workload ({}) run {} times, one run after another; each run sent prompts of its own (its own "
      "prompt salt), so none was served from a prefix cache an earlier run filled. Each run's receipt stands "
      "alone: {}.",
      first.workload_digest.substr(0, 19), runs.size(), fmt::format("{}", fmt::join(files, ", ")));
  // (track, coordinate) -> the runs' figures, in the order the points come.
  std::map<std::pair<std::string, double>, Across> across;
  v.throughput_by_run.resize(runs.size());
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& p : runs[i].points) {
      for (const auto& tp : p.tracks) {
        auto& a = across[{tp.track, p.coordinate}];
        a.throughput.resize(runs.size());
        a.ttft_p99.resize(runs.size());
        a.itl_p99.resize(runs.size());
        a.throughput[i] = tp.stats.throughput_tok_s.measured_value();
        a.ttft_p99[i] = p99_of(tp.stats.ttft_ms);
        a.itl_p99[i] = p99_of(tp.stats.itl_ms);
        if (tp.status == "valid") ++a.valid;
        if (a.throughput[i] && tp.track == first.tracks.front().track) {
          v.throughput_by_run[i].push_back({p.coordinate, *a.throughput[i]});
        }
      }
    }
  }
  const bool tracks = std::any_of(across.begin(), across.end(), [&](const auto& e) { return e.first.first != "ours"; });
  v.headers = {fmt::format("{}{}", key, tracks ? " (track)" : ""),
               "tok/s per run",
               "mean",
               "spread",
               "TTFT p99 per run (ms)",
               "ITL p99 per run (ms)",
               "valid"};
  std::optional<std::pair<double, std::string>> widest;  // spread, where
  for (const auto& [at, a] : across) {
    const auto s = spread(a.throughput);
    const std::string track = tracks ? " (" + at.first + ")" : std::string();
    if (s && (!widest || *s > widest->first)) {
      widest = std::pair{*s, fmt::format("{} {}{}", key, go_float_text(at.second), track)};
    }
    v.rows.push_back({go_float_text(at.second) + track, joined(a.throughput), fixed(mean(a.throughput)),
                      s ? fmt::format("{:.1f}%", 100 * *s) : "n/a", joined(a.ttft_p99), joined(a.itl_p99),
                      fmt::format("{} of {}", a.valid, runs.size())});
  }
  std::string peaks;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& t : runs[i].tracks) {
      peaks += fmt::format("{}run {}{}: {}", peaks.empty() ? "" : "; ", i + 1, tracks ? " " + t.track : std::string(),
                           t.peak ? fmt::format("{:.1f} tok/s at {} {}", t.peak->throughput_tok_s, key,
                                                go_float_text(t.peak->coordinate))
                                  : t.peak_status);
    }
  }
  v.findings.emplace_back("peak per run", peaks);
  // Where the peak fell, run by run: a peak that moves is a finding no single run can carry.
  for (const auto& t : first.tracks) {
    std::vector<double> at;
    for (const auto& run : runs) {
      for (const auto& rt : run.tracks) {
        if (rt.track == t.track && rt.peak) at.push_back(rt.peak->coordinate);
      }
    }
    if (at.size() >= 2 && std::any_of(at.begin(), at.end(), [&](double c) { return c != at.front(); })) {
      std::string where;
      for (double c : at) where += (where.empty() ? "" : ", ") + go_float_text(c);
      v.findings.emplace_back(
          "the peak moved" + (tracks ? " (" + t.track + ")" : std::string()),
          fmt::format("at {} {} in the runs that found one; no single run's peak stands for the server", key, where));
    }
  }
  if (widest) {
    v.findings.emplace_back(
        "largest spread",
        fmt::format("{:.1f}% of throughput at {}: between two engines (or two settings) measured this way, a "
                    "difference of that order is what reruns alone give",
                    100 * widest->first, widest->second));
  }
  v.findings.emplace_back("to compare with another run set",
                          fmt::format("pool each side's runs: `modelperfobs sweep compare {} OTHER1.json,...` (each "
                                      "interval then resamples the runs, then the requests within them)",
                                      fmt::format("{}", fmt::join(files, ","))));
  return v;
}

constexpr const char* kSpreadNote = "Spread: the highest throughput less the lowest, over their mean.";

}  // namespace

std::string repeat_markdown(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files) {
  if (runs.empty()) return {};
  const RepeatView v = repeat_view(runs, files);
  std::string out = fmt::format("# Sweep repeated: {} runs of {}\n\n{}\n\n", runs.size(), runs.front().model, v.intro);
  out += markdown_table(v.headers, v.rows);
  out += fmt::format("\n{}\n\n", kSpreadNote);
  for (const auto& [name, text] : v.findings) out += fmt::format("- **{}**: {}\n", name, text);
  return out;
}

std::string repeat_html(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files) {
  if (runs.empty()) return {};
  const RepeatView v = repeat_view(runs, files);
  const SweepReceipt& first = runs.front();
  present::Header h;
  h.title = fmt::format("Sweep repeated: {} runs of {}", runs.size(), first.model);
  h.measured = v.intro;
  h.facts = {{"runs", std::to_string(runs.size())}, {"workload", first.workload_digest.substr(0, 19)}};
  present::Page page(std::move(h));
  present::Table table(v.headers);
  for (auto row : v.rows) table.row(std::move(row));
  page.section("Spread by point", table.html("spread") + present::paragraph(kSpreadNote, "note"));
  std::vector<double> xs;
  for (const auto& run : v.throughput_by_run) {
    for (const auto& p : run) xs.push_back(p.x);
  }
  const bool closed = first.mode == loadgen::LoadMode::kConcurrency;
  present::Chart chart(
      "Output token throughput, run by run",
      present::Axis{axis_title(first.mode), closed ? present::scale_for_counts(xs) : present::scale_for(xs, 8)},
      present::Axis{"tokens/s"});
  for (std::size_t i = 0; i < v.throughput_by_run.size(); ++i) {
    chart.add(present::Series{fmt::format("run {}", i + 1), v.throughput_by_run[i], present::Mark::kLineDots, {}});
  }
  chart.note("Each line one run of the same sweep: where they part is what a rerun alone moves.");
  if (!chart.empty()) page.section("Throughput by run", chart.svg());
  std::vector<std::string> findings;
  for (const auto& [name, text] : v.findings) {
    std::string plain = name + ": " + text;
    std::erase(plain, '`');  // Markdown's code marks
    findings.push_back(std::move(plain));
  }
  page.section("Findings", present::bullets(findings));
  return page.html();
}

}  // namespace mpo::sweep
