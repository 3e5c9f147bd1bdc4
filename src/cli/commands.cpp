// The implementation of cli/commands.hpp. The one table of subcommands: name, one-line summary,
// flag setup, handler.
#include "cli/commands.hpp"

#include <array>

namespace mpo::cli {

std::span<const Command> commands() {
  static const std::array<Command, 10> kCommands = {{
      {"attribute", "server counter deltas joined to a ledger's requests, graded by what the evidence proves",
       setup_attribute},
      {"bandwidth", "HBM bandwidth receipts from Nsight Compute CSVs; host-memory roofline; verify a receipt",
       setup_bandwidth},
      {"cache-state-bench",
       "prove cache-state transitions (cold, warm, invalidate, evict, expiry) with receipts; verify them",
       setup_cache_state},
      {"demo", "simulator + proxy + a short workload + report, in one command (files in ./modelperfobs-demo)",
       setup_demo},
      {"proxy", "observation proxy in front of an OpenAI-compatible backend: one ledger line per request", setup_proxy},
      {"report", "statistics and the likely bottleneck, with evidence, from one or more ledgers", setup_report},
      {"scrape", "snapshot an engine's /metrics and print the facts it states (queueing reason, KV pool, prefill rate)",
       setup_scrape},
      {"simulate", "vLLM-compatible engine simulator: OpenAI API, SSE streams, real vLLM /metrics", setup_simulate},
      {"sweep", "load sweep: throughput, p99s, knee and SLA boundary per point; receipts you can verify and gate",
       setup_sweep},
      {"top", "live view of a running proxy: per model req/s, TTFT/TPOT, errors, the engine's queue, the bottleneck",
       setup_top},
  }};
  return kCommands;
}

}  // namespace mpo::cli
