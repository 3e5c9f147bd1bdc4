// The requests a sweep sends, from its flags (cli/sweep_args.hpp): synthetic prompts, a dataset,
// a replayed ledger, multi-turn conversations or a Mooncake-style trace (docs/SWEEP.md
// "Workloads").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/sweep_args.hpp"
#include "core/result.hpp"
#include "loadgen/workload.hpp"

namespace mpo::cli {

// "synthetic" (the default), "multi-turn" or "trace": --workload's first word.
std::string workload_kind(const SweepArgs& a);
// Requests replayed at their recorded times (--replay-speeds): a ledger's, or a trace's.
bool recorded_workload(const SweepArgs& a);
// What is wrong with --workload and the flags that go with it (a usage error's text), or nullopt.
std::optional<std::string> workload_flag_problem(const SweepArgs& a);
// The workload, and `source` set to what the receipt says of it ("multi-turn 16 sessions of ...").
Result<std::vector<loadgen::ServingRequest>> build_workload(const SweepArgs& a, std::string& source);

}  // namespace mpo::cli
