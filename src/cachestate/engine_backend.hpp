// The engine adapter of `cache-state-bench` (edge): a vLLM-compatible server's process-local KV
// prefix cache, observed through its /metrics and the usage of pinned-prefix probe requests.
// Mechanisms: cold start and invalidation through the engine's prefix-cache reset (vLLM's, SGLang's
// or llama.cpp's slot erase: loadgen/cache_reset.hpp); eviction by admitting
// competing prefixes worth one and a half KV pools. Counters vLLM does not publish (hit counts,
// entries, invalidations, expirations, evictions) stay absent in the receipts: the probes carry
// those postconditions. Layers with no safe mechanism are unsupported.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cachestate/runner.hpp"
#include "loadgen/api.hpp"
#include "net/backend_url.hpp"

namespace mpo::cachestate {

struct EngineBackendOptions {
  net::BackendUrl api;      // OpenAI base URL, e.g. http://127.0.0.1:8000/v1
  net::BackendUrl metrics;  // its /metrics
  std::string model;
  double timeout_s = 60;
  loadgen::Api speak = loadgen::Api::kChat;  // the API the probe requests speak (--api)
};

class EngineBackend : public Backend {
 public:
  explicit EngineBackend(EngineBackendOptions o);
  ~EngineBackend() override;

  // The start-up check: the OpenAI base URL lists models (GET <base>/models) and the metrics URL
  // is a Prometheus page. The error is one line that says what was expected and what came back.
  Status check();

  Result<BackendIdentity> identity() override;
  std::optional<std::string> supports(std::string_view layer, std::string_view transition) override;
  Result<MetricSnapshot> snapshot(std::string_view layer) override;
  Result<MechanismReceipt> apply(std::string_view layer, std::string_view transition,
                                 const std::vector<std::int64_t>& pinned) override;
  Result<ProbeObservation> probe(std::string_view layer, const std::vector<std::int64_t>& prefix) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The prompt text a token prefix stands for: one word per token ("t101 t8426 ..."), so equal
// prefixes are equal prompts and a server's prefix cache sees them as such.
std::string prefix_prompt(const std::vector<std::int64_t>& tokens);
// A pinned prefix of n tokens for engines (whose caches hold whole blocks of 16 tokens): fak's six
// tokens, then a fixed sequence.
std::vector<std::int64_t> engine_prefix(std::size_t n);

}  // namespace mpo::cachestate
