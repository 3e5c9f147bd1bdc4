// Fuzz target: the report's flag parsers never crash on what a user types: --slo, --by and
// --max-regression; whatever --max-regression accepts names a known metric with a finite,
// non-negative limit.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "report/analysis.hpp"
#include "report/compare.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)mpo::report::parse_slos(text);
  (void)mpo::report::parse_group_by(text);
  if (auto bounds = mpo::report::parse_regression_bounds(text)) {
    for (const auto& b : *bounds) {
      if (b.metric.empty() || !std::isfinite(b.limit) || b.limit < 0) std::abort();
    }
  }
  return 0;
}
