// The implementation of report/compare.hpp. Before and after: `report --input NEW --baseline OLD`
// (docs/REPORT.md "Before and after").
#include "report/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <random>

#include "core/json.hpp"
#include "core/stats.hpp"
#include "present/page.hpp"

namespace mpo::report {

namespace {
// Said under every comparison: what its intervals leave out (issue 38).
constexpr const char* kOneRunPerSide =
    "One run per side: each interval resamples the requests within a run, so it leaves out how much a rerun of the "
    "same workload varies; a change near that size may be run-to-run noise. Compare two runs of the baseline with "
    "each other first to see it.";
}  // namespace
namespace {

struct Metric {
  const char* name;  // ttft, tpot, itl, e2e
  Maybe<double> Row::*field;
};
constexpr Metric kMetrics[] = {
    {"ttft", &Row::ttft_ms}, {"tpot", &Row::tpot_ms}, {"itl", &Row::itl_p95_ms}, {"e2e", &Row::e2e_ms}};
constexpr double kQuantiles[] = {0.5, 0.9, 0.95, 0.99};
constexpr int kTestsPerGroup = static_cast<int>(std::size(kMetrics) * std::size(kQuantiles)) + 1;

}  // namespace

bool enough_for_quantile(std::size_t n, double q) { return static_cast<double>(n) * (1 - q) >= 5 && n >= 10; }

namespace {

// Each resample's quantiles at kQuantiles, of a sorted sample: a resample is n indices drawn with
// replacement, counted (no sort: the sample is sorted, so the counts order the resample), and
// each quantile read from the cumulative counts as quantile_cont reads a sorted array. O(n) per
// resample, all four quantiles from one draw.
std::vector<std::array<double, std::size(kQuantiles)>> resampled_quantiles(const std::vector<double>& sorted,
                                                                           int resamples, std::mt19937_64& rng) {
  const std::size_t n = sorted.size();
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  std::vector<std::uint32_t> counts(n);
  std::vector<std::array<double, std::size(kQuantiles)>> out(static_cast<std::size_t>(resamples));
  for (auto& qs : out) {
    std::fill(counts.begin(), counts.end(), 0);
    for (std::size_t i = 0; i < n; ++i) ++counts[pick(rng)];
    // The order statistic at 0-based rank r: the first index whose cumulative count exceeds r.
    std::size_t idx = 0, cum = counts[0];
    auto at_rank = [&](std::size_t r) {
      while (cum <= r) cum += counts[++idx];
      return sorted[idx];
    };
    for (std::size_t k = 0; k < std::size(kQuantiles); ++k) {
      const double h = static_cast<double>(n - 1) * kQuantiles[k];
      const auto lo = static_cast<std::size_t>(std::floor(h));
      const double d = h - static_cast<double>(lo);
      const double x_lo = at_rank(lo);
      const double x_hi = lo + 1 < n ? at_rank(lo + 1) : x_lo;
      qs[k] = x_lo * (1 - d) + x_hi * d;  // quantile_cont's arithmetic
    }
  }
  return out;
}

std::pair<double, double> percentile_interval(std::vector<double>& deltas, double alpha) {
  std::sort(deltas.begin(), deltas.end());
  return {*quantile_cont_sorted(deltas, alpha / 2), *quantile_cont_sorted(deltas, 1 - alpha / 2)};
}

std::vector<double> values(const RowList& rows, Maybe<double> Row::*field) {
  std::vector<double> v;
  for (const Row* r : rows) {
    const auto x = r->*field;
    if (x && std::isfinite(*x)) v.push_back(*x);
  }
  return v;
}

std::string verdict_of(double lo, double hi) {
  if (lo > 0) return "worse";  // every metric here: higher is worse
  if (hi < 0) return "better";
  return "no significant change";
}

const RegressionBound* bound_for(const std::vector<RegressionBound>& bounds, std::string_view metric) {
  for (const auto& b : bounds) {
    if (b.metric == metric) return &b;
  }
  return nullptr;
}

void apply_bound(Change& c, const RegressionBound& b, const std::string& group, Comparison& out) {
  if (!c.delta || !c.base) {
    out.ungated.push_back(fmt::format("{} {}: not enough data", group, c.metric));
    return;
  }
  switch (b.kind) {
    case RegressionBound::Kind::kRelative: c.bound = *c.base * b.limit / 100.0; break;
    case RegressionBound::Kind::kPoints: c.bound = b.limit / 100.0; break;
    case RegressionBound::Kind::kAbsolute: c.bound = b.limit; break;
  }
  c.beyond_bound = c.verdict == "worse" && *c.delta > *c.bound;
  if (!c.beyond_bound) return;
  const std::string change = c.metric == "error_rate" ? fmt::format("{:+.2f}pp", *c.delta * 100)
                             : *c.base > 0 ? fmt::format("{:+.1f}% ({:+.2f} ms)", *c.delta / *c.base * 100, *c.delta)
                                           : fmt::format("{:+.2f} ms", *c.delta);
  const std::string limit = b.kind == RegressionBound::Kind::kRelative ? fmt::format("{}%", b.limit)
                            : b.kind == RegressionBound::Kind::kPoints ? fmt::format("{}pp", b.limit)
                                                                       : fmt::format("{} ms", b.limit);
  out.gate_failures.push_back(fmt::format("{} {}: {} (bound {})", group, c.metric, change, limit));
}

GroupChange compare_group(std::string key, const RowList& base, const RowList& next, const CompareOptions& opts,
                          double alpha, std::mt19937_64& rng) {
  GroupChange g{std::move(key), {}};
  for (const auto& m : kMetrics) {
    auto a = values(base, m.field);
    auto b = values(next, m.field);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    std::vector<std::array<double, std::size(kQuantiles)>> ra, rb;
    if (enough_for_quantile(a.size(), kQuantiles[0]) && enough_for_quantile(b.size(), kQuantiles[0])) {
      ra = resampled_quantiles(a, opts.resamples, rng);
      rb = resampled_quantiles(b, opts.resamples, rng);
    }
    for (std::size_t k = 0; k < std::size(kQuantiles); ++k) {
      const double q = kQuantiles[k];
      Change c;
      c.metric = fmt::format("{}_p{}_ms", m.name, static_cast<int>(std::lround(q * 100)));
      c.n_base = a.size();
      c.n_new = b.size();
      if (!enough_for_quantile(a.size(), q) || !enough_for_quantile(b.size(), q)) {
        c.verdict = "not enough data";
        g.changes.push_back(std::move(c));
        continue;
      }
      c.base = *quantile_cont_sorted(a, q);
      c.next = *quantile_cont_sorted(b, q);
      c.delta = *c.next - *c.base;
      std::vector<double> deltas(ra.size());
      for (std::size_t i = 0; i < ra.size(); ++i) deltas[i] = rb[i][k] - ra[i][k];
      const auto [lo, hi] = percentile_interval(deltas, alpha);
      c.ci_lo = lo;
      c.ci_hi = hi;
      c.verdict = verdict_of(lo, hi);
      g.changes.push_back(std::move(c));
    }
  }
  // The error rate: the share of lines whose outcome is not ok; a resample's share is a binomial
  // draw at the observed share.
  auto errors = [](const RowList& rows) {
    std::size_t n = 0;
    for (const Row* r : rows) n += r->ok() ? 0 : 1;
    return n;
  };
  Change c;
  c.metric = "error_rate";
  c.n_base = base.size();
  c.n_new = next.size();
  if (base.size() < 20 || next.size() < 20) {
    c.verdict = "not enough data";
  } else {
    const auto na = static_cast<double>(base.size()), nb = static_cast<double>(next.size());
    c.base = static_cast<double>(errors(base)) / na;
    c.next = static_cast<double>(errors(next)) / nb;
    c.delta = *c.next - *c.base;
    std::binomial_distribution<std::size_t> da(base.size(), *c.base), db(next.size(), *c.next);
    std::vector<double> deltas(static_cast<std::size_t>(opts.resamples));
    for (auto& d : deltas) d = static_cast<double>(db(rng)) / nb - static_cast<double>(da(rng)) / na;
    const auto [lo, hi] = percentile_interval(deltas, alpha);
    c.ci_lo = lo;
    c.ci_hi = hi;
    c.verdict = verdict_of(lo, hi);
  }
  g.changes.push_back(std::move(c));
  return g;
}

std::string signed_value(const std::optional<double>& v, bool rate) {
  if (!v) return "-";
  return rate ? fmt::format("{:+.2f}pp", *v * 100) : fmt::format("{:+.2f}", *v);
}

std::string plain_value(const std::optional<double>& v, bool rate) {
  if (!v) return "-";
  return rate ? fmt::format("{:.2f}%", *v * 100) : fmt::format("{:.2f}", *v);
}

}  // namespace

Result<std::vector<RegressionBound>> parse_regression_bounds(std::string_view text) {
  std::vector<RegressionBound> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) {
      return make_error(errc::kReportMaxRegression, fmt::format("--max-regression: '{}' is not METRIC=LIMIT", item));
    }
    RegressionBound b;
    b.metric = std::string(item.substr(0, eq));
    std::string_view limit = item.substr(eq + 1);
    if (limit.ends_with("%")) {
      b.kind = RegressionBound::Kind::kRelative;
      limit.remove_suffix(1);
    } else if (limit.ends_with("pp")) {
      b.kind = RegressionBound::Kind::kPoints;
      limit.remove_suffix(2);
    }
    bool known = b.metric == "error_rate";
    for (const auto& m : kMetrics) {
      for (double q : kQuantiles) {
        known = known || b.metric == fmt::format("{}_p{}_ms", m.name, static_cast<int>(std::lround(q * 100)));
      }
    }
    if (!known) {
      return make_error(errc::kReportMaxRegression,
                        fmt::format("--max-regression: unknown metric '{}' (ttft|tpot|itl|e2e _p50|_p90|_p95|_p99 "
                                    "_ms, or error_rate)",
                                    b.metric));
    }
    if ((b.metric == "error_rate") != (b.kind == RegressionBound::Kind::kPoints)) {
      return make_error(errc::kReportMaxRegression,
                        fmt::format("--max-regression {}: the error rate takes percentage points (0.5pp), latencies a "
                                    "percentage (10%) or milliseconds (200)",
                                    b.metric));
    }
    auto [p, ec] = std::from_chars(limit.data(), limit.data() + limit.size(), b.limit);
    if (ec != std::errc() || p != limit.data() + limit.size() || !(b.limit >= 0) || !std::isfinite(b.limit)) {
      return make_error(errc::kReportMaxRegression,
                        fmt::format("--max-regression {}: '{}' is not a non-negative number", b.metric, limit));
    }
    out.push_back(std::move(b));
  }
  return out;
}

