// What the engine counts, in vLLM V1's terms: counters, gauges' sources, and histograms that hold
// exactly the per-request values the engine produced (bucket bounds as vLLM 0.29.0 publishes).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/histogram.hpp"

namespace mpo::sim {

using mpo::Histogram;

enum class FinishReason { kStop, kLength, kAbort, kError, kRepetition };
constexpr std::array<FinishReason, 5> kAllFinishReasons = {
    FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort, FinishReason::kError, FinishReason::kRepetition};
std::string_view to_string(FinishReason r);

struct EngineStats {
  explicit EngineStats(int max_model_len = 2048);
  std::uint64_t prefix_cache_queries = 0;  // tokens queried
  std::uint64_t prefix_cache_hits = 0;     // tokens found cached
  std::uint64_t preemptions = 0;
  std::uint64_t prompt_tokens = 0;           // prompt tokens of requests that started prefill
  std::uint64_t prompt_tokens_computed = 0;  // ... of which computed (source="local_compute")
  std::uint64_t prompt_tokens_cached = 0;    // ... of which from the prefix cache
  std::uint64_t generation_tokens = 0;
  std::array<std::uint64_t, kAllFinishReasons.size()> finished{};  // by FinishReason
  std::uint64_t steps = 0;
  // Speculative decoding (EngineConfig::num_speculative_tokens > 0): verification rounds, tokens
  // drafted, tokens accepted, and accepted ones by draft position. Every output token after a
  // request's first is either a round's own token or an accepted draft: drafts + accepted = those.
  std::uint64_t spec_drafts = 0;
  std::uint64_t spec_draft_tokens = 0;
  std::uint64_t spec_accepted_tokens = 0;
  std::vector<std::uint64_t> spec_accepted_per_pos;

  Histogram request_prompt_tokens;
  Histogram request_generation_tokens;
  Histogram iteration_tokens;
  Histogram request_max_num_generation_tokens;
  Histogram request_params_n;
  Histogram request_params_max_tokens;
  Histogram time_to_first_token;
  Histogram inter_token_latency;
  Histogram request_time_per_output_token;
  Histogram e2e_request_latency;
  Histogram request_queue_time;
  Histogram request_inference_time;
  Histogram request_prefill_time;
  Histogram request_decode_time;
  Histogram request_prefill_kv_computed_tokens;
};

}  // namespace mpo::sim
