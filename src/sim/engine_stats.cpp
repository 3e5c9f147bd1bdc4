// The implementation of sim/engine_stats.hpp. What the engine counts, in vLLM V1's terms: counters,
// gauges' sources, and histograms that hold exactly the per-request values the engine produced
// (bucket bounds as vLLM 0.29.0 publishes).
#include "sim/engine_stats.hpp"

#include <algorithm>

namespace mpo::sim {
namespace {
using namespace vllm_buckets;
}  // namespace

std::string_view to_string(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    case FinishReason::kRepetition: return "repetition";
  }
  return "error";
}

EngineStats::EngineStats(int max_model_len)
    : request_prompt_tokens(token_buckets(max_model_len)),
      request_generation_tokens(token_buckets(max_model_len)),
      iteration_tokens(kIterationBuckets),
      request_max_num_generation_tokens(token_buckets(max_model_len)),
      request_params_n(kNBuckets),
      request_params_max_tokens(token_buckets(max_model_len)),
      time_to_first_token(kTtftBuckets),
      inter_token_latency(kItlBuckets),
      request_time_per_output_token(kItlBuckets),
      e2e_request_latency(kLatencyBuckets),
      request_queue_time(kLatencyBuckets),
      request_inference_time(kLatencyBuckets),
      request_prefill_time(kLatencyBuckets),
      request_decode_time(kLatencyBuckets),
      request_prefill_kv_computed_tokens(token_buckets(max_model_len)) {}

}  // namespace mpo::sim
