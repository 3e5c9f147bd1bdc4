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

// Min, max and mean in one pass; then each quantile's two neighbouring order statistics placed
// left to right: nth_element on the part right of the last placed position, or, for the position
// just after it, the minimum of that part swapped in. Each step works on what is left, so the
// whole costs a few linear passes, not a sort; the values at the placed positions are exactly a
// sorted array's, so the quantiles are too.
std::optional<Summary> summarize(std::vector<double> values) { return summarize_in_place(values); }

std::optional<Summary> summarize_in_place(std::span<double> all) {
  // The finite values, in their order, to the front (as erase_if would leave them).
  const auto finite_end = std::remove_if(all.begin(), all.end(), [](double v) { return !std::isfinite(v); });
  const std::span<double> values = all.first(static_cast<std::size_t>(finite_end - all.begin()));
  if (values.empty()) return std::nullopt;
  Summary s;
  s.n = values.size();
  double sum = 0, lo = values.front(), hi = values.front();
  for (double v : values) {  // in order: the same sum as std::accumulate
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  s.mean = sum / static_cast<double>(s.n);
  s.min = lo;
  s.max = hi;
  const auto begin = values.begin();
  std::size_t from = 0;  // positions below this are placed or lie left of a placed one
  auto place = [&](std::size_t k) {
    if (k < from) return;
    if (k == from) {
      std::iter_swap(begin + static_cast<std::ptrdiff_t>(k),
                     std::min_element(begin + static_cast<std::ptrdiff_t>(k), values.end()));
    } else {
      std::nth_element(begin + static_cast<std::ptrdiff_t>(from), begin + static_cast<std::ptrdiff_t>(k), values.end());
    }
    from = k + 1;
  };
  double* out[] = {&s.p50, &s.p90, &s.p95, &s.p99};
  constexpr double kQs[] = {0.50, 0.90, 0.95, 0.99};
  for (std::size_t i = 0; i < std::size(kQs); ++i) {
    const double h = kQs[i] * static_cast<double>(s.n - 1);
    place(static_cast<std::size_t>(std::floor(h)));
    place(static_cast<std::size_t>(std::ceil(h)));
    // values[floor h] and values[ceil h] now hold those order statistics: what quantile_cont_sorted reads.
    *out[i] = *quantile_cont_sorted(values, kQs[i]);
  }
  return s;
}

}  // namespace mpo
