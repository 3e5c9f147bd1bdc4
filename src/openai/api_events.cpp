// The implementation of openai/api_events.hpp. Readers of the two event-typed APIs: the OpenAI
// Responses API (`/v1/responses`) and the Anthropic Messages API (`/v1/messages`), streamed events
// and whole bodies.
#include "openai/api_events.hpp"

#include <array>

#include "openai/payload_fields.hpp"

namespace mpo::openai::detail {
namespace {

// Responses API usage (OpenAI API reference, "The response object": usage.input_tokens includes
// the cached ones, reported again in input_tokens_details.cached_tokens).
std::optional<Usage> responses_usage(element response) {
  const auto u = object_field(response, "usage");
  if (!u) return std::nullopt;
  Usage out;
  out.prompt_tokens = int_field(*u, "input_tokens");
  out.completion_tokens = int_field(*u, "output_tokens");
  out.total_tokens = int_field(*u, "total_tokens");
  if (const auto d = object_field(*u, "input_tokens_details"))
    out.cached_prompt_tokens = int_field(*d, "cached_tokens");
  if (const auto d = object_field(*u, "output_tokens_details"))
    out.reasoning_tokens = int_field(*d, "reasoning_tokens");
  return out;
}

// The fields of a Responses object (streamed in response.created/completed/..., or a whole body).
void read_response_object(element response, PayloadInfo& info) {
  if (const auto id = str(response, "id"); !id.empty()) info.id = std::string(id);
  if (const auto model = str(response, "model"); !model.empty()) info.model = std::string(model);
  info.usage = responses_usage(response);
  const std::string_view status = str(response, "status");
  if (status == "incomplete") {
    const auto details = object_field(response, "incomplete_details");
    const std::string_view reason = details ? str(*details, "reason") : std::string_view();
    info.finish_reason = reason.empty() ? "incomplete" : std::string(reason);
  } else if (status == "completed" || status == "failed" || status == "cancelled") {
    info.finish_reason = std::string(status);
  }
  element err;
  if (response["error"].get(err) == simdjson::SUCCESS && err.is_object()) {
    info.kind = ChunkKind::kError;
    info.error_type = std::string(str(err, "code"));
    info.error_message = std::string(str(err, "message"));
  }
}

struct DeltaType {
  std::string_view type;
  ChunkKind kind;
};
// The events that carry generated output, and what kind of output each is.
constexpr std::array<DeltaType, 6> kResponsesDeltas{{
    {"response.output_text.delta", ChunkKind::kContent},
    {"response.reasoning_text.delta", ChunkKind::kReasoning},
    {"response.reasoning_summary_text.delta", ChunkKind::kReasoning},
    {"response.function_call_arguments.delta", ChunkKind::kToolCalls},
    {"response.custom_tool_call_input.delta", ChunkKind::kToolCalls},
    {"response.refusal.delta", ChunkKind::kRefusal},
}};

// Lifecycle events of a Responses stream that carry nothing we measure (OpenAI API reference,
// "Streaming events"). Any other `response.*` type is counted as unknown and ignored.
constexpr std::array<std::string_view, 17> kResponsesLifecycle{
    "response.queued",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.done",
    "response.output_text.annotation.added",
    "response.reasoning_text.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.done",
    "response.function_call_arguments.done",
    "response.custom_tool_call_input.done",
    "response.refusal.done",
    "response.created",
    "response.in_progress",
    "response.output_text.logprobs",
};

// Anthropic Messages usage ("Messages" API reference, "Prompt caching"): input_tokens counts only
// the tokens after the last cache breakpoint; the prompt is input_tokens + cache_read_input_tokens
// + cache_creation_input_tokens, and the cached part is cache_read_input_tokens.
// `with_output`: message_start's output_tokens is a placeholder (0 or 1), not a count.
std::optional<Usage> messages_usage(element holder, bool with_output) {
  const auto u = object_field(holder, "usage");
  if (!u) return std::nullopt;
  Usage out;
  const auto input = int_field(*u, "input_tokens");
  const auto read = int_field(*u, "cache_read_input_tokens");
  const auto created = int_field(*u, "cache_creation_input_tokens");
  if (input || read || created) out.prompt_tokens = input.value_or(0) + read.value_or(0) + created.value_or(0);
  out.cached_prompt_tokens = read;
  if (with_output) out.completion_tokens = int_field(*u, "output_tokens");
  if (out.prompt_tokens && out.completion_tokens) out.total_tokens = *out.prompt_tokens + *out.completion_tokens;
  return out;
}

}  // namespace

void read_responses_event(element root, std::string_view type, PayloadInfo& info) {
  info.typed_event = true;
  info.kind = ChunkKind::kEmpty;
  for (const auto& d : kResponsesDeltas) {
    if (type == d.type) {
      if (!str(root, "delta").empty()) info.kind = d.kind;
      return;
    }
  }
  const bool terminal = type == "response.completed" || type == "response.incomplete" || type == "response.failed";
  if (terminal || type == "response.created" || type == "response.in_progress" || type == "response.queued") {
    info.terminal = terminal;
    info.final_usage = terminal;
    if (const auto response = object_field(root, "response")) read_response_object(*response, info);
    return;
  }
  for (std::string_view known : kResponsesLifecycle) {
    if (type == known) return;
  }
  info.unknown_event = true;
}

void read_responses_body(element root, PayloadInfo& info) {
  info.kind = ChunkKind::kEmpty;
  read_response_object(root, info);
}

bool is_messages_event(std::string_view type) {
  return type == "message_start" || type == "content_block_start" || type == "content_block_delta" ||
         type == "content_block_stop" || type == "message_delta" || type == "message_stop" || type == "ping";
}

void read_messages_event(element root, std::string_view type, PayloadInfo& info) {
  info.typed_event = true;
  info.kind = ChunkKind::kEmpty;
  if (type == "content_block_delta") {
    const auto delta = object_field(root, "delta");
    if (!delta) return;
    const std::string_view kind = str(*delta, "type");
    if (kind == "text_delta" && !str(*delta, "text").empty()) info.kind = ChunkKind::kContent;
    if (kind == "thinking_delta" && !str(*delta, "thinking").empty()) info.kind = ChunkKind::kReasoning;
    if (kind == "input_json_delta" && !str(*delta, "partial_json").empty()) info.kind = ChunkKind::kToolCalls;
    return;
  }
  if (type == "message_start") {
    const auto message = object_field(root, "message");
    if (!message) return;
    info.id = std::string(str(*message, "id"));
    info.model = std::string(str(*message, "model"));
    info.usage = messages_usage(*message, false);
    return;
  }
  if (type == "message_delta") {
    info.final_usage = true;
    info.usage = messages_usage(root, true);
    if (const auto delta = object_field(root, "delta")) info.finish_reason = std::string(str(*delta, "stop_reason"));
    return;
  }
  info.terminal = type == "message_stop";
}

void read_messages_body(element root, PayloadInfo& info) {
  info.kind = ChunkKind::kEmpty;
  info.id = std::string(str(root, "id"));
  info.model = std::string(str(root, "model"));
  info.usage = messages_usage(root, true);
  info.finish_reason = std::string(str(root, "stop_reason"));
}

void read_error_event(element root, PayloadInfo& info) {
  info.kind = ChunkKind::kError;
  info.typed_event = true;
  if (const auto err = object_field(root, "error")) {
    info.error_type = std::string(str(*err, "type"));
    info.error_message = std::string(str(*err, "message"));
    return;
  }
  info.error_type = std::string(str(root, "code"));
  info.error_message = std::string(str(root, "message"));
}

}  // namespace mpo::openai::detail