Comparison compare_runs(const GroupRows& baseline, const GroupRows& next, const CompareOptions& opts,
                        const std::vector<RegressionBound>& bounds) {
  Comparison out;
  out.resamples = opts.resamples;
  const double alpha = opts.family_alpha / kTestsPerGroup;
  out.interval_level = 1 - alpha;
  std::mt19937_64 rng(opts.seed);
  for (const auto& [key, rows] : next) {
    auto it = baseline.find(key);
    if (it == baseline.end()) {
      out.only_in_new.emplace_back(key);
      continue;
    }
    auto g = compare_group(std::string(key), it->second, rows, opts, alpha, rng);
    for (auto& c : g.changes) {
      if (const auto* b = bound_for(bounds, c.metric)) apply_bound(c, *b, g.key, out);
    }
    out.groups.push_back(std::move(g));
  }
  for (const auto& [key, rows] : baseline) {
    if (!next.contains(key)) out.only_in_baseline.emplace_back(key);
  }
  return out;
}

std::string render_comparison_md(const Comparison& c) {
  std::string o = fmt::format(
      "\n## Before and after (against --baseline)\n\nChange = new - baseline, with a {:.2f}% percentile-bootstrap "
      "interval ({} resamples; {:.0f}% over each group's {} comparisons, Bonferroni). Latencies in ms; ITL is each "
      "request's ITL p95.\n",
      c.interval_level * 100, c.resamples, (1 - (1 - c.interval_level) * kTestsPerGroup) * 100, kTestsPerGroup);
  for (const auto& g : c.groups) {
    o += fmt::format(
        "\n### {}\n\n| metric | n base / new | baseline | new | change | interval | verdict |\n"
        "|---|---|---|---|---|---|---|\n",
        g.key);
    for (const auto& x : g.changes) {
      const bool rate = x.metric == "error_rate";
      std::string verdict = x.verdict == "worse" || x.verdict == "better" ? "**" + x.verdict + "**" : x.verdict;
      if (x.beyond_bound) verdict += ", beyond --max-regression";
      o += fmt::format("| {} | {} / {} | {} | {} | {} | {} | {} |\n", x.metric, x.n_base, x.n_new,
                       plain_value(x.base, rate), plain_value(x.next, rate), signed_value(x.delta, rate),
                       x.ci_lo ? fmt::format("[{}, {}]", signed_value(x.ci_lo, rate), signed_value(x.ci_hi, rate))
                               : std::string("-"),
                       verdict);
    }
  }
  if (!c.only_in_baseline.empty())
    o += fmt::format("\nOnly in the baseline: {}.\n", fmt::join(c.only_in_baseline, ", "));
  if (!c.only_in_new.empty()) o += fmt::format("\nOnly in the new run: {}.\n", fmt::join(c.only_in_new, ", "));
  for (const auto& u : c.ungated) o += fmt::format("\n--max-regression not judged: {}.\n", u);
  o += fmt::format("\n{}\n", kOneRunPerSide);
  if (!c.gate_failures.empty()) {
    o += "\n**Regressions beyond --max-regression** (exit 3):\n\n";
    for (const auto& f : c.gate_failures) o += "- " + f + "\n";
  }
  return o;
}

