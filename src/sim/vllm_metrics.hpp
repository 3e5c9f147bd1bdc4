// Renders the engine's state as vLLM V1's /metrics (Prometheus text format 0.0.4), with the metric
// names, types, HELP text, label names and histogram buckets of the real vLLM 0.29.0 capture.
#pragma once

#include <string>

#include "sim/engine.hpp"

namespace mpo::sim {

struct MetricsContext {
  std::string model_name;
  double now_s = 0;                 // engine time, to tell deferred from capacity waiting
  double process_start_time_s = 0;  // Unix seconds
  double created_time_s = 0;        // Unix seconds when the counters were created
};

std::string render_vllm_metrics(const Engine& engine, const MetricsContext& ctx);

}  // namespace mpo::sim
