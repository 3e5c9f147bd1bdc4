// The implementation of core/stats.hpp. Exact order statistics.
#include "core/stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

namespace mpo {
namespace {

// DuckDB's interpolation between the order statistics around position h, term for term, so
// results agree to the last bit.
double interpolate(double at_lo, double at_hi, double h) {
  const double d = h - std::floor(h);
  return at_lo * (1.0 - d) + at_hi * d;
}

// A key whose unsigned order is the doubles' order (finite values; -0 before +0).
std::uint64_t order_key(double v) {
  const auto bits = std::bit_cast<std::uint64_t>(v);
  return bits >> 63 ? ~bits : bits | (std::uint64_t{1} << 63);
}

// The values at `ranks` (ascending, each < v.size(), at most 8) of `v` as if sorted, into `out`:
// a histogram of the keys' top 16 bits says which bucket holds each rank, a second pass gathers
// those buckets' values, and nth_element finds each rank among its bucket's few. Two linear passes
// instead of nth_element over half the values per quantile. False when a bucket holds more than a
// quarter of the values (a narrow or constant distribution): then selecting in place is as cheap.
bool select_ranks(std::span<const double> v, std::span<const std::size_t> ranks, std::span<double> out) {
  constexpr int kBits = 16;
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  // Scratch kept per thread: fresh pages cost more than clearing these (320 KiB) again.
  thread_local std::vector<std::uint32_t> count(kBuckets);
  thread_local std::vector<std::uint8_t> slot_of(kBuckets);  // slot + 1; 0: not needed
  std::fill(count.begin(), count.end(), 0);
  std::fill(slot_of.begin(), slot_of.end(), 0);
  for (double x : v) ++count[order_key(x) >> (64 - kBits)];
  std::array<std::uint32_t, 8> bucket{};
  std::array<std::size_t, 8> within{};
  std::size_t below = 0, r = 0;
  for (std::size_t b = 0; b < kBuckets && r < ranks.size(); ++b) {
    for (; r < ranks.size() && ranks[r] < below + count[b]; ++r) {
      bucket[r] = static_cast<std::uint32_t>(b);
      within[r] = ranks[r] - below;
    }
    below += count[b];
  }
  // The distinct buckets needed, each with a slot for its values.
  std::array<std::vector<double>, 8> members;
  std::uint8_t slots = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (count[bucket[i]] > v.size() / 4) return false;
    if (slot_of[bucket[i]] == 0) {
      slot_of[bucket[i]] = ++slots;
      members[slots - 1].reserve(count[bucket[i]]);
    }
  }
  for (double x : v) {
    if (const std::uint8_t s = slot_of[order_key(x) >> (64 - kBits)]) members[s - 1].push_back(x);
  }
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    auto& m = members[slot_of[bucket[i]] - 1];
    const auto at = m.begin() + static_cast<std::ptrdiff_t>(within[i]);
    std::nth_element(m.begin(), at, m.end());
    out[i] = *at;
  }
  return true;
}

}  // namespace

Result<double> quantile_cont_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return make_error(errc::kStatsEmpty, "quantile of an empty set");
  if (!(q >= 0.0 && q <= 1.0)) {
    return make_error(errc::kStatsQ, fmt::format("quantile {} is outside [0, 1]", q));
  }
  const double h = q * static_cast<double>(sorted.size() - 1);
  return interpolate(sorted[static_cast<std::size_t>(std::floor(h))], sorted[static_cast<std::size_t>(std::ceil(h))],
                     h);
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
  double* out[] = {&s.p50, &s.p90, &s.p95, &s.p99};
  constexpr double kQs[] = {0.50, 0.90, 0.95, 0.99};
  double h[std::size(kQs)];
  std::array<std::size_t, 2 * std::size(kQs)> positions{};
  for (std::size_t i = 0; i < std::size(kQs); ++i) {
    h[i] = kQs[i] * static_cast<double>(s.n - 1);
    positions[2 * i] = static_cast<std::size_t>(std::floor(h[i]));
    positions[2 * i + 1] = static_cast<std::size_t>(std::ceil(h[i]));
  }
  // Large sets: the order statistics by histogram (select_ranks). The positions are ascending;
  // equal neighbours are selected twice, which costs little.
  constexpr std::size_t kSelectFrom = 4096;
  std::array<double, positions.size()> at{};
  if (s.n >= kSelectFrom && select_ranks(values, positions, at)) {
    for (std::size_t i = 0; i < std::size(kQs); ++i) *out[i] = interpolate(at[2 * i], at[2 * i + 1], h[i]);
    return s;
  }
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
  for (std::size_t i = 0; i < std::size(kQs); ++i) {
    place(positions[2 * i]);
    place(positions[2 * i + 1]);
    // values[floor h] and values[ceil h] now hold those order statistics: what quantile_cont_sorted reads.
    *out[i] = *quantile_cont_sorted(values, kQs[i]);
  }
  return s;
}

double student_t_975(std::size_t df) {
  // The 0.975 quantiles (any statistics table; e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
  struct Row {
    std::size_t df;
    double t;
  };
  static constexpr Row kRows[] = {{1, 12.706}, {2, 4.303},  {3, 3.182},   {4, 2.776},   {5, 2.571},
                                  {6, 2.447},  {7, 2.365},  {8, 2.306},   {9, 2.262},   {10, 2.228},
                                  {12, 2.179}, {15, 2.131}, {20, 2.086},  {25, 2.060},  {30, 2.042},
                                  {40, 2.021}, {60, 2.000}, {120, 1.980}, {1000, 1.962}};
  if (df == 0) return std::numeric_limits<double>::infinity();
  double t = kRows[0].t;
  for (const auto& row : kRows) {
    if (df >= row.df) t = row.t;
  }
  return t;
}

}  // namespace mpo
