// Speculative decoding, request by request (docs/REPORT.md "Speculative decoding"). An engine that
// decodes speculatively has a draft propose a few tokens and the model verify them in one step:
// each step yields the tokens accepted and one of its own. Where the draft agrees, decode speeds
// up; where it does not, every step still runs the draft and verifies its tokens and yields one
// token, as plain decoding would, at a higher cost. Acceptance depends on the request (its sampling
// temperature, how like the draft's data its text is), so one run can hold both. llama.cpp
// b10309 says on each line how many tokens were drafted for the request and how many it accepted
// (timings.draft_n, draft_n_accepted): measured here with the model as its own draft, greedy
// requests accepted 44 of 44 and decoded at 5.6 ms a token, requests at temperature 0.8 accepted 1
// of 168 and decoded at 20.2 ms (3.3 ms without a draft). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "report/rows.hpp"

namespace mpo::report {

inline constexpr std::size_t kMinDraftingRequests = 3;
inline constexpr double kLowAcceptance = 0.2;        // a request accepting less of its drafts is "low"
inline constexpr double kGainedNothingSteps = 1.05;  // tokens a verification step, at most, for "no gain"
inline constexpr double kLowAcceptanceSlower = 1.5;  // low-acceptance decode this many times slower: said

struct Speculation {
  std::string source = "llama.cpp timings.draft_n, draft_n_accepted";
  std::size_t requests = 0;  // that drafted
  std::int64_t drafted = 0, accepted = 0;
  // Tokens a verification step over the drafting requests: their output tokens after the first over
  // the steps that made them (each step one token of the model's own and those it accepted).
  double tokens_per_step = 0;
  // By acceptance: the requests accepting under kLowAcceptance of their drafts and the others, each
  // with its decode pace (TPOT, or the engine's decode per token where not streamed), p50.
  std::size_t low = 0, high = 0;
  std::optional<double> low_pace_p50_ms, high_pace_p50_ms;
  double acceptance() const { return drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0; }
  bool gained_nothing() const { return tokens_per_step < kGainedNothingSteps; }
  // The low-acceptance requests decoded kLowAcceptanceSlower times slower than the others.
  bool low_is_slower() const {
    return low_pace_p50_ms && high_pace_p50_ms && *low_pace_p50_ms >= kLowAcceptanceSlower * *high_pace_p50_ms;
  }
  bool worth_saying() const { return gained_nothing() || low_is_slower(); }
};

// Nullopt unless kMinDraftingRequests ok rows have draft counts in `drafts` with a draft.
std::optional<Speculation> speculation_of(const RowList& rows, const DraftIndex& drafts);

// "speculative decoding (llama.cpp timings.draft_n, draft_n_accepted): 8 requests ...", and what
// follows the colon alone.
std::string speculation_sentence(const Speculation& s);
std::string speculation_findings(const Speculation& s);
std::string speculation_json(const std::optional<Speculation>& s);

// What the draft saves or costs against none is not in one run's lines: said after the findings.
inline constexpr const char* kSpeculationBaseline =
    "What the draft saves or costs against no draft takes a run of the same load without one: compare the two "
    "with `modelperfobs report LEDGER --baseline LEDGER_WITHOUT_DRAFT`.";

}  // namespace mpo::report
