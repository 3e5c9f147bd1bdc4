// Before and after: `report --input NEW --baseline OLD` (docs/REPORT.md "Before and after"). Per
// group, the change of each latency quantile (TTFT, TPOT, per-request ITL p95, e2e at p50, p90,
// p95, p99) and of the error rate, with a percentile-bootstrap interval and a verdict: better,
// worse, no significant change, or not enough data. The intervals are Bonferroni-corrected over
// the group's comparisons, so a group of identical runs is called changed in at most about 5% of
// runs (the family's rate, not each test's), and `--max-regression` gates only changes that are
// both significant and beyond their bound. Pure; deterministic for a seed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/change.hpp"
#include "core/result.hpp"
#include "report/rows.hpp"

namespace mpo::report {

// One --max-regression entry: `ttft_p95_ms=10%` (relative), `e2e_p99_ms=200` (absolute, the
// metric's unit), `error_rate=0.5pp` (percentage points).
struct RegressionBound {
  std::string metric;
  double limit = 0;
  enum class Kind { kRelative, kAbsolute, kPoints } kind = Kind::kAbsolute;
};
Result<std::vector<RegressionBound>> parse_regression_bounds(std::string_view text);

// A group's changes: A is the baseline, B the new run.
struct GroupChange {
  std::string key;
  std::vector<compare::Change> changes;
};

struct CompareOptions {
  int resamples = 2000;
  std::uint64_t seed = 1;
  double family_alpha = 0.05;  // per group, over its comparisons
};

struct Comparison {
  std::vector<GroupChange> groups;
  std::vector<std::string> only_in_baseline, only_in_new;
  int resamples = 0;
  double interval_level = 0;                    // each interval's level after the correction (e.g. 0.99706)
  std::vector<std::string> gate_failures;       // "qwen3 ttft_p95_ms: +23.1% (bound 10%)"
  std::vector<std::string> ungated;             // bounds that could not be judged (not enough data)
  std::size_t runs_baseline = 1, runs_new = 1;  // reruns given a side (report --reruns)
};

using GroupRows = std::map<std::string_view, RowList>;
// One run a side.
Comparison compare_runs(const GroupRows& baseline, const GroupRows& next, const CompareOptions& opts,
                        const std::vector<RegressionBound>& bounds);
// Reruns of the same workload a side (`report --reruns`), each run's rows by group: the quantiles
// and the error rate are the pooled runs', and each interval resamples the runs and then the
// requests within them, so it carries how much reruns differ (as `sweep compare` pools receipts).
Comparison compare_reruns(const std::vector<const GroupRows*>& baseline, const std::vector<const GroupRows*>& next,
                          const CompareOptions& opts, const std::vector<RegressionBound>& bounds);

std::string render_comparison_md(const Comparison& c);
std::string render_comparison_json(const Comparison& c);
// The body of the report page's comparison section (present's tables; worse rows in red, better in green).
std::string render_comparison_html(const Comparison& c);

}  // namespace mpo::report
