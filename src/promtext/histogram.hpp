// Histograms assembled from their samples (_bucket / _sum / _count / _created) and validated, and
// PromQL's histogram_quantile over cumulative buckets.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "promtext/exposition.hpp"

namespace mpo::promtext {

struct Bucket {
  double upper = 0;       // the `le` bound; +Inf for the last
  double cumulative = 0;  // observations <= upper
  bool operator==(const Bucket&) const = default;
};

struct HistogramSeries {
  Labels labels;                // the series' labels without `le`, sorted by name
  std::vector<Bucket> buckets;  // sorted by upper bound
  std::optional<double> sum;
  std::optional<double> count;
  std::optional<double> created;
  std::uint32_t line = 0;         // first sample's line
  std::vector<Problem> problems;  // empty when the series is consistent
  bool valid() const { return problems.empty(); }
};

// One series per distinct label set (without `le`), in order of first appearance. Checks: every
// bucket has a numeric `le`, no `le` twice, counts are cumulative (non-decreasing), a +Inf bucket
// exists when buckets do, and it equals _count. Each violation names the line and column.
std::vector<HistogramSeries> assemble_histograms(const MetricFamily& family);

// PromQL's histogram_quantile (promql/quantile.go, bucketQuantile): linear interpolation inside the
// bucket where the rank falls, the lower bound of the first bucket taken as 0, the +Inf bucket
// answered with the highest finite bound, NaN without observations or without a +Inf bucket.
// An estimate from bucket edges, not an observed value.
double histogram_quantile(double q, std::span<const Bucket> buckets);

// The bounds (lower, upper] of the bucket where the q-quantile's rank falls, as histogram_quantile
// finds it (upper is +Inf when the rank is beyond the highest finite bound); nullopt when
// histogram_quantile would answer NaN.
std::optional<std::pair<double, double>> quantile_bucket(double q, std::span<const Bucket> buckets);

// Bucket-wise sum of series with identical bounds (for example one per engine), or nullopt when
// the bounds differ.
std::optional<HistogramSeries> merge_histograms(std::span<const HistogramSeries> series);

}  // namespace mpo::promtext
