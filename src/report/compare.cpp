// The implementation of report/compare.hpp. Before and after: `report --input NEW --baseline OLD`
// (docs/REPORT.md "Before and after").
#include "report/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <set>

#include "compare/bootstrap.hpp"
#include "compare/table.hpp"
#include "core/json.hpp"
#include "core/stats.hpp"
#include "present/page.hpp"
#include "report/analysis.hpp"

namespace mpo::report {

namespace {
// Said under every comparison: what its intervals leave out (issue 38), or that they carry it.
std::string runs_note(const Comparison& c) {
  if (c.runs_baseline <= 1 && c.runs_new <= 1) {
    return "One run per side: each interval resamples the requests within a run, so it leaves out how much a rerun "
           "of the same workload varies; a change near that size may be run-to-run noise. Give reruns, one ledger "
           "each, with --reruns (sweep --repeat writes them) to carry it.";
  }
  if (c.runs_baseline <= 1 || c.runs_new <= 1) {
    return fmt::format(
        "{} run{} of the baseline and {} of the new: the side with one run carries no rerun's variation, so the "
        "intervals hold only part of it; give both sides two or more reruns.",
        c.runs_baseline, c.runs_baseline == 1 ? "" : "s", c.runs_new);
  }
  return fmt::format(
      "{} runs of the baseline and {} of the new: each interval resamples the runs and then the requests within "
      "them, so it carries how much reruns of the same workload differ.",
      c.runs_baseline, c.runs_new);
}
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

namespace {

using compare::Change;

// A quantile the requests given up on either side leave open (left_open): not judged.
constexpr std::string_view kGivenUpOpen = "requests given up leave it open";

// A metric's values on one side, sorted: `low` with each request given up (report/analysis.hpp
// given_up) at what it waited, its TTFT (where it had none) and e2e being longer; `high` (only
// where some were given up) with it never served. `given_up` counts them.
struct SideValues {
  std::vector<double> low, high;
  std::size_t given_up = 0;
};
SideValues values(const RowList& rows, const Metric& m) {
  const bool ttft = m.field == &Row::ttft_ms, e2e = m.field == &Row::e2e_ms;
  // The value a request given up has here (its wait), or nullopt when it has none or is not one.
  const auto wait = [&](const Row& r) -> std::optional<double> {
    if (ttft) return wait_before_first_token(r);
    if (e2e && r.e2e_ms && given_up(r)) return *r.e2e_ms;
    return std::nullopt;
  };
  SideValues v;
  for (const Row* r : rows) {
    const auto x = r->*m.field;
    if (x && std::isfinite(*x)) {
      v.low.push_back(*x);
      v.given_up += e2e && given_up(*r) ? 1 : 0;
    } else if (const auto w = wait(*r)) {
      v.low.push_back(*w);
      ++v.given_up;
    }
  }
  std::sort(v.low.begin(), v.low.end());
  if (v.given_up == 0) return v;  // `high` is `low`: left_open() does not read it
  for (const Row* r : rows) {
    const auto x = r->*m.field;
    if (wait(*r)) {
      v.high.push_back(kNeverMs);
    } else if (x && std::isfinite(*x)) {
      v.high.push_back(*x);
    }
  }
  std::sort(v.high.begin(), v.high.end());
  return v;
}

// Whether the requests given up leave a side's quantile open: it differs with them at their waits
// and with them never served.
bool left_open(const SideValues& v, double q) {
  return v.given_up > 0 && *quantile_cont_sorted(v.low, q) != *quantile_cont_sorted(v.high, q);
}

const RegressionBound* bound_for(const std::vector<RegressionBound>& bounds, std::string_view metric) {
  for (const auto& b : bounds) {
    if (b.metric == metric) return &b;
  }
  return nullptr;
}

void apply_bound(Change& c, const RegressionBound& b, const std::string& group, Comparison& out) {
  if (!c.delta || !c.a) {
    out.ungated.push_back(fmt::format("{} {}: {}", group, c.metric,
                                      c.verdict == kGivenUpOpen ? kGivenUpOpen : std::string_view("not enough data")));
    return;
  }
  switch (b.kind) {
    case RegressionBound::Kind::kRelative: c.bound = *c.a * b.limit / 100.0; break;
    case RegressionBound::Kind::kPoints: c.bound = b.limit / 100.0; break;
    case RegressionBound::Kind::kAbsolute: c.bound = b.limit; break;
  }
  c.beyond_bound = c.verdict == compare::kWorse && *c.delta > *c.bound;
  if (!c.beyond_bound) return;
  const std::string change = c.metric == "error_rate" ? fmt::format("{:+.2f}pp", *c.delta * 100)
                             : *c.a > 0 ? fmt::format("{:+.1f}% ({:+.2f} ms)", *c.delta / *c.a * 100, *c.delta)
                                        : fmt::format("{:+.2f} ms", *c.delta);
  const std::string limit = b.kind == RegressionBound::Kind::kRelative ? fmt::format("{}%", b.limit)
                            : b.kind == RegressionBound::Kind::kPoints ? fmt::format("{}pp", b.limit)
                                                                       : fmt::format("{} ms", b.limit);
  out.gate_failures.push_back(fmt::format("{} {}: {} (bound {})", group, c.metric, change, limit));
}

// A side's runs of one group: their rows pooled, and each run's apart (one run: the pooled rows).
struct SideRuns {
  RowList pooled;
  std::vector<const RowList*> runs;
};

// Resamples of a metric's quantiles on one side: one run, its values (sorted) resampled; several,
// the runs drawn and then the values within each drawn run (compare/bootstrap.hpp).
std::vector<std::vector<double>> resampled_side(const SideRuns& side, const SideValues& pooled, const Metric& m,
                                                int resamples, std::mt19937_64& rng) {
  if (side.runs.size() <= 1) return compare::resampled_quantiles(pooled.low, kQuantiles, resamples, rng);
  std::vector<std::pair<double, std::size_t>> tagged;  // value, run
  for (std::size_t r = 0; r < side.runs.size(); ++r) {
    for (double v : values(*side.runs[r], m).low) tagged.emplace_back(v, r);
  }
  std::sort(tagged.begin(), tagged.end());
  std::vector<double> sorted(tagged.size());
  std::vector<std::vector<std::size_t>> by_run(side.runs.size());
  for (std::size_t i = 0; i < tagged.size(); ++i) {
    sorted[i] = tagged[i].first;
    by_run[tagged[i].second].push_back(i);
  }
  return compare::resampled_quantiles_of_runs(sorted, by_run, kQuantiles, resamples, rng);
}

std::size_t errors_in(const RowList& rows) {
  std::size_t n = 0;
  for (const Row* r : rows) n += r->ok() ? 0 : 1;
  return n;
}

// Resampled changes of the error rate: one run a side, a binomial draw at each side's share; with
// reruns, the runs drawn and a draw at each drawn run's own share.
std::vector<double> error_rate_changes(const SideRuns& a, const SideRuns& b, double share_a, double share_b,
                                       int resamples, std::mt19937_64& rng) {
  if (a.runs.size() <= 1 && b.runs.size() <= 1) {
    return compare::resampled_share_changes(a.pooled.size(), share_a, b.pooled.size(), share_b, resamples, rng);
  }
  auto shares = [&](const SideRuns& side) {
    std::vector<std::pair<std::size_t, double>> runs;
    for (const RowList* r : side.runs) {
      runs.emplace_back(r->size(),
                        r->empty() ? 0.0 : static_cast<double>(errors_in(*r)) / static_cast<double>(r->size()));
    }
    return compare::resampled_shares_of_runs(runs, resamples, rng);
  };
  const auto da = shares(a), db = shares(b);
  std::vector<double> deltas(da.size());
  for (std::size_t i = 0; i < da.size(); ++i) deltas[i] = db[i] - da[i];
  return deltas;
}

// The group's latency quantiles (all four from each resample of a metric's values) and its error
// rate.
GroupChange compare_group(std::string key, const SideRuns& base_side, const SideRuns& next_side,
                          const CompareOptions& opts, double alpha, std::mt19937_64& rng) {
  GroupChange g{std::move(key), {}};
  const RowList &base = base_side.pooled, &next = next_side.pooled;
  for (const auto& m : kMetrics) {
    const SideValues va = values(base, m), vb = values(next, m);
    const std::vector<double>&a = va.low, &b = vb.low;
    std::vector<std::vector<double>> ra, rb;
    if (compare::enough_for_quantile(a.size(), kQuantiles[0]) &&
        compare::enough_for_quantile(b.size(), kQuantiles[0])) {
      ra = resampled_side(base_side, va, m, opts.resamples, rng);
      rb = resampled_side(next_side, vb, m, opts.resamples, rng);
    }
    for (std::size_t k = 0; k < std::size(kQuantiles); ++k) {
      const double q = kQuantiles[k];
      Change c;
      c.metric = fmt::format("{}_p{}_ms", m.name, static_cast<int>(std::lround(q * 100)));
      c.n_a = a.size();
      c.n_b = b.size();
      if (!compare::enough_for_quantile(a.size(), q) || !compare::enough_for_quantile(b.size(), q)) {
        c.verdict = compare::kNotEnoughData;
        g.changes.push_back(std::move(c));
        continue;
      }
      c.a = *quantile_cont_sorted(a, q);
      c.b = *quantile_cont_sorted(b, q);
      if (left_open(va, q) || left_open(vb, q)) {
        // A side whose slowest clients gave up would read as faster than one that served them.
        c.verdict = kGivenUpOpen;
        g.changes.push_back(std::move(c));
        continue;
      }
      c.delta = *c.b - *c.a;
      std::vector<double> deltas;
      deltas.reserve(ra.size());
      for (std::size_t i = 0; i < ra.size(); ++i) {
        if (!std::isnan(ra[i][k]) && !std::isnan(rb[i][k])) deltas.push_back(rb[i][k] - ra[i][k]);
      }
      compare::judge(c, deltas, alpha, false);  // every metric here: higher is worse
      g.changes.push_back(std::move(c));
    }
  }
  Change c;
  c.metric = "error_rate";
  c.n_a = base.size();
  c.n_b = next.size();
  if (base.size() < 20 || next.size() < 20) {
    c.verdict = compare::kNotEnoughData;
  } else {
    c.a = static_cast<double>(errors_in(base)) / static_cast<double>(base.size());
    c.b = static_cast<double>(errors_in(next)) / static_cast<double>(next.size());
    c.delta = *c.b - *c.a;
    auto deltas = error_rate_changes(base_side, next_side, *c.a, *c.b, opts.resamples, rng);
    compare::judge(c, deltas, alpha, false);
  }
  g.changes.push_back(std::move(c));
  return g;
}

const compare::Labels kLabels{"n base / new", "baseline", "new", "baseline", "new", true};

std::string interval_sentence(const Comparison& c) {
  return fmt::format(
      "Change = new - baseline, with a {:.2f}% percentile-bootstrap interval ({} resamples; {:.0f}% over each group's "
      "{} comparisons, Bonferroni). Latencies in ms; ITL is each request's ITL p95.",
      c.interval_level * 100, c.resamples, (1 - (1 - c.interval_level) * kTestsPerGroup) * 100, kTestsPerGroup);
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
  return compare_reruns({&baseline}, {&next}, opts, bounds);
}

Comparison compare_reruns(const std::vector<const GroupRows*>& baseline, const std::vector<const GroupRows*>& next,
                          const CompareOptions& opts, const std::vector<RegressionBound>& bounds) {
  Comparison out;
  out.resamples = opts.resamples;
  out.runs_baseline = baseline.size();
  out.runs_new = next.size();
  const compare::Family family{opts.family_alpha, kTestsPerGroup};
  const double alpha = family.alpha();
  out.interval_level = family.interval_level();
  std::mt19937_64 rng(opts.seed);
  // A group's rows on one side, run by run (a run without the group holds none of it).
  static const RowList kNone;
  auto side = [](const std::vector<const GroupRows*>& runs, std::string_view key) {
    SideRuns s;
    for (const GroupRows* run : runs) {
      const auto it = run->find(key);
      const RowList& rows = it == run->end() ? kNone : it->second;
      s.runs.push_back(&rows);
      s.pooled.insert(s.pooled.end(), rows.begin(), rows.end());
    }
    return s;
  };
  std::set<std::string_view> keys_next, keys_base;
  for (const GroupRows* run : next) {
    for (const auto& [key, rows] : *run) keys_next.insert(key);
  }
  for (const GroupRows* run : baseline) {
    for (const auto& [key, rows] : *run) keys_base.insert(key);
  }
  for (const auto key : keys_next) {
    if (!keys_base.contains(key)) {
      out.only_in_new.emplace_back(key);
      continue;
    }
    auto g = compare_group(std::string(key), side(baseline, key), side(next, key), opts, alpha, rng);
    for (auto& c : g.changes) {
      if (const auto* b = bound_for(bounds, c.metric)) apply_bound(c, *b, g.key, out);
    }
    out.groups.push_back(std::move(g));
  }
  for (const auto key : keys_base) {
    if (!keys_next.contains(key)) out.only_in_baseline.emplace_back(key);
  }
  return out;
}

std::string render_comparison_md(const Comparison& c) {
  std::string o = fmt::format("\n## Before and after (against --baseline)\n\n{}\n", interval_sentence(c));
  for (const auto& g : c.groups) o += fmt::format("\n### {}\n\n{}", g.key, compare::md_table(g.changes, kLabels));
  if (!c.only_in_baseline.empty())
    o += fmt::format("\nOnly in the baseline: {}.\n", fmt::join(c.only_in_baseline, ", "));
  if (!c.only_in_new.empty()) o += fmt::format("\nOnly in the new run: {}.\n", fmt::join(c.only_in_new, ", "));
  for (const auto& u : c.ungated) o += fmt::format("\n--max-regression not judged: {}.\n", u);
  o += fmt::format("\n{}\n", runs_note(c));
  if (!c.gate_failures.empty()) {
    o += "\n**Regressions beyond --max-regression** (exit 3):\n\n";
    for (const auto& f : c.gate_failures) o += "- " + f + "\n";
  }
  return o;
}

std::string render_comparison_html(const Comparison& c) {
  std::string o = present::paragraph(interval_sentence(c), "note");
  if (!c.gate_failures.empty()) {
    o += present::paragraph("Regressions beyond --max-regression (the command exits 3):", "verdict-line") +
         present::bullets(c.gate_failures);
  }
  for (const auto& g : c.groups) o += compare::html_table(g.changes, kLabels, g.key);
  std::vector<std::string> notes;
  if (!c.only_in_baseline.empty())
    notes.push_back(fmt::format("Only in the baseline: {}.", fmt::join(c.only_in_baseline, ", ")));
  if (!c.only_in_new.empty()) notes.push_back(fmt::format("Only in the new run: {}.", fmt::join(c.only_in_new, ", ")));
  for (const auto& u : c.ungated) notes.push_back(fmt::format("--max-regression not judged: {}.", u));
  notes.push_back(runs_note(c));
  return o + present::bullets(notes);
}

std::string render_comparison_json(const Comparison& c) {
  std::vector<std::string> groups;
  for (const auto& g : c.groups) {
    JsonObjectWriter w;
    w.field("key", g.key).raw_field("changes", compare::changes_json(g.changes, kLabels));
    groups.push_back(std::move(w).finish());
  }
  JsonObjectWriter w;
  w.field("resamples", static_cast<std::int64_t>(c.resamples))
      .field("interval_level", c.interval_level)
      .field("runs_baseline", static_cast<std::uint64_t>(c.runs_baseline))
      .field("runs_new", static_cast<std::uint64_t>(c.runs_new))
      .raw_field("groups", fmt::format("[{}]", fmt::join(groups, ",")))
      .raw_field("only_in_baseline", json_string_array(c.only_in_baseline))
      .raw_field("only_in_new", json_string_array(c.only_in_new))
      .raw_field("gate_failures", json_string_array(c.gate_failures))
      .raw_field("not_judged", json_string_array(c.ungated));
  return std::move(w).finish();
}

}  // namespace mpo::report
