// Simulator parameters: the engine (vLLM V1 scheduler knobs and the step-time model), the output
// behaviour, and the scenarios. All settable from a JSON profile file (docs/SIMULATOR.md) and,
// for the common ones, from flags.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::sim {

struct EngineConfig {
  int max_num_seqs = 128;             // concurrent running sequences (vLLM --max-num-seqs)
  int max_num_batched_tokens = 2048;  // token budget of one step (chunked prefill)
  int num_gpu_blocks = 4096;          // KV cache blocks
  int block_size = 16;                // tokens per KV block
  int max_model_len = 8192;           // prompt + output limit
  bool enable_prefix_caching = true;
  // t_step = a + b * prefill_tokens_in_step + c * decode_seqs_in_step (seconds)
  double step_base_s = 0.018;                 // a: fixed cost of a forward pass
  double step_per_prefill_token_s = 0.00025;  // b: 4,000 prefill tok/s
  double step_per_decode_seq_s = 0.0001;      // c: per sequence decoded in the step
  // Speculative decoding (vLLM --speculative-config num_speculative_tokens): 0 is off. Each
  // verification round drafts this many tokens; draft position k is accepted with probability
  // spec_acceptance once every position before it was (the rest of the round is rejected). Only the
  // counters follow it: a round's tokens still leave one per step.
  int num_speculative_tokens = 0;
  double spec_acceptance = 0.7;
};

struct OutputConfig {
  int natural_min_tokens = 16;   // without ignore_eos, the "EOS" comes after a seeded length
  int natural_max_tokens = 256;  // drawn uniformly from [min, max]
  bool reasoning = false;        // reasoning profile: delta.reasoning_content before content
  double reasoning_share = 0.4;  // share of output tokens spent reasoning
  int tokens_per_chunk = 1;      // >1 imitates servers that coalesce tokens into one SSE event
};

struct SaturationConfig {
  int max_num_seqs = 32;           // capacity cut
  double reserved_kv_share = 0.8;  // share of KV blocks taken away (another tenant)
  int background_requests = 56;    // background population kept in flight
  int background_prompt_tokens = 512;
  int background_output_tokens = 128;
};

struct RampConfig {
  double duration_s = 60;        // background population grows linearly over this time
  int background_requests = 96;  // ... up to this many
  int background_prompt_tokens = 512;
  int background_output_tokens = 128;
};

struct FaultsConfig {
  double error_share = 0.10;     // answered HTTP 500 at once
  double truncate_share = 0.10;  // stream cut mid-way: connection closed, no [DONE]
  double stall_share = 0.10;     // held in the waiting queue (reason "deferred")
  double stall_s = 1.5;
};

struct Profile {
  std::string model = "sim-model";
  EngineConfig engine;
  OutputConfig output;
  SaturationConfig saturation;
  RampConfig ramp;
  FaultsConfig faults;
};

// Parses a JSON profile; keys absent keep their defaults; unknown keys and out-of-range values
// are errors that name the key. Shape: {"model":..,"engine":{..},"output":{..},"scenarios":
// {"saturation":{..},"ramp":{..},"faults":{..}}}, key names as the struct members above.
Result<Profile> parse_profile(std::string_view json_text);

// Checks cross-field constraints (e.g. the budget can hold one block); error names the field.
Status validate(const Profile& p);

}  // namespace mpo::sim
