// The implementation of core/histogram.hpp. A Prometheus-style histogram (fixed upper bounds, non-
// cumulative counts, sum, count) and the bucket bounds vLLM 0.29.0 publishes, shared by the
// simulator and the proxy's own metrics.
#include "core/histogram.hpp"

#include <algorithm>

namespace mpo {

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);  // le: v <= bound
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += v;
  ++count_;
}

}  // namespace mpo
