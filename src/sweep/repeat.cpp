// The implementation of sweep/repeat.hpp.
#include "sweep/repeat.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/go_json.hpp"

namespace mpo::sweep {
namespace {

std::string fixed(std::optional<double> v, int digits = 1) { return v ? fmt::format("{:.{}f}", *v, digits) : "n/a"; }

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

}  // namespace

std::string repeat_markdown(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files) {
  if (runs.empty()) return {};
  const SweepReceipt& first = runs.front();
  const char* key = point_key(first.mode);
  std::string out = fmt::format("# Sweep repeated: {} runs of {}\n\n", runs.size(), first.model);
  out += fmt::format(
      "The same workload ({}) run {} times, one run after another; each run sent prompts of its own (its own "
      "prompt salt), so none was served from a prefix cache an earlier run filled. Each run's receipt stands "
      "alone: {}.\n\n",
      first.workload_digest.substr(0, 19), runs.size(), fmt::format("{}", fmt::join(files, ", ")));
  // (track, coordinate) -> the runs' figures, in the order the points come.
  std::map<std::pair<std::string, double>, Across> across;
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
      }
    }
  }
  const bool tracks = std::any_of(across.begin(), across.end(), [&](const auto& e) { return e.first.first != "ours"; });
  out +=
      fmt::format("| {}{} | tok/s per run | mean | spread | TTFT p99 per run (ms) | ITL p99 per run (ms) | valid |\n",
                  key, tracks ? " (track)" : "");
  out += "|---|---|---|---|---|---|---|\n";
  std::optional<std::pair<double, std::string>> widest;  // spread, where
  for (const auto& [at, a] : across) {
    const auto s = spread(a.throughput);
    const std::string where =
        fmt::format("{} {}{}", key, go_float_text(at.second), tracks ? " (" + at.first + ")" : std::string());
    if (s && (!widest || *s > widest->first)) widest = std::pair{*s, where};
    out += fmt::format("| {}{} | {} | {} | {} | {} | {} | {} of {} |\n", go_float_text(at.second),
                       tracks ? " (" + at.first + ")" : std::string(), joined(a.throughput), fixed(mean(a.throughput)),
                       s ? fmt::format("{:.1f}%", 100 * *s) : "n/a", joined(a.ttft_p99), joined(a.itl_p99), a.valid,
                       runs.size());
  }
  out += "\nSpread: the highest throughput less the lowest, over their mean.\n";
  std::string peaks;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (const auto& t : runs[i].tracks) {
      peaks += fmt::format("{}run {}{}: {}", peaks.empty() ? "" : "; ", i + 1, tracks ? " " + t.track : std::string(),
                           t.peak ? fmt::format("{:.1f} tok/s at {} {}", t.peak->throughput_tok_s, key,
                                                go_float_text(t.peak->coordinate))
                                  : t.peak_status);
    }
  }
  out += fmt::format("\n- **peak per run**: {}\n", peaks);
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
      out += fmt::format(
          "- **the peak moved**{}: at {} {} in the runs that found one; no single run's peak stands for the server\n",
          tracks ? " (" + t.track + ")" : std::string(), key, where);
    }
  }
  if (widest) {
    out += fmt::format(
        "- **largest spread**: {:.1f}% of throughput at {}: between two engines (or two settings) measured this way, "
        "a difference of that order is what reruns alone give\n",
        100 * widest->first, widest->second);
  }
  out += fmt::format(
      "- **to compare with another run set**, pool each side's runs: `modelperfobs sweep compare {} OTHER1.json,...` "
      "(each interval then resamples the runs, then the requests within them)\n",
      fmt::format("{}", fmt::join(files, ",")));
  return out;
}

}  // namespace mpo::sweep