std::string render_comparison_html(const Comparison& c) {
  std::string o = present::paragraph(
      fmt::format(
          "Change = new - baseline, with a {:.2f}% percentile-bootstrap interval ({} resamples; {:.0f}% over each "
          "group's {} comparisons, Bonferroni). Latencies in ms; ITL is each request's ITL p95.",
          c.interval_level * 100, c.resamples, (1 - (1 - c.interval_level) * kTestsPerGroup) * 100, kTestsPerGroup),
      "note");
  if (!c.gate_failures.empty()) {
    o += present::paragraph("Regressions beyond --max-regression (the command exits 3):", "verdict-line") +
         present::bullets(c.gate_failures);
  }
  for (const auto& g : c.groups) {
    present::Table t({"metric", "n base / new", "baseline", "new", "change", "interval", "verdict"}, g.key);
    for (const auto& x : g.changes) {
      const bool rate = x.metric == "error_rate";
      std::string verdict = x.verdict;
      if (x.beyond_bound) verdict += ", beyond --max-regression";
      t.row({x.metric, fmt::format("{} / {}", x.n_base, x.n_new), plain_value(x.base, rate), plain_value(x.next, rate),
             signed_value(x.delta, rate),
             x.ci_lo ? fmt::format("[{}, {}]", signed_value(x.ci_lo, rate), signed_value(x.ci_hi, rate))
                     : std::string("-"),
             verdict},
            x.verdict == "worse" || x.verdict == "better" ? x.verdict : std::string());
    }
    o += t.html("comparison");
  }
  std::vector<std::string> notes;
  if (!c.only_in_baseline.empty())
    notes.push_back(fmt::format("Only in the baseline: {}.", fmt::join(c.only_in_baseline, ", ")));
  if (!c.only_in_new.empty()) notes.push_back(fmt::format("Only in the new run: {}.", fmt::join(c.only_in_new, ", ")));
  for (const auto& u : c.ungated) notes.push_back(fmt::format("--max-regression not judged: {}.", u));
  notes.emplace_back(kOneRunPerSide);
  return o + present::bullets(notes);
}

