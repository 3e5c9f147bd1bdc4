// The implementation of compare/bootstrap.hpp: resampling for the intervals of `report --baseline`
// and `sweep compare`.
#include "compare/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/stats.hpp"

namespace mpo::compare {
namespace {

// The quantiles at `qs` of a resample given as counts over `sorted` (n values in all), quantile_cont's
// arithmetic: the order statistic at 0-based rank r is the first index whose cumulative count
// exceeds r.
void quantiles_of_counts(const std::vector<double>& sorted, const std::vector<std::uint32_t>& counts, std::size_t n,
                         std::span<const double> qs, std::vector<double>& at_qs) {
  std::size_t idx = 0, cum = counts[0];
  auto at_rank = [&](std::size_t r) {
    while (cum <= r) cum += counts[++idx];
    return sorted[idx];
  };
  for (std::size_t k = 0; k < qs.size(); ++k) {
    const double h = static_cast<double>(n - 1) * qs[k];
    const auto lo = static_cast<std::size_t>(std::floor(h));
    const double d = h - static_cast<double>(lo);
    const double x_lo = at_rank(lo);
    const double x_hi = lo + 1 < n ? at_rank(lo + 1) : x_lo;
    at_qs[k] = x_lo * (1 - d) + x_hi * d;
  }
}

}  // namespace

std::pair<double, double> percentile_interval(std::vector<double>& deltas, double alpha) {
  std::sort(deltas.begin(), deltas.end());
  return {*quantile_cont_sorted(deltas, alpha / 2), *quantile_cont_sorted(deltas, 1 - alpha / 2)};
}

std::vector<std::vector<double>> resampled_quantiles(const std::vector<double>& sorted, std::span<const double> qs,
                                                     int resamples, std::mt19937_64& rng) {
  const std::size_t n = sorted.size();
  std::uniform_int_distribution<std::size_t> pick(0, n - 1);
  std::vector<std::uint32_t> counts(n);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(resamples), std::vector<double>(qs.size()));
  for (auto& at_qs : out) {
    std::fill(counts.begin(), counts.end(), 0);
    for (std::size_t i = 0; i < n; ++i) ++counts[pick(rng)];
    quantiles_of_counts(sorted, counts, n, qs, at_qs);
  }
  return out;
}

std::vector<std::vector<double>> resampled_quantiles_of_runs(const std::vector<double>& sorted,
                                                             const std::vector<std::vector<std::size_t>>& by_run,
                                                             std::span<const double> qs, int resamples,
                                                             std::mt19937_64& rng) {
  std::vector<std::uint32_t> counts(sorted.size());
  std::uniform_int_distribution<std::size_t> pick_run(0, by_run.size() - 1);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(resamples), std::vector<double>(qs.size()));
  for (auto& at_qs : out) {
    std::fill(counts.begin(), counts.end(), 0);
    std::size_t n = 0;
    for (std::size_t k = 0; k < by_run.size(); ++k) {
      const auto& positions = by_run[pick_run(rng)];
      if (positions.empty()) continue;
      std::uniform_int_distribution<std::size_t> pick(0, positions.size() - 1);
      for (std::size_t i = 0; i < positions.size(); ++i) ++counts[positions[pick(rng)]];
      n += positions.size();
    }
    if (n == 0) {  // every drawn run was empty: no value, no quantile
      std::fill(at_qs.begin(), at_qs.end(), std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    quantiles_of_counts(sorted, counts, n, qs, at_qs);
  }
  return out;
}

std::vector<double> resampled_shares_of_runs(const std::vector<std::pair<std::size_t, double>>& runs, int resamples,
                                             std::mt19937_64& rng) {
  std::uniform_int_distribution<std::size_t> pick_run(0, runs.size() - 1);
  std::vector<double> shares(static_cast<std::size_t>(resamples));
  for (auto& share : shares) {
    std::size_t n = 0, hits = 0;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const auto& [requests, p] = runs[pick_run(rng)];
      std::binomial_distribution<std::size_t> draw(requests, p);
      hits += draw(rng);
      n += requests;
    }
    share = n > 0 ? static_cast<double>(hits) / static_cast<double>(n) : 0;
  }
  return shares;
}

std::vector<std::size_t> draw_requests(const std::vector<std::size_t>& run_start, std::mt19937_64& rng) {
  const std::size_t runs = run_start.size() - 1;
  std::vector<std::size_t> idx;
  idx.reserve(run_start.back());
  std::uniform_int_distribution<std::size_t> pick_run(0, runs - 1);
  for (std::size_t k = 0; k < runs; ++k) {
    const std::size_t r = runs == 1 ? 0 : pick_run(rng);
    const std::size_t lo = run_start[r], hi = run_start[r + 1];
    if (hi == lo) continue;
    std::uniform_int_distribution<std::size_t> pick(lo, hi - 1);
    for (std::size_t i = lo; i < hi; ++i) idx.push_back(pick(rng));
  }
  return idx;
}

std::vector<double> resampled_share_changes(std::size_t n_a, double share_a, std::size_t n_b, double share_b,
                                            int resamples, std::mt19937_64& rng) {
  std::binomial_distribution<std::size_t> da(n_a, share_a), db(n_b, share_b);
  const auto na = static_cast<double>(n_a), nb = static_cast<double>(n_b);
  std::vector<double> deltas(static_cast<std::size_t>(resamples));
  for (auto& d : deltas) d = static_cast<double>(db(rng)) / nb - static_cast<double>(da(rng)) / na;
  return deltas;
}

double nearest_rank(std::vector<double> v, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  const auto at = v.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
  std::nth_element(v.begin(), at, v.end());
  return *at;
}

}  // namespace mpo::compare
