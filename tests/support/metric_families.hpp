// A test view of a Prometheus text exposition (parsed by src/promtext): the family of each sample
// (histogram _bucket/_sum/_count folded into their family), its TYPE, the label names seen, and
// sample values by series text (labels in the order written).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace mpo::test {

struct Family {
  std::string type;
  std::string help;
  std::set<std::string> label_names;  // union over samples; "le" for histogram buckets
  int samples = 0;
};

struct Exposition {
  std::map<std::string, Family> families;
  std::map<std::string, double> values;  // "name{labels}" exactly as written -> value
  // The value of the only sample of `name` whose series text contains every `needle`.
  std::optional<double> find(std::string_view name, std::initializer_list<std::string_view> needles = {}) const;
};

Exposition read_exposition(std::string_view text);

}  // namespace mpo::test
