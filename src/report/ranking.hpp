// The ranking of a group's likely bottlenecks (errors, queueing, prefill, decode, transport,
// workload, not enough evidence), each scored against its threshold (>= 1: the evidence crosses it)
// with the evidence behind the score, and the engine's own split of TTFT the scores prefer to the
// client-side estimate. Pure. docs/REPORT.md "Ranking" and "Evidence from the engine".
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "report/analysis.hpp"

namespace mpo::report {

// The client-side estimate of a first token's cost: one engine step plus a prefill at 1,000 prompt
// tokens/s, slower than any real accelerator. TTFT beyond it is the estimate's queueing.
inline constexpr double kStepAllowanceMs = 50;
inline constexpr double kSlowPrefillMsPerToken = 1.0;

double median(std::vector<double> v);

// The split over the requests that carry the engine's times, when they are at least half of the `of`
// ok requests with a TTFT; the head rule is decided from the same requests.
std::optional<EngineSplit> engine_split_of(std::span<const EngineTimes> times, std::size_t of, std::string source);
// The split from llama.cpp's timings.prompt_ms on the rows.
std::optional<EngineSplit> engine_split_of(const RowList& rs);

// excess and explained: per ok request with a TTFT, what TTFT exceeds the estimate and what of it the
// estimate's prefill would explain (reordered in place). `engine`: the engine's counters over the
// window, when the report read them.
std::vector<Candidate> rank(const GroupStats& g, std::span<double> excess, std::span<double> explained,
                            const EngineEvidence* engine);

// Calls that generate nothing (GET /v1/models, embeddings, ...) answer without a queue for a slot or
// a prefill: their head's time is the network and the server's HTTP layer. Where a group's transport
// is not measured by the engine's spans, the fastest such operation (at least
// kMinCallsForTransport calls) bounds it and scores it; the ranking is sorted again.
inline constexpr std::size_t kMinCallsForTransport = 3;
void bound_transport_by_calls_that_generate_nothing(GroupStats& g, const std::vector<OtherStats>& others);

}  // namespace mpo::report
