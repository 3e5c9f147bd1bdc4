// The flags of `modelperfobs sweep` as CLI11 reads them (cli/sweep_command.cpp declares them),
// shared with the workload they describe (cli/sweep_workload.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mpo::cli {

struct SweepArgs {
  std::string url, model, api_key_env = "OPENAI_API_KEY", ca;
  std::string shard, start_at, point_period;
  std::vector<double> concurrencies, rates, replay_speeds;
  std::string arrival = "poisson";
  double burstiness = 1;
  std::size_t requests = 64;
  std::string duration;
  long warmup = -1;
  std::string dataset, dataset_format = "auto", replay;
  // --workload KIND [FILE]: synthetic (default), multi-turn, or trace FILE (Mooncake-style).
  std::vector<std::string> workload;
  bool requests_given = false;
  std::size_t sessions = 16;
  std::string turns = "4", user_tokens = "64", think_time_ms = "0", tool_result_tokens = "256";
  double tool_turns = 0;
  std::int64_t trace_block_tokens = 512;
  bool chain_responses = false;
  bool require_tool_calls = false;
  std::int64_t max_output_tokens = 64;
  std::string input_tokens = "128", output_tokens = "64";
  std::int64_t shared_prefix_tokens = 0;
  std::uint64_t seed = 1;
  bool ignore_eos = false;
  std::string prompt_salt;  // "" : drawn for this run; "none": no salt
  bool approximate_input_tokens = false;
  std::string api = "chat";
  std::string timeout = "60s";
  std::string slo = "2s";
  double ttft_budget = 0, itl_budget = 0, e2e_budget = 0;
  bool refine = false;
  double lateness_bound_ms = 1.0;
  std::string metrics_url, metrics_interval = "250ms", power;
  std::vector<std::string> tracks;
  std::int64_t concurrency = 16;
  std::string engine, engine_receipt, capacity_source, machine;
  std::int64_t batch_capacity = 0;
  std::string output = "sweep.json", ledger, markdown, html;
  std::int64_t repeat = 1;  // runs of the whole sweep, one after another (docs/SWEEP.md "Reruns")
  bool quiet = false;
  bool same_prompts = false, reset_cache = false;
};

}  // namespace mpo::cli
