// The catalog table. Order matters within a signal: the first entry whose family is present wins.
// Sources: vLLM 0.29.0 (V1) and the V0 capture (tests/fixtures/vllm), vLLM's docs/design/metrics.md
// for renamed V1 counters (gpu_prefix_cache_* before 0.10), SGLang 0.5.10 and the older docs
// example, llama.cpp server (May 2026), TGI router. Each entry is checked against a capture where
// one exists (tests/promtext/facts_test.cpp), or else against a page written from the engine's
// documented names (tests/fixtures/*/DOCUMENTED_*). Newer names: vLLM's metrics reference and its
// KV-connector stats (kv_block_*, kv_offload_*, nixl_*, mm_cache_*, spec_decode_*_per_pos), SGLang's
// python/sglang/srt/metrics/collector.py (retraction, kv_*_tokens, spec_verify_calls), TGI's router
// (tgi_batch_*), as NVIDIA AIPerf's server-metrics reference lists them too.
#include "engines/catalog.hpp"

#include <array>

namespace mpo::engines {
namespace {

constexpr std::uint32_t kV0 = engine_bit(Engine::kVllmV0);
constexpr std::uint32_t kV1 = engine_bit(Engine::kVllmV1);
constexpr std::uint32_t kSg = engine_bit(Engine::kSglang);
constexpr std::uint32_t kLl = engine_bit(Engine::kLlamaCpp);
constexpr std::uint32_t kTg = engine_bit(Engine::kTgi);

using S = Signal;

// A table: one entry per line (or two), kept as written.
// clang-format off
constexpr CatalogEntry kCatalog[] = {
    // --- vLLM (V1 names first; V0 names where they differ) ---
    {kAnyVllm, S::kRunning, "vllm:num_requests_running"},
    {kAnyVllm, S::kWaiting, "vllm:num_requests_waiting"},
    {kV1, S::kWaitingCapacity, "vllm:num_requests_waiting_by_reason", "reason", "capacity",
     Read::kValue, "waiting for scheduling capacity: the KV pool or the batch is full"},
    {kV1, S::kWaitingDeferred, "vllm:num_requests_waiting_by_reason", "reason", "deferred",
     Read::kValue, "deferred by transient constraints (LoRA budget, KV transfer, blocked status)"},
    {kV0, S::kSwapped, "vllm:num_requests_swapped"},
    {kV0, S::kKvUsage, "vllm:gpu_cache_usage_perc", {}, {}, Read::kValue, "V0 name: fraction of GPU KV blocks in use, 0..1"},
    {kAnyVllm, S::kKvUsage, "vllm:kv_cache_usage_perc", {}, {}, Read::kValue, "fraction of the KV pool in use, 0..1"},
    {kAnyVllm, S::kPrefixCacheQueries, "vllm:prefix_cache_queries_total", {}, {}, Read::kValue, "queried prompt tokens"},
    {kAnyVllm, S::kPrefixCacheQueries, "vllm:gpu_prefix_cache_queries_total", {}, {}, Read::kValue,
     "early V1 name (before 0.10): queried prompt tokens"},
    {kAnyVllm, S::kPrefixCacheHits, "vllm:prefix_cache_hits_total", {}, {}, Read::kValue, "prompt tokens found in the cache"},
    {kAnyVllm, S::kPrefixCacheHits, "vllm:gpu_prefix_cache_hits_total", {}, {}, Read::kValue,
     "early V1 name (before 0.10): prompt tokens found in the cache"},
    {kV0, S::kPrefixCacheHitRate, "vllm:gpu_prefix_cache_hit_rate", {}, {}, Read::kValue,
     "V0 gauge: hit rate over the engine's own recent window, as V0 computes it"},
    {kAnyVllm, S::kPreemptions, "vllm:num_preemptions_total"},
    {kAnyVllm, S::kPromptTokens, "vllm:prompt_tokens_total", {}, {}, Read::kValue, "prompt tokens, cached ones included"},
    {kAnyVllm, S::kGenerationTokens, "vllm:generation_tokens_total"},
    {kAnyVllm, S::kCachedPromptTokens, "vllm:prompt_tokens_cached_total", {}, {}, Read::kValue, "local + external cache hits"},
    {kAnyVllm, S::kCachedPromptTokens, "vllm:prompt_tokens_by_source_total", "source", "local_cache_hit"},
    {kAnyVllm, S::kComputedPromptTokens, "vllm:prompt_tokens_by_source_total", "source", "local_compute"},
    {kAnyVllm, S::kRequestsFinished, "vllm:request_success_total", {}, {}, Read::kValue,
     "every finished request, whatever finished_reason (stop, length, abort, error, repetition)"},
    {kAnyVllm, S::kRequestsErrored, "vllm:request_success_total", "finished_reason", "error"},
    {kAnyVllm, S::kRequestsAborted, "vllm:request_success_total", "finished_reason", "abort"},
    {kAnyVllm, S::kEstimatedFlops, "vllm:estimated_flops_per_gpu_total"},
    {kAnyVllm, S::kEstimatedReadBytes, "vllm:estimated_read_bytes_per_gpu_total"},
    {kAnyVllm, S::kEstimatedWriteBytes, "vllm:estimated_write_bytes_per_gpu_total"},
    {kAnyVllm, S::kTtft, "vllm:time_to_first_token_seconds"},
    {kV0, S::kItl, "vllm:time_per_output_token_seconds", {}, {}, Read::kValue,
     "V0 name: the gap between consecutive tokens (what V1 calls inter-token latency)"},
    {kAnyVllm, S::kItl, "vllm:inter_token_latency_seconds"},
    {kAnyVllm, S::kTpot, "vllm:request_time_per_output_token_seconds", {}, {}, Read::kValue,
     "per request: decode time / (output tokens - 1)"},
    {kAnyVllm, S::kE2e, "vllm:e2e_request_latency_seconds"},
    {kAnyVllm, S::kQueueTime, "vllm:request_queue_time_seconds", {}, {}, Read::kValue, "time in WAITING"},
    {kAnyVllm, S::kPrefillTime, "vllm:request_prefill_time_seconds", {}, {}, Read::kValue,
     "scheduled to first token, per request (spans of concurrent requests overlap)"},
    {kAnyVllm, S::kDecodeTime, "vllm:request_decode_time_seconds"},
    {kAnyVllm, S::kInferenceTime, "vllm:request_inference_time_seconds", {}, {}, Read::kValue, "time in RUNNING"},
    {kAnyVllm, S::kPrefillKvComputedTokens, "vllm:request_prefill_kv_computed_tokens", {}, {}, Read::kValue,
     "prompt tokens actually computed in prefill (cache hits excluded)"},
    {kAnyVllm, S::kPromptTokensPerRequest, "vllm:request_prompt_tokens"},
    {kAnyVllm, S::kGenerationTokensPerRequest, "vllm:request_generation_tokens"},
    {kAnyVllm, S::kSpecDrafts, "vllm:spec_decode_num_drafts_total", {}, {}, Read::kValue,
     "speculative decoding: verification steps that carried a draft"},
    {kAnyVllm, S::kSpecDraftTokens, "vllm:spec_decode_num_draft_tokens_total"},
    {kAnyVllm, S::kSpecAcceptedTokens, "vllm:spec_decode_num_accepted_tokens_total"},
    {kAnyVllm, S::kSpecAcceptedByPosition, "vllm:spec_decode_num_accepted_tokens_per_pos_total", {}, {}, Read::kValue,
     "accepted draft tokens at each draft position (0 = the first drafted token)", "position"},
    {kAnyVllm, S::kExternalPrefixCacheQueries, "vllm:external_prefix_cache_queries_total", {}, {}, Read::kValue,
     "prompt tokens a KV connector was asked for (cross-instance cache sharing)"},
    {kAnyVllm, S::kExternalPrefixCacheHits, "vllm:external_prefix_cache_hits_total", {}, {}, Read::kValue,
     "prompt tokens a KV connector supplied"},
    {kAnyVllm, S::kMmCacheQueries, "vllm:mm_cache_queries_total", {}, {}, Read::kValue, "multi-modal items looked up"},
    {kAnyVllm, S::kMmCacheHits, "vllm:mm_cache_hits_total", {}, {}, Read::kValue, "multi-modal items found processed"},
    {kAnyVllm, S::kKvBlockLifetime, "vllm:kv_block_lifetime_seconds", {}, {}, Read::kValue,
     "sampled blocks, allocation to eviction (--kv-cache-metrics)"},
    {kAnyVllm, S::kKvBlockIdleBeforeEvict, "vllm:kv_block_idle_before_evict_seconds", {}, {}, Read::kValue,
     "sampled blocks, last use to eviction (--kv-cache-metrics)"},
    {kAnyVllm, S::kKvBlockReuseGap, "vllm:kv_block_reuse_gap_seconds", {}, {}, Read::kValue,
     "sampled blocks, the gap between consecutive uses (--kv-cache-metrics)"},
    {kAnyVllm, S::kKvOffloadBytes, "vllm:kv_offload_total_bytes_total", {}, {}, Read::kValue,
     "bytes the offloading connector moved, by direction (GPU_to_CPU, CPU_to_GPU)", "transfer_type"},
    {kAnyVllm, S::kKvOffloadSeconds, "vllm:kv_offload_total_time_total", {}, {}, Read::kValue,
     "seconds the offloading connector spent moving them, by direction", "transfer_type"},
    {kAnyVllm, S::kKvTransferTime, "vllm:nixl_xfer_time_seconds", {}, {}, Read::kValue,
     "one NIXL KV transfer (disaggregated prefill/decode): time a decode-side request waits inside its TTFT"},
    {kAnyVllm, S::kKvTransferFailures, "vllm:nixl_num_failed_transfers_total"},
    {kAnyVllm, S::kCacheConfigInfo, "vllm:cache_config_info", {}, {}, Read::kValue,
     "labels: block_size, num_gpu_blocks, enable_prefix_caching, kv_cache_size_tokens"},

    // --- SGLang ---
    {kSg, S::kRunning, "sglang:num_running_reqs"},
    {kSg, S::kWaiting, "sglang:num_queue_reqs"},
    {kSg, S::kKvUsage, "sglang:token_usage", {}, {}, Read::kValue, "fraction of the token pool in use, 0..1"},
    {kSg, S::kKvPoolTokens, "sglang:max_total_num_tokens", {}, {}, Read::kValue, "size of the KV token pool"},
    {kSg, S::kPrefixCacheHitRate, "sglang:cache_hit_rate", {}, {}, Read::kValue,
     "gauge: the radix cache hit rate as SGLang computes it"},
    {kSg, S::kKvUsedTokens, "sglang:kv_used_tokens", {}, {}, Read::kValue, "token slots held by running requests"},
    {kSg, S::kKvEvictableTokens, "sglang:kv_evictable_tokens", {}, {}, Read::kValue,
     "token slots holding radix-cached prefixes no running request holds: reclaimable on demand"},
    {kSg, S::kKvFreeTokens, "sglang:kv_available_tokens", {}, {}, Read::kValue, "free token slots"},
    {kSg, S::kPreemptions, "sglang:num_retracted_requests_total", {}, {}, Read::kValue,
     "retractions: SGLang's preemption (a running request sent back to the queue for lack of KV space)"},
    {kSg, S::kRetractedNow, "sglang:num_retracted_reqs", {}, {}, Read::kValue,
     "gauge: requests retracted in the scheduler's last step"},
    {kSg, S::kPreemptedPromptTokens, "sglang:num_retracted_input_tokens_total", {}, {}, Read::kValue,
     "input tokens of retracted requests: prefill done again"},
    {kSg, S::kPreemptedOutputTokens, "sglang:num_retracted_output_tokens_total", {}, {}, Read::kValue,
     "output tokens of retracted requests: recomputed on resumption"},
    {kSg, S::kPromptTokens, "sglang:prompt_tokens_total"},
    {kSg, S::kGenerationTokens, "sglang:generation_tokens_total"},
    {kSg, S::kCachedPromptTokens, "sglang:cached_tokens_total", "cache_source", "total", Read::kValue,
     "newer builds split cached tokens by cache_source (device, host, storage_*) and add a total"},
    {kSg, S::kCachedPromptTokens, "sglang:cached_tokens_total", {}, {}, Read::kValue,
     "without a cache_source total: every series summed"},
    {kSg, S::kRequestsTotal, "sglang:num_requests_total"},
    {kSg, S::kTtft, "sglang:time_to_first_token_seconds"},
    {kSg, S::kItl, "sglang:inter_token_latency_seconds"},
    {kSg, S::kItl, "sglang:time_per_output_token_seconds", {}, {}, Read::kValue, "older name for the per-token gap"},
    {kSg, S::kE2e, "sglang:e2e_request_latency_seconds"},
    {kSg, S::kQueueTime, "sglang:queue_time_seconds"},
    {kSg, S::kPromptTokensPerRequest, "sglang:prompt_tokens_histogram"},
    {kSg, S::kGenerationTokensPerRequest, "sglang:generation_tokens_histogram"},
    {kSg, S::kSpecAcceptLength, "sglang:spec_accept_length", {}, {}, Read::kValue,
     "gauge: mean accepted length of speculative decoding, over SGLang's own recent window"},
    {kSg, S::kSpecAcceptRate, "sglang:spec_accept_rate", {}, {}, Read::kValue,
     "gauge: acceptance rate of speculative decoding, over SGLang's own recent window"},
    {kSg, S::kSpecVerifyCalls, "sglang:spec_verify_calls_total", {}, {}, Read::kValue,
     "verification steps of speculative decoding"},

    // --- llama.cpp server (--metrics) ---
    {kLl, S::kRunning, "llamacpp:requests_processing"},
    {kLl, S::kWaiting, "llamacpp:requests_deferred", {}, {}, Read::kValue,
     "requests deferred because no slot was free (the split by reason is not published)"},
    {kLl, S::kKvUsage, "llamacpp:kv_cache_usage_ratio", {}, {}, Read::kValue, "removed upstream in 2025 (PR #13660)"},
    {kLl, S::kComputedPromptTokens, "llamacpp:prompt_tokens_total", {}, {}, Read::kValue,
     "prompt tokens the server computed: cache hits are not counted (a real b10309 page: 14 after five 10-token prompts)"},
    {kLl, S::kCachedPromptTokens, "llamacpp:prompt_tokens_cached_total", {}, {}, Read::kValue,
     "prompt tokens reused from the cache (newer builds, llama.cpp #26920); with it the prompt total is the sum"},
    {kLl, S::kGenerationTokens, "llamacpp:tokens_predicted_total"},
    {kLl, S::kSpecDrafts, "llamacpp:spec_decode_num_drafts_total"},
    {kLl, S::kSpecDraftTokens, "llamacpp:spec_decode_num_draft_tokens_total"},
    {kLl, S::kSpecAcceptedTokens, "llamacpp:spec_decode_num_accepted_tokens_total"},
    {kLl, S::kSpecAcceptedByPosition, "llamacpp:spec_decode_num_accepted_tokens_per_pos_total", {}, {}, Read::kValue,
     "accepted draft tokens at each draft position (b10309, as vLLM's)", "position"},
    {kLl, S::kPromptSecondsWall, "llamacpp:prompt_seconds_total", {}, {}, Read::kValue,
     "wall time the server spent in prompt processing; not a per-stream prefill time"},
    {kLl, S::kGenerationSecondsWall, "llamacpp:tokens_predicted_seconds_total", {}, {}, Read::kValue,
     "wall time the server spent generating"},

    // --- Hugging Face TGI (router) ---
    {kTg, S::kRunning, "tgi_batch_current_size"},
    {kTg, S::kWaiting, "tgi_queue_size"},
    {kTg, S::kKvPoolTokens, "tgi_batch_max_total_tokens", {}, {}, Read::kValue,
     "the token budget of all batches together (max_batch_total_tokens, set at warm-up; TGI v3)"},
    {kTg, S::kBatchTokens, "tgi_batch_current_max_tokens", {}, {}, Read::kValue,
     "tokens the running batch may hold (its prompts plus their max_new_tokens)"},
    {kTg, S::kBatchForwardPrefill, "tgi_batch_forward_duration", "method", "prefill", Read::kValue,
     "one prefill forward pass of a batch"},
    {kTg, S::kBatchForwardDecode, "tgi_batch_forward_duration", "method", "decode", Read::kValue,
     "one decode forward pass of a batch"},
    {kTg, S::kBatchConcat, "tgi_batch_concat", {}, {}, Read::kValue,
     "batches added to the running one, by reason (backpressure, wait_exceeded, chunking)", "reason"},
    {kTg, S::kRequestsTotal, "tgi_request_count"},
    {kTg, S::kRequestsFinished, "tgi_request_success"},
    {kTg, S::kRequestsFailed, "tgi_request_failure", {}, {}, Read::kValue, "summed over the err label"},
    {kTg, S::kPromptTokens, "tgi_request_input_length", {}, {}, Read::kHistogramSum, "the _sum of the input-length histogram"},
    {kTg, S::kGenerationTokens, "tgi_request_generated_tokens", {}, {}, Read::kHistogramSum,
     "the _sum of the generated-tokens histogram"},
    {kTg, S::kE2e, "tgi_request_duration"},
    {kTg, S::kQueueTime, "tgi_request_queue_duration"},
    {kTg, S::kInferenceTime, "tgi_request_inference_duration"},
    {kTg, S::kTpot, "tgi_request_mean_time_per_token_duration"},
    {kTg, S::kPromptTokensPerRequest, "tgi_request_input_length"},
    {kTg, S::kGenerationTokensPerRequest, "tgi_request_generated_tokens"},

    // --- any engine that runs a prometheus_client (Python) exporter ---
    {kAnyEngine, S::kProcessStartTime, "process_start_time_seconds"},
};
// clang-format on

constexpr std::array<std::string_view, static_cast<std::size_t>(Signal::kCount)> kSignalNames = {
    "running",
    "waiting",
    "waiting_capacity",
    "waiting_deferred",
    "swapped",
    "kv_usage",
    "kv_pool_tokens",
    "prefix_cache_queries",
    "prefix_cache_hits",
    "prefix_cache_hit_rate",
    "preemptions",
    "prompt_tokens",
    "generation_tokens",
    "cached_prompt_tokens",
    "computed_prompt_tokens",
    "requests_finished",
    "requests_errored",
    "requests_aborted",
    "requests_failed",
    "requests_total",
    "prompt_seconds_wall",
    "generation_seconds_wall",
    "estimated_flops",
    "estimated_read_bytes",
    "estimated_write_bytes",
    "process_start_time",
    "ttft_seconds",
    "itl_seconds",
    "tpot_seconds",
    "e2e_seconds",
    "queue_seconds",
    "prefill_seconds",
    "decode_seconds",
    "inference_seconds",
    "prefill_kv_computed_tokens",
    "prompt_tokens_per_request",
    "generation_tokens_per_request",
    "spec_drafts",
    "spec_draft_tokens",
    "spec_accepted_tokens",
    "spec_accept_length",
    "spec_accept_rate",
    "spec_accepted_by_position",
    "spec_verify_calls",
    "retracted_now",
    "preempted_prompt_tokens",
    "preempted_output_tokens",
    "kv_used_tokens",
    "kv_evictable_tokens",
    "kv_free_tokens",
    "external_prefix_cache_queries",
    "external_prefix_cache_hits",
    "mm_cache_queries",
    "mm_cache_hits",
    "kv_block_lifetime_seconds",
    "kv_block_idle_before_evict_seconds",
    "kv_block_reuse_gap_seconds",
    "kv_offload_bytes",
    "kv_offload_seconds",
    "kv_transfer_seconds",
    "kv_transfer_failures",
    "batch_forward_prefill_seconds",
    "batch_forward_decode_seconds",
    "batch_concat",
    "batch_tokens",
    "cache_config_info",
};

}  // namespace

std::span<const CatalogEntry> catalog() { return kCatalog; }

std::string_view signal_name(Signal s) {
  const auto i = static_cast<std::size_t>(s);
  return i < kSignalNames.size() ? kSignalNames[i] : "unknown";
}

SignalKind signal_kind(Signal s) {
  switch (s) {
    case S::kRunning:
    case S::kWaiting:
    case S::kWaitingCapacity:
    case S::kWaitingDeferred:
    case S::kSwapped:
    case S::kKvUsage:
    case S::kKvPoolTokens:
    case S::kPrefixCacheHitRate:
    case S::kSpecAcceptLength:
    case S::kSpecAcceptRate:
    case S::kRetractedNow:
    case S::kKvUsedTokens:
    case S::kKvEvictableTokens:
    case S::kKvFreeTokens:
    case S::kBatchTokens:
    case S::kProcessStartTime: return SignalKind::kGauge;
    case S::kTtft:
    case S::kItl:
    case S::kTpot:
    case S::kE2e:
    case S::kQueueTime:
    case S::kPrefillTime:
    case S::kDecodeTime:
    case S::kInferenceTime:
    case S::kPrefillKvComputedTokens:
    case S::kPromptTokensPerRequest:
    case S::kGenerationTokensPerRequest:
    case S::kKvBlockLifetime:
    case S::kKvBlockIdleBeforeEvict:
    case S::kKvBlockReuseGap:
    case S::kKvTransferTime:
    case S::kBatchForwardPrefill:
    case S::kBatchForwardDecode: return SignalKind::kHistogram;
    case S::kCacheConfigInfo: return SignalKind::kInfo;
    default: return SignalKind::kCounter;
  }
}

bool signal_takes_max(Signal s) {
  return s == S::kKvUsage || s == S::kPrefixCacheHitRate || s == S::kProcessStartTime || s == S::kSpecAcceptLength ||
         s == S::kSpecAcceptRate;
}

std::string_view engine_name(Engine e) {
  switch (e) {
    case Engine::kVllmV0:
    case Engine::kVllmV1: return "vllm";
    case Engine::kSglang: return "sglang";
    case Engine::kLlamaCpp: return "llama.cpp";
    case Engine::kTgi: return "tgi";
    case Engine::kUnknown: break;
  }
  return "unknown";
}

std::string_view engine_generation(Engine e) {
  if (e == Engine::kVllmV0) return "v0";
  if (e == Engine::kVllmV1) return "v1";
  return "";
}

}  // namespace mpo::engines
