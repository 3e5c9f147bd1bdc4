// An engine's own span of one request, shaped as vLLM exports it with --otlp-traces-endpoint
// (vllm/tracing.py SpanAttributes, vllm/v1/engine/output_processor.py): named `llm_request`,
// kind SERVER, a child of the request's incoming traceparent, with the engine's queue, prefill,
// decode, inference and end-to-end times in seconds. `simulate --otlp-traces-endpoint` exports
// these; `attribute --traces` reads them back (docs/OTEL.md "Engine spans"). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "otel/otlp.hpp"
#include "otel/trace_context.hpp"

namespace mpo::otel {

inline constexpr const char* kEngineSpanName = "llm_request";

// vLLM's attribute names (its SpanAttributes; the gen_ai.latency.* ones are its own). A span may carry
// the token counts under vLLM's (deprecated) names or the GenAI conventions' current ones.
namespace vllm_attr {
inline constexpr const char* kRequestId = "gen_ai.request.id";
inline constexpr const char* kResponseModel = "gen_ai.response.model";
inline constexpr const char* kPromptTokens = "gen_ai.usage.prompt_tokens";
inline constexpr const char* kCompletionTokens = "gen_ai.usage.completion_tokens";
inline constexpr const char* kInputTokens = "gen_ai.usage.input_tokens";    // the two above as the GenAI
inline constexpr const char* kOutputTokens = "gen_ai.usage.output_tokens";  // conventions spell them now
inline constexpr const char* kTimeInQueue = "gen_ai.latency.time_in_queue";
inline constexpr const char* kTimeToFirstToken = "gen_ai.latency.time_to_first_token";
inline constexpr const char* kE2e = "gen_ai.latency.e2e";
inline constexpr const char* kPrefill = "gen_ai.latency.time_in_model_prefill";
inline constexpr const char* kDecode = "gen_ai.latency.time_in_model_decode";
inline constexpr const char* kInference = "gen_ai.latency.time_in_model_inference";
}  // namespace vllm_attr

// One finished request as the engine timed it (wall clock, nanoseconds since the epoch).
struct EngineRequest {
  std::string request_id;
  std::string model;
  std::int64_t arrival_ns = 0;
  std::optional<std::int64_t> scheduled_ns, first_token_ns, last_token_ns;
  std::int64_t finished_ns = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// The request's span: in the incoming trace (a valid `traceparent`) as a child of its parent id,
// else at the root of a new trace. Times missing (a request that never ran) leave their
// attributes out.
Span engine_request_span(const EngineRequest& r, std::optional<std::string_view> traceparent, IdGenerator& ids);

}  // namespace mpo::otel
