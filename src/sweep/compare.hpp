// `sweep compare A.json B.json`: two sweep receipts of the same workload, point by point (docs/SWEEP.md
// "Comparing two sweeps"). At each load point both measured, the change of throughput and of the
// TTFT p50/p99, ITL p99 and e2e p99 with a percentile-bootstrap interval from the receipts' own
// samples (requests resampled, so a request's inter-token gaps stay together), Bonferroni over the
// point's comparisons, and a verdict (better, worse, no significant change, not enough data);
// whether the saturation knee, the peak and the p99 SLA boundary moved. Receipts whose workloads
// differ are refused unless told otherwise: their points sent different requests. Pure;
// deterministic for a seed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compare/change.hpp"
#include "core/result.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {

struct SweepCompareOptions {
  int resamples = 2000;
  std::uint64_t seed = 1;
  double family_alpha = 0.05;  // per point, over its comparisons
  bool allow_different_workload = false;
};

struct PointComparison {
  double coordinate = 0;
  std::string status_a, status_b;        // each receipt's status of the point (valid, invalid, ...)
  std::vector<compare::Change> changes;  // throughput_tok_s, ttft_p50_ms, ttft_p99_ms, itl_p99_ms, e2e_p99_ms
};

// A finding that is a coordinate: the knee, the peak, the p99 boundary.
struct Moved {
  std::string what;
  std::optional<double> a, b;
  std::string verdict;  // unchanged | moved up | moved down | found only in A | found only in B | in neither
};

struct SweepComparison {
  std::string mode;  // concurrency | rate_rps
  std::string model_a, model_b, workload_a, workload_b, track_a, track_b;
  std::vector<PointComparison> points;
  std::vector<double> only_a, only_b;  // coordinates one receipt has and the other not
  std::vector<Moved> moved;
  std::vector<std::string> notes;
  int resamples = 0;
  double interval_level = 0;  // each interval's level after the correction
  std::size_t runs_a = 1, runs_b = 1;
};

Result<SweepComparison> compare_sweeps(const SweepReceipt& a, const SweepReceipt& b, const SweepCompareOptions& o);
// Reruns of the same settings pooled per side (issue 38): each interval resamples a side's runs,
// then the requests within each drawn run, so run-to-run variation is in it. The knee, peak and
// boundary findings are the first run's of each side.
Result<SweepComparison> compare_sweep_runs(const std::vector<const SweepReceipt*>& as,
                                           const std::vector<const SweepReceipt*>& bs, const SweepCompareOptions& o);

std::string sweep_comparison_md(const SweepComparison& c);
std::string sweep_comparison_json(const SweepComparison& c);
std::string sweep_comparison_html(const SweepComparison& c);

}  // namespace mpo::sweep
