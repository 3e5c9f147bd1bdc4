// Exact order statistics. quantile_cont matches DuckDB's quantile_cont and numpy's "linear"
// method: position h = q * (n - 1), d = h - floor h, result = x[floor h] * (1 - d) + x[ceil h] * d
// (DuckDB's exact arithmetic, so values agree bit for bit; tests check against DuckDB).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "core/result.hpp"

namespace mpo {

// `sorted` must be ascending and free of NaN. q in [0, 1]. Error on empty input or bad q.
Result<double> quantile_cont_sorted(std::span<const double> sorted, double q);

// Copies, drops NaN, sorts, then as above.
Result<double> quantile_cont(std::vector<double> values, double q);

struct Summary {
  std::size_t n = 0;
  double min = 0, mean = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, max = 0;
};

// nullopt when no finite value is present.
std::optional<Summary> summarize(std::vector<double> values);
// The same on the caller's memory, which it reorders (no copy: for a scratch buffer reused).
std::optional<Summary> summarize_in_place(std::span<double> values);

// The median of `values` (quantile_cont at 0.5); nullopt when there are none.
inline std::optional<double> median_of(std::vector<double> values) {
  if (values.empty()) return std::nullopt;
  const auto m = quantile_cont(std::move(values), 0.5);
  return m ? std::optional<double>(*m) : std::nullopt;
}

// Student's t distribution's 0.975 quantile over `df` degrees of freedom (df >= 1): a 95% two-sided
// interval's multiplier. Tabled; between rows the row of fewer degrees (the wider interval) is taken.
double student_t_975(std::size_t df);

// One quantile of a summary that may not exist (`&Summary::p50`, ...).
inline std::optional<double> quantile_of(const std::optional<Summary>& s, double Summary::*q) {
  return s ? std::optional<double>((*s).*q) : std::nullopt;
}

}  // namespace mpo
