// One metric compared between two runs, A (before, the baseline) and B (after): both values, the
// change B - A, a percentile-bootstrap interval of the change and a verdict. Used by
// `report --baseline` (ledgers, per group) and `sweep compare` (receipts, per load point): one
// verdict rule, one multiple-comparison correction, one notion of "enough data". Pure.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::compare {

inline constexpr std::string_view kBetter = "better";
inline constexpr std::string_view kWorse = "worse";
inline constexpr std::string_view kNoChange = "no significant change";
inline constexpr std::string_view kNotEnoughData = "not enough data";

struct Change {
  std::string metric;  // ttft_p50_ms, throughput_tok_s, error_rate, ...
  std::size_t n_a = 0, n_b = 0;
  std::optional<double> a, b, delta, ci_lo, ci_hi;  // delta = b - a; an error rate as a fraction
  std::string verdict;                              // better | worse | no significant change | not enough data
  std::optional<double> bound;                      // a gate's limit in the metric's unit, when gated
  bool beyond_bound = false;                        // worse, and past the bound: the gate fails
};

// A quantile of n values is an estimate only with at least 5 values beyond it (and 10 values): a
// p99 of fewer than 500 is the sample's largest few, not an estimate.
bool enough_for_quantile(std::size_t n, double q);

// Bonferroni over a family of comparisons: each interval at 1 - family_alpha / tests, so a family
// of unchanged metrics is called changed in at most about family_alpha of runs.
struct Family {
  double family_alpha = 0.05;
  int tests = 1;
  double alpha() const { return family_alpha / tests; }
  double interval_level() const { return 1 - alpha(); }
};

// better, worse or no significant change, from an interval of the change: an interval wholly on one
// side of zero is a change; which side is better depends on the metric.
std::string verdict_of(double lo, double hi, bool higher_is_better);

// Sets the change's interval (the percentile interval of `deltas`, each a resample's B - A, sorted
// here) at the family's alpha, and its verdict.
void judge(Change& c, std::vector<double>& deltas, double alpha, bool higher_is_better);

}  // namespace mpo::compare
