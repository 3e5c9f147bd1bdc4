#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace mpo {

Result<double> quantile_cont_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return make_error("stats.empty", "quantile of an empty set");
  if (!(q >= 0.0 && q <= 1.0)) {
    return make_error("stats.q", fmt::format("quantile {} is outside [0, 1]", q));
  }
  const double h = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const auto hi = static_cast<std::size_t>(std::ceil(h));
  const double d = h - static_cast<double>(lo);
  // DuckDB's interpolation, term for term, so results agree to the last bit.
  return sorted[lo] * (1.0 - d) + sorted[hi] * d;
}

Result<double> quantile_cont(std::vector<double> values, double q) {
  std::erase_if(values, [](double v) { return std::isnan(v); });
  if (values.empty() || !(q >= 0.0 && q <= 1.0)) return quantile_cont_sorted(values, q);  // its errors
  // Only the two order statistics around the position matter: place them, do not sort.
  const double h = q * static_cast<double>(values.size() - 1);
  const auto lo = values.begin() + static_cast<std::ptrdiff_t>(std::floor(h));
  std::nth_element(values.begin(), lo, values.end());
  if (lo + 1 != values.end()) std::iter_swap(lo + 1, std::min_element(lo + 1, values.end()));
  return quantile_cont_sorted(values, q);
}

// The order statistics a summary needs (min, max, and the two neighbours of each quantile's
// position), placed with successive nth_element calls instead of a full sort: each call works on
// the part right of the previous one, so the whole costs a few linear passes. The values at those
// positions are exactly a sorted array's, so the quantiles are too.
std::optional<Summary> summarize(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return std::nullopt;
  Summary s;
  s.n = values.size();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  constexpr double kQs[] = {0.50, 0.90, 0.95, 0.99};
  std::vector<std::size_t> positions{0, s.n - 1};
  for (double q : kQs) {
    const double h = q * static_cast<double>(s.n - 1);
    positions.push_back(static_cast<std::size_t>(std::floor(h)));
    positions.push_back(static_cast<std::size_t>(std::ceil(h)));
  }
  std::sort(positions.begin(), positions.end());
  positions.erase(std::unique(positions.begin(), positions.end()), positions.end());
  auto from = values.begin();
  for (std::size_t k : positions) {
    const auto at = values.begin() + static_cast<std::ptrdiff_t>(k);
    std::nth_element(from, at, values.end());
    from = at + 1;
  }
  // values[k] now holds the k-th smallest at every k in `positions`: what quantile_cont_sorted reads.
  s.min = values.front();
  s.max = values.back();
  s.p50 = *quantile_cont_sorted(values, 0.50);
  s.p90 = *quantile_cont_sorted(values, 0.90);
  s.p95 = *quantile_cont_sorted(values, 0.95);
  s.p99 = *quantile_cont_sorted(values, 0.99);
  return s;
}

}  // namespace mpo
