// Judging a sweep from its own contents (docs/FAK.md 6.7-6.8, and ours): each track point's
// validity (first failure wins), and per track the peak, the SLA knee, the p99 SLA boundary and
// the saturation finding. Run when a sweep ends and again by `sweep verify` and `sweep gate`, so
// the same receipt always gives the same verdict. Pure.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {

// Honesty strings, verbatim from fak.
inline constexpr const char* kComparablePointRule =
    "workload digest, model, engine, engine receipt, capacity, and capacity source must match the "
    "declared track contract";
inline constexpr const char* kCapacityRule =
    "a point above batch capacity, or with unknown capacity provenance, is invalid and cannot "
    "support peak or knee claims";
inline constexpr const char* kPeakRule =
    "peak is the maximum measured token throughput across at least two comparable valid points; "
    "ties choose lower concurrency";
// Generation 2 (fak's internal/webbench/serving_sweep.go with the throughput identity): these two
// name it.
inline constexpr const char* kComparablePointRuleGeneration2 =
    "workload digest, model, engine, engine receipt, capacity, and capacity source must match the "
    "declared track contract; throughput unit and non-mixed token count basis must match across points";
inline constexpr const char* kPeakRuleGeneration2 =
    "peak is the maximum measured throughput in one unit and token count basis across at least two "
    "comparable valid points; ties choose lower concurrency";
inline constexpr const char* kSlaKneeRule =
    "when p99 budgets are configured, the knee is the maximum-throughput valid point satisfying "
    "every configured budget; ties choose lower concurrency";
inline constexpr const char* kUnknownRule =
    "failed, sparse, invalid, or missing measurements remain not_measured/invalid and are never "
    "converted to zero";

// Ours: the p99 boundary's rule, and its wording before failed requests counted against every
// budget (forty-first session). A receipt written under the earlier wording re-derives under
// today's rule; where the two agree it verifies, with a note (sweep/verify.cpp).
inline constexpr const char* kP99BoundaryRule =
    "the largest coordinate meeting every configured p99 budget before the first one that does not; "
    "latency-comparable points only (valid, or invalid for capacity or failed requests alone), a failed request "
    "meeting no budget";
inline constexpr const char* kP99BoundaryRuleBeforeFailures =
    "the largest coordinate meeting every configured p99 budget before the first one that does not; "
    "latency-comparable points only (valid, or invalid for capacity alone)";

// Invalidity codes that make a whole track's claims invalid ("hard", as fak's).
bool is_hard_code(std::string_view code);

// Report-level errors (wrong schema, unknown or duplicate contract, bad or duplicate coordinate)
// are returned; otherwise every point's status and every track summary is (re)computed, and the
// validity block is filled.
Status evaluate_sweep(SweepReceipt& r);

// fak's sweep envelope digest for one track.
std::string envelope_digest(const SweepReceipt& r, const Contract& c);

// The saturation finding's gain threshold (a point whose throughput gain over the previous one is
// below this while its TTFT p99 rises is on the plateau).
inline constexpr double kPlateauGain = 0.10;
// Open loop: achieved over offered rate below this means the server no longer keeps up.
inline constexpr double kRateShortfall = 0.98;

}  // namespace mpo::sweep
