#include "cli/commands.hpp"

#include <array>

namespace mpo::cli {

std::span<const Command> commands() {
  static const std::array<Command, 6> kCommands = {{
      {"bandwidth", "HBM bandwidth receipts from Nsight Compute CSVs; host-memory roofline; verify a receipt",
       setup_bandwidth},
      {"demo", "simulator + proxy + a short workload + report, in one command (files in ./modelperfobs-demo)",
       setup_demo},
      {"proxy", "observation proxy in front of an OpenAI-compatible backend: one ledger line per request",
       setup_proxy},
      {"report", "statistics and the likely bottleneck, with evidence, from one or more ledgers", setup_report},
      {"scrape", "snapshot an engine's /metrics and print the facts it states (queueing reason, KV pool, prefill rate)",
       setup_scrape},
      {"simulate", "vLLM-compatible engine simulator: OpenAI API, SSE streams, real vLLM /metrics",
       setup_simulate},
  }};
  return kCommands;
}

}  // namespace mpo::cli
