// The implementation of report/speculation.hpp.
#include "report/speculation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/json.hpp"
#include "core/stats.hpp"

namespace mpo::report {
namespace {

// A request's decode pace: its TPOT where streamed, else the engine's decode time per token after
// the first.
std::optional<double> pace_ms(const Row& r) {
  if (r.tpot_ms) return *r.tpot_ms;
  if (r.engine_predicted_ms && r.completion_tokens.value_or(0) >= 2) {
    return *r.engine_predicted_ms / static_cast<double>(*r.completion_tokens - 1);
  }
  return std::nullopt;
}

}  // namespace

std::optional<Speculation> speculation_of(const RowList& rows, const DraftIndex& drafts) {
  if (drafts.empty()) return std::nullopt;
  Speculation s;
  std::int64_t after_first = 0;
  std::vector<double> low, high;
  for (const Row* r : rows) {
    if (!r->ok()) continue;
    const auto it = drafts.find(r);
    if (it == drafts.end() || it->second.drafted <= 0) continue;
    const std::int64_t drafted = it->second.drafted;
    const std::int64_t accepted = std::clamp<std::int64_t>(it->second.accepted, 0, drafted);
    ++s.requests;
    s.drafted += drafted;
    s.accepted += accepted;
    after_first += std::max<std::int64_t>(0, r->completion_tokens.value_or(0) - 1);
    const bool is_low = static_cast<double>(accepted) < kLowAcceptance * static_cast<double>(drafted);
    ++(is_low ? s.low : s.high);
    if (const auto pace = pace_ms(*r)) (is_low ? low : high).push_back(*pace);
  }
  if (s.requests < kMinDraftingRequests) return std::nullopt;
  // Every token after the first came from a step; a step's accepted tokens came with it.
  const std::int64_t steps = after_first - s.accepted;
  s.tokens_per_step = steps > 0 ? static_cast<double>(after_first) / static_cast<double>(steps) : 1;
  s.low_pace_p50_ms = median_of(std::move(low));
  s.high_pace_p50_ms = median_of(std::move(high));
  return s;
}

std::string speculation_sentence(const Speculation& s) {
  return fmt::format("speculative decoding ({}): {}", s.source, speculation_findings(s));
}

std::string speculation_findings(const Speculation& s) {
  std::string out = fmt::format(
      "{} requests drafted {} tokens and the engine accepted {:.1f}% of them, {:.2f} tokens per "
      "verification step",
      s.requests, s.drafted, 100 * s.acceptance(), s.tokens_per_step);
  if (s.gained_nothing()) {
    out +=
        ": it gained next to no token, and every step also ran the draft and verified its tokens, a cost plain "
        "decoding does not pay (measure without the draft, or with one that agrees with the model more often)";
  }
  if (s.low_pace_p50_ms && s.high_pace_p50_ms) {
    out += fmt::format(
        "; the {} that accepted under {:.0f}% of their drafts decoded at {:.1f} ms a token (p50) against {:.1f} ms "
        "for the {} that accepted more{}",
        s.low, 100 * kLowAcceptance, *s.low_pace_p50_ms, *s.high_pace_p50_ms, s.high,
        s.low_is_slower() ? ": acceptance depends on the request (a sampling temperature above 0, text unlike the "
                            "draft's), and where the draft disagrees speculation costs more than it saves"
                          : "");
  }
  return out;
}

std::string speculation_json(const std::optional<Speculation>& s) {
  if (!s) return "null";
  JsonObjectWriter w;
  w.field("source", s->source)
      .field("requests", static_cast<std::uint64_t>(s->requests))
      .field("drafted", s->drafted)
      .field("accepted", s->accepted)
      .field("acceptance", s->acceptance())
      .field("tokens_per_step", s->tokens_per_step)
      .field("gained_nothing", s->gained_nothing())
      .field("low_acceptance_requests", static_cast<std::uint64_t>(s->low))
      .field("high_acceptance_requests", static_cast<std::uint64_t>(s->high))
      .optional_field("low_acceptance_pace_p50_ms", s->low_pace_p50_ms)
      .optional_field("high_acceptance_pace_p50_ms", s->high_pace_p50_ms)
      .field("low_acceptance_is_slower", s->low_is_slower());
  return std::move(w).finish();
}

}  // namespace mpo::report
