// A bound on the label values a metric takes from requests (model names a client chooses): at
// most `max_values` distinct values, each at most `max_bytes` long; the rest are counted under one
// value (`_other`). Without it every new name is a new series kept for ever (issue 36: 500 distinct
// 10 KB names took /metrics to 13.5 MB). Pure.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

namespace mpo {

inline constexpr std::string_view kOtherLabel = "_other";

class LabelCap {
 public:
  LabelCap(std::size_t max_values, std::size_t max_bytes) : max_values_(max_values), max_bytes_(max_bytes) {}
  // The label for `value`: itself (a view that lives as long as this cap) or kOtherLabel;
  // `count_fold`: whether a fold counts in folded() (once per request: the caller that records it).
  std::string_view label(std::string_view value, bool count_fold = true) {
    if (auto it = values_.find(value); it != values_.end()) return *it;
    if (value.size() > max_bytes_ || values_.size() >= max_values_) {
      if (count_fold) ++folded_;
      return kOtherLabel;
    }
    return *values_.emplace(value).first;
  }
  // How many times a value was counted as _other.
  std::size_t folded() const { return folded_; }

 private:
  std::size_t max_values_;
  std::size_t max_bytes_;
  std::set<std::string, std::less<>> values_;
  std::size_t folded_ = 0;
};

}  // namespace mpo
