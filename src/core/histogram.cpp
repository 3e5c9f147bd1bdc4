// The implementation of core/histogram.hpp. A Prometheus-style histogram (fixed upper bounds, non-
// cumulative counts, sum, count) and the bucket bounds vLLM 0.29.0 publishes, shared by the
// simulator and the proxy's own metrics.
#include "core/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace mpo {

BucketFinder::BucketFinder(std::span<const double> bounds) {
  for (int k = 1; k < kSlots; ++k) {
    first_[static_cast<std::size_t>(k)] = static_cast<std::uint16_t>(
        std::min<std::size_t>(lower_bound_index(bounds, std::ldexp(1.0, k - kBelow)), UINT16_MAX));
  }
}

std::size_t BucketFinder::lower_bound_index(std::span<const double> bounds, double v) {
  return static_cast<std::size_t>(std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
}

void Histogram::observe(double v) {
  ++counts_[finder_.index(bounds_, v)];  // le: v <= bound
  sum_ += v;
  ++count_;
}

void Histogram::merge(std::span<const std::uint64_t> counts, double sum, std::uint64_t count) {
  for (std::size_t i = 0; i < counts.size() && i < counts_.size(); ++i) counts_[i] += counts[i];
  sum_ += sum;
  count_ += count;
}

void AtomicHistogram::observe(double v) {
  auto& bucket = counts_[finder_.index(bounds_, v)];  // le: v <= bound
  bucket.store(bucket.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  sum_.store(sum_.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
}

void AtomicHistogram::add_to(Histogram& h) const {
  std::vector<std::uint64_t> counts(counts_.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) total += counts[i] = counts_[i].load(std::memory_order_relaxed);
  // The count is the buckets' total, so a histogram read mid-observation stays consistent.
  h.merge(counts, sum_.load(std::memory_order_relaxed), total);
}

}  // namespace mpo
