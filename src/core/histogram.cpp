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
