// Engine metric catalogs: which series of which engine carries which canonical signal. Data, not
// branches: one table (catalog.cpp), read in order; for each signal the first entry whose series the
// exposition has wins, and its name is kept as the signal's source. docs/METRICS.md lists it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace mpo::engines {

enum class Engine : std::uint8_t { kUnknown, kVllmV0, kVllmV1, kSglang, kLlamaCpp, kTgi };

std::string_view engine_name(Engine e);        // "vllm", "sglang", "llama.cpp", "tgi", "unknown"
std::string_view engine_generation(Engine e);  // "v0", "v1", or ""

enum class Signal : std::uint8_t {
  kRunning,
  kWaiting,
  kWaitingCapacity,
  kWaitingDeferred,
  kSwapped,
  kKvUsage,
  kKvPoolTokens,
  kPrefixCacheQueries,
  kPrefixCacheHits,
  kPrefixCacheHitRate,  // a gauge the engine computes itself (V0, SGLang)
  kPreemptions,
  kPromptTokens,
  kGenerationTokens,
  kCachedPromptTokens,
  kComputedPromptTokens,
  kRequestsFinished,
  kRequestsErrored,
  kRequestsAborted,
  kRequestsFailed,
  kRequestsTotal,
  kPromptSecondsWall,      // llama.cpp: wall time spent processing prompts
  kGenerationSecondsWall,  // llama.cpp: wall time spent generating
  kEstimatedFlops,
  kEstimatedReadBytes,
  kEstimatedWriteBytes,
  kProcessStartTime,
  kTtft,
  kItl,
  kTpot,
  kE2e,
  kQueueTime,
  kPrefillTime,
  kDecodeTime,
  kInferenceTime,
  kPrefillKvComputedTokens,
  kPromptTokensPerRequest,
  kGenerationTokensPerRequest,
  kSpecDrafts,                  // speculative decoding: verification steps with a draft
  kSpecDraftTokens,             // draft tokens proposed
  kSpecAcceptedTokens,          // draft tokens accepted
  kSpecAcceptLength,            // SGLang's gauge: mean accepted length, as it computes it
  kSpecAcceptRate,              // SGLang's gauge: acceptance rate, as it computes it
  kSpecAcceptedByPosition,      // vLLM, llama.cpp: accepted draft tokens per draft position (parts by `position`)
  kSpecVerifyCalls,             // SGLang: verification steps
  kRetractedNow,                // SGLang: requests retracted (preempted) at scrape time
  kPreemptedPromptTokens,       // SGLang: input tokens of retracted requests (to be recomputed)
  kPreemptedOutputTokens,       // SGLang: output tokens of retracted requests (to be recomputed)
  kKvUsedTokens,                // SGLang: token slots held by running requests
  kKvEvictableTokens,           // SGLang: token slots holding cached prefixes nobody runs on (reclaimable)
  kKvFreeTokens,                // SGLang: free token slots
  kExternalPrefixCacheQueries,  // vLLM: a KV connector's prefix-cache queries (tokens)
  kExternalPrefixCacheHits,     // vLLM: a KV connector's prefix-cache hits (tokens)
  kMmCacheQueries,              // vLLM: multi-modal cache queries (items)
  kMmCacheHits,                 // vLLM: multi-modal cache hits (items)
  kKvBlockLifetime,             // vLLM (--kv-cache-metrics): block allocation to eviction
  kKvBlockIdleBeforeEvict,      // vLLM (--kv-cache-metrics): last use to eviction
  kKvBlockReuseGap,             // vLLM (--kv-cache-metrics): gap between uses of a block
  kKvOffloadBytes,              // vLLM offloading connector: bytes moved (parts by `transfer_type`)
  kKvOffloadSeconds,            // vLLM offloading connector: time moving them (parts by `transfer_type`)
  kKvTransferTime,              // vLLM NIXL connector: one KV transfer (prefill/decode disaggregation)
  kKvTransferFailures,          // vLLM NIXL connector: failed transfers
  kBatchForwardPrefill,         // TGI: one prefill forward pass of a batch
  kBatchForwardDecode,          // TGI: one decode forward pass of a batch
  kBatchConcat,                 // TGI: batches concatenated into the running one (parts by `reason`)
  kBatchTokens,                 // TGI: the token budget the running batch holds
  kCacheConfigInfo,
  kCount,
};

std::string_view signal_name(Signal s);  // snake_case, as written in snapshots: "waiting_capacity"

enum class SignalKind : std::uint8_t { kGauge, kCounter, kHistogram, kInfo };
SignalKind signal_kind(Signal s);
// How series of one signal add up across label sets (engines, data-parallel ranks): ratios take
// the largest (the fullest pool decides saturation), everything else is summed.
bool signal_takes_max(Signal s);

// Engine masks for entries shared by several engines.
inline constexpr std::uint32_t engine_bit(Engine e) { return 1u << static_cast<unsigned>(e); }
inline constexpr std::uint32_t kAnyVllm = engine_bit(Engine::kVllmV0) | engine_bit(Engine::kVllmV1);
inline constexpr std::uint32_t kAnyEngine = 0xFFFFFFFEu;  // every known engine

enum class Read : std::uint8_t {
  kValue,         // the samples of the family (a counter, gauge or histogram as declared)
  kHistogramSum,  // a histogram's _sum read as a counter (TGI's token totals)
};

struct CatalogEntry {
  std::uint32_t engines;  // engine_bit mask
  Signal signal;
  std::string_view family;      // as exposed in format 0.0.4 ("vllm:prompt_tokens_total")
  std::string_view label = {};  // only samples whose `label` equals `value`
  std::string_view value = {};
  Read read = Read::kValue;
  std::string_view meaning = {};  // what the number means where it is not obvious
  std::string_view split = {};    // a label whose values are kept apart as parts ("position")
};

std::span<const CatalogEntry> catalog();

}  // namespace mpo::engines
