// The implementation of compare/change.hpp: the verdict rule and the interval of a change.
#include "compare/change.hpp"

#include "compare/bootstrap.hpp"

namespace mpo::compare {

bool enough_for_quantile(std::size_t n, double q) { return static_cast<double>(n) * (1 - q) >= 5 && n >= 10; }

std::string verdict_of(double lo, double hi, bool higher_is_better) {
  const bool up = lo > 0, down = hi < 0;
  if (!up && !down) return std::string(kNoChange);
  return std::string(up == higher_is_better ? kBetter : kWorse);
}

void judge(Change& c, std::vector<double>& deltas, double alpha, bool higher_is_better) {
  const auto [lo, hi] = percentile_interval(deltas, alpha);
  c.ci_lo = lo;
  c.ci_hi = hi;
  c.verdict = verdict_of(lo, hi, higher_is_better);
}

}  // namespace mpo::compare