std::string render_comparison_json(const Comparison& c) {
  std::vector<std::string> groups;
  for (const auto& g : c.groups) {
    std::vector<std::string> changes;
    for (const auto& x : g.changes) {
      JsonObjectWriter w;
      w.field("metric", x.metric)
          .field("n_baseline", static_cast<std::uint64_t>(x.n_base))
          .field("n_new", static_cast<std::uint64_t>(x.n_new))
          .optional_field("baseline", x.base)
          .optional_field("new", x.next)
          .optional_field("change", x.delta)
          .optional_field("interval_low", x.ci_lo)
          .optional_field("interval_high", x.ci_hi)
          .field("verdict", x.verdict)
          .optional_field("bound", x.bound)
          .field("beyond_bound", x.beyond_bound);
      changes.push_back(std::move(w).finish());
    }
    JsonObjectWriter w;
    w.field("key", g.key).raw_field("changes", fmt::format("[{}]", fmt::join(changes, ",")));
    groups.push_back(std::move(w).finish());
  }
  JsonObjectWriter w;
  w.field("resamples", static_cast<std::int64_t>(c.resamples))
      .field("interval_level", c.interval_level)
      .raw_field("groups", fmt::format("[{}]", fmt::join(groups, ",")))
      .raw_field("only_in_baseline", json_string_array(c.only_in_baseline))
      .raw_field("only_in_new", json_string_array(c.only_in_new))
      .raw_field("gate_failures", json_string_array(c.gate_failures))
      .raw_field("not_judged", json_string_array(c.ungated));
  return std::move(w).finish();
}

}  // namespace mpo::report
