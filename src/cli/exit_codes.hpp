// What every command's exit status means, one table for all (docs/EXIT_CODES.md): a CI script can
// tell "holds" from "violated" from "could not judge" from "failed to run" from "interrupted".
#pragma once

namespace mpo::cli::exit_code {

inline constexpr int kOk = 0;             // it ran, and what it judged holds
inline constexpr int kFailed = 1;         // it could not run or failed (unreachable, unreadable, every request failed)
inline constexpr int kUsage = 2;          // a usage error: flags, arguments
inline constexpr int kViolated = 3;       // a gate, an SLO or a regression bound was judged and does not hold
inline constexpr int kCannotJudge = 4;    // nothing to judge with: not enough data, no valid point
inline constexpr int kInterrupted = 130;  // SIGINT (128 + 2); SIGTERM gives 143 (128 + 15)

}  // namespace mpo::cli::exit_code
