// Percentile-bootstrap building blocks shared by `report --baseline` and `sweep compare`: the
// interval of resampled changes, quantiles of many resamples of one sorted sample at O(n) each, a
// resample that keeps reruns apart (runs drawn, then requests within each), and resampled shares.
// Every function draws from the caller's generator in a fixed order, so a seed fixes the result.
// Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace mpo::compare {

// The [alpha/2, 1 - alpha/2] percentile interval of `deltas` (sorted in place), quantile_cont's rule.
std::pair<double, double> percentile_interval(std::vector<double>& deltas, double alpha);

// `resamples` resamples of a sorted sample, each its quantiles at `qs` (quantile_cont's arithmetic):
// a resample is n indices drawn with replacement and counted, and each quantile read from the
// cumulative counts, so no resample is sorted.
std::vector<std::vector<double>> resampled_quantiles(const std::vector<double>& sorted, std::span<const double> qs,
                                                     int resamples, std::mt19937_64& rng);

// One resample's indices into requests pooled from several runs, run r holding
// [run_start[r], run_start[r + 1]): one run, its requests with replacement; several, the runs with
// replacement and then each drawn run's requests, so the interval carries how much reruns differ.
std::vector<std::size_t> draw_requests(const std::vector<std::size_t>& run_start, std::mt19937_64& rng);

// The same over several runs pooled: `sorted` every run's values ascending, `by_run[r]` the
// positions in `sorted` of run r's values. A resample draws the runs with replacement and then each
// drawn run's values with replacement (draw_requests' scheme), counted, so no resample is sorted.
std::vector<std::vector<double>> resampled_quantiles_of_runs(const std::vector<double>& sorted,
                                                             const std::vector<std::vector<std::size_t>>& by_run,
                                                             std::span<const double> qs, int resamples,
                                                             std::mt19937_64& rng);

// `resamples` draws of a share (errors among requests) over runs pooled: the runs drawn with
// replacement, each drawn run's count a binomial draw at its own share. `runs`: (requests, share).
std::vector<double> resampled_shares_of_runs(const std::vector<std::pair<std::size_t, double>>& runs, int resamples,
                                             std::mt19937_64& rng);

// `resamples` draws of the change of a share (errors among requests): B's share minus A's, each a
// binomial draw at the observed share.
std::vector<double> resampled_share_changes(std::size_t n_a, double share_a, std::size_t n_b, double share_b,
                                            int resamples, std::mt19937_64& rng);

// fak's nearest-rank quantile (the index ceil(q * n), at least the first) of an unsorted sample.
double nearest_rank(std::vector<double> v, double q);

}  // namespace mpo::compare
