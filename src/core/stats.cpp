#include "core/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

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
  std::sort(values.begin(), values.end());
  return quantile_cont_sorted(values, q);
}

std::optional<Summary> summarize(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  Summary s;
  s.n = values.size();
  s.min = values.front();
  s.max = values.back();
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(s.n);
  s.p50 = *quantile_cont_sorted(values, 0.50);
  s.p90 = *quantile_cont_sorted(values, 0.90);
  s.p95 = *quantile_cont_sorted(values, 0.95);
  s.p99 = *quantile_cont_sorted(values, 0.99);
  return s;
}

}  // namespace mpo
