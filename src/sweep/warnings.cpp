// The implementation of sweep/warnings.hpp.
#include "sweep/warnings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "core/go_json.hpp"
#include "sweep/evaluate.hpp"

namespace mpo::sweep {
namespace {

// Speculative decoding makes TPOT and ITL depend on how many drafted tokens the engine accepts:
// when acceptance moves across points by this much, their TPOT differences are not load alone.
constexpr double kAcceptanceSpread = 0.10;

std::optional<std::string> acceptance_warning(const SweepReceipt& r, const std::string& track) {
  std::optional<std::pair<double, double>> range;  // lowest, highest
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.track != track) continue;
      const auto rate = tp.evidence.server_number("spec_acceptance_rate");
      if (!rate) continue;
      range =
          range ? std::pair{std::min(range->first, *rate), std::max(range->second, *rate)} : std::pair{*rate, *rate};
    }
  }
  if (!range || range->second - range->first < kAcceptanceSpread) return std::nullopt;
  return fmt::format(
      "track {}: speculative decoding accepted {:.1f}% to {:.1f}% of drafted tokens across points: TPOT and ITL "
      "differences between points mix load with acceptance (evidence.server.spec_acceptance_rate)",
      track, 100 * range->first, 100 * range->second);
}

// Answers that stopped at the length limit short of the max_tokens asked for: the engine's context
// cut them, so a point's throughput and TPOT are over shorter answers than the workload asked.
std::optional<std::string> cut_short_warning(const SweepReceipt& r, const std::string& track) {
  std::int64_t cut = 0, measured = 0, asked = 0;
  std::string points;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const auto& t = tp.evidence.tokens;
      if (tp.track != track || !t || !t->cut_short || *t->cut_short == 0) continue;
      cut += *t->cut_short;
      measured += t->requests;
      asked = std::max(asked, t->max_tokens_asked.value_or(0));
      points += fmt::format("{}{}", points.empty() ? "" : ", ", go_float_text(p.coordinate));
    }
  }
  if (cut == 0) return std::nullopt;
  return fmt::format(
      "track {}: {} of {} answers at {} {} stopped at the length limit short of the max_tokens asked for (up to {}): "
      "the engine's context cut them, and throughput and TPOT there are over shorter answers than the workload "
      "asked (evidence.tokens.cut_short)",
      track, cut, measured, point_key(r.mode), points, asked);
}

}  // namespace

std::vector<std::string> receipt_warnings(const SweepReceipt& r) {
  std::vector<std::string> out;
  std::set<std::string> estimated;  // tracks already warned of
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      const std::string_view basis = tp.stats.token_count_basis;
      if (!basis.empty() && basis != "usage.completion_tokens" && estimated.insert(tp.track).second) {
        out.push_back(
            fmt::format("track {}: token counts are estimated ({}), not reported by the server; throughput is not "
                        "comparable with exact runs",
                        tp.track, basis));
      }
    }
  }
  for (const auto& t : r.tracks) {
    if (auto w = cut_short_warning(r, t.track)) out.push_back(std::move(*w));
  }
  for (const auto& t : r.tracks) {
    if (auto w = acceptance_warning(r, t.track)) out.push_back(std::move(*w));
  }
  return out;
}

}  // namespace mpo::sweep
