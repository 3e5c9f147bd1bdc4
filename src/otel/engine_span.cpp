// The implementation of otel/engine_span.hpp. An engine's own span of one request, shaped as vLLM
// exports it with --otlp-traces-endpoint (vllm/tracing.py SpanAttributes,
// vllm/v1/engine/output_processor.py): named `llm_request`, kind SERVER, a child of the request's
// incoming traceparent, with the engine's queue, prefill, decode, inference and end-to-end times in
// seconds.
#include "otel/engine_span.hpp"

namespace mpo::otel {
namespace {

double seconds(std::int64_t ns) { return static_cast<double>(ns) / 1e9; }

}  // namespace

Span engine_request_span(const EngineRequest& r, std::optional<std::string_view> traceparent, IdGenerator& ids) {
  Span s;
  const RequestTrace trace = trace_for_request(traceparent, ids);
  s.trace_id = trace.trace_id;
  s.span_id = trace.span_id;
  s.parent_span_id = trace.parent_id;
  s.name = kEngineSpanName;
  s.kind = SpanKind::kServer;
  s.start_unix_ns = r.arrival_ns;
  s.end_unix_ns = r.finished_ns;
  auto& a = s.attributes;
  a.push_back({vllm_attr::kRequestId, r.request_id});
  a.push_back({vllm_attr::kResponseModel, r.model});
  a.push_back({vllm_attr::kPromptTokens, std::int64_t{r.prompt_tokens}});
  a.push_back({vllm_attr::kCompletionTokens, std::int64_t{r.completion_tokens}});
  a.push_back({vllm_attr::kE2e, seconds(r.finished_ns - r.arrival_ns)});
  // vLLM: queued = scheduled - queued, prefill = first token - scheduled, decode = last token -
  // first token, inference = last token - scheduled, time to first token = first token - arrival.
  if (r.scheduled_ns) a.push_back({vllm_attr::kTimeInQueue, seconds(*r.scheduled_ns - r.arrival_ns)});
  if (r.first_token_ns) a.push_back({vllm_attr::kTimeToFirstToken, seconds(*r.first_token_ns - r.arrival_ns)});
  if (r.scheduled_ns && r.first_token_ns)
    a.push_back({vllm_attr::kPrefill, seconds(*r.first_token_ns - *r.scheduled_ns)});
  if (r.first_token_ns && r.last_token_ns)
    a.push_back({vllm_attr::kDecode, seconds(*r.last_token_ns - *r.first_token_ns)});
  if (r.scheduled_ns && r.last_token_ns)
    a.push_back({vllm_attr::kInference, seconds(*r.last_token_ns - *r.scheduled_ns)});
  return s;
}

}  // namespace mpo::otel
