#include "sim/engine_stats.hpp"

#include <algorithm>

namespace mpo::sim {
namespace {
// Bucket bounds of vLLM 0.29.0 (tests/fixtures/vllm/vllm-v1_0.29.0_*.prom).
constexpr double kTokenBuckets[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
constexpr double kIterationBuckets[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
constexpr double kNBuckets[] = {1, 2, 5, 10, 20};
constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                   1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
constexpr double kItlBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                  0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
constexpr double kLatencyBuckets[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,
                                      10.0, 15.0, 20.0, 30.0, 40.0,  50.0,  60.0,  120.0,
                                      240.0, 480.0, 960.0, 1920.0, 7680.0};
}  // namespace

void Histogram::observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);  // le: v <= bound
  ++counts_[static_cast<std::size_t>(it - bounds_.begin())];
  sum_ += v;
  ++count_;
}

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

EngineStats::EngineStats()
    : request_prompt_tokens(kTokenBuckets),
      request_generation_tokens(kTokenBuckets),
      iteration_tokens(kIterationBuckets),
      request_max_num_generation_tokens(kTokenBuckets),
      request_params_n(kNBuckets),
      request_params_max_tokens(kTokenBuckets),
      time_to_first_token(kTtftBuckets),
      inter_token_latency(kItlBuckets),
      request_time_per_output_token(kItlBuckets),
      e2e_request_latency(kLatencyBuckets),
      request_queue_time(kLatencyBuckets),
      request_inference_time(kLatencyBuckets),
      request_prefill_time(kLatencyBuckets),
      request_decode_time(kLatencyBuckets),
      request_prefill_kv_computed_tokens(kTokenBuckets) {}

}  // namespace mpo::sim
