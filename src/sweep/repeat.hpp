// Reruns of one sweep (`sweep --repeat N`, docs/SWEEP.md "Reruns"): how much each point's figures
// move from one run to the next, so that a difference between two engines can be read against it.
// Each run keeps its own receipt; `sweep compare` pools them (runs resampled, then requests). Pure.
#pragma once

#include <string>
#include <vector>

#include "sweep/receipt.hpp"

namespace mpo::sweep {

// The summary of `runs` (in the order they ran, `files` their receipts): per point and track, each
// run's throughput, its mean and spread ((highest - lowest) / mean), each run's TTFT and ITL p99,
// how many runs found the point valid; then each run's peak, the largest spread, and how to pool
// the runs in a comparison.
std::string repeat_markdown(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files);
// The same as a page: the table, each run's throughput by point on one chart, the findings.
std::string repeat_html(const std::vector<SweepReceipt>& runs, const std::vector<std::string>& files);

}  // namespace mpo::sweep
