// The implementation of loadgen/api.hpp. Which API the load generator speaks (`sweep --api`,
// `attribute --probe --api`, `cache-state-bench --api`): the path it POSTs to, the body it sends
// for a workload request, and the ledger's operation.
#include "loadgen/api.hpp"

#include <algorithm>

#include "core/json.hpp"
#include "loadgen/conversation.hpp"

namespace mpo::loadgen {
namespace {

// The tool a multi-turn workload's tool turns call (loadgen/conversation.cpp), as each API declares one.
constexpr const char* kToolSchema =
    R"({"type":"object","properties":{"query":{"type":"string"}},"required":["query"]})";
constexpr const char* kToolDescription = "Looks up what the task needs";

bool has_tool_turns(const ServingRequest& r) {
  return std::any_of(r.messages.begin(), r.messages.end(), [](const Message& m) { return !m.tool_name.empty(); });
}

std::string tools_json(Api api, std::string_view name) {
  JsonObjectWriter t;
  switch (api) {
    case Api::kChat: {
      JsonObjectWriter f;
      f.field("description", kToolDescription).field("name", name).raw_field("parameters", kToolSchema);
      t.raw_field("function", std::move(f).finish()).field("type", "function");
      break;
    }
    case Api::kResponses:
      t.field("description", kToolDescription)
          .field("name", name)
          .raw_field("parameters", kToolSchema)
          .field("type", "function");
      break;
    case Api::kMessages:
      t.field("description", kToolDescription).raw_field("input_schema", kToolSchema).field("name", name);
      break;
    case Api::kCompletions: break;
  }
  return "[" + std::move(t).finish() + "]";
}

// One message as `api` writes it: plain {role, content}, or a tool call or its result in the API's
// own shape (chat: tool_calls and role "tool"; responses: function_call and function_call_output
// items; messages: tool_use and tool_result blocks).
std::string message_json(const Message& m, Api api) {
  JsonObjectWriter w;
  if (!m.tool_name.empty()) {
    if (api == Api::kResponses) {
      w.field("arguments", m.content)
          .field("call_id", m.tool_call_id)
          .field("name", m.tool_name)
          .field("type", "function_call");
    } else if (api == Api::kMessages) {
      JsonObjectWriter block;
      block.field("id", m.tool_call_id)
          .raw_field("input", m.content)
          .field("name", m.tool_name)
          .field("type", "tool_use");
      w.raw_field("content", "[" + std::move(block).finish() + "]").field("role", "assistant");
    } else {
      JsonObjectWriter f;
      f.field("arguments", m.content).field("name", m.tool_name);
      JsonObjectWriter call;
      call.raw_field("function", std::move(f).finish()).field("id", m.tool_call_id).field("type", "function");
      w.field("role", "assistant").null_field("content").raw_field("tool_calls", "[" + std::move(call).finish() + "]");
    }
    return std::move(w).finish();
  }
  if (m.role == "tool") {
    if (api == Api::kResponses) {
      w.field("call_id", m.tool_call_id).field("output", m.content).field("type", "function_call_output");
    } else if (api == Api::kMessages) {
      JsonObjectWriter block;
      block.field("content", m.content).field("tool_use_id", m.tool_call_id).field("type", "tool_result");
      w.raw_field("content", "[" + std::move(block).finish() + "]").field("role", "user");
    } else {
      w.field("role", "tool").field("tool_call_id", m.tool_call_id).field("content", m.content);
    }
    return std::move(w).finish();
  }
  if (api == Api::kResponses && m.role == "assistant") {
    // An earlier answer is an output message: its text an output_text part (llama.cpp b10309 refuses
    // an assistant item with plain string content: "Cannot determine type of 'item'").
    JsonObjectWriter part;
    part.field("text", m.content).field("type", "output_text");
    w.raw_field("content", "[" + std::move(part).finish() + "]").field("role", "assistant").field("type", "message");
    return std::move(w).finish();
  }
  w.field("role", m.role).field("content", m.content);
  return std::move(w).finish();
}

std::string messages_json(const ServingRequest& r, Api api) {
  std::string out = "[";
  for (const auto& m : r.messages) {
    if (api == Api::kMessages && m.role == "system") continue;
    if (out.size() > 1) out.push_back(',');
    out += message_json(m, api);
  }
  out.push_back(']');
  return out;
}

}  // namespace

std::optional<Api> parse_api(std::string_view name) {
  for (Api a : {Api::kChat, Api::kCompletions, Api::kResponses, Api::kMessages}) {
    if (name == api_name(a)) return a;
  }
  return std::nullopt;
}

std::string_view api_name(Api api) {
  switch (api) {
    case Api::kChat: return "chat";
    case Api::kCompletions: return "completions";
    case Api::kResponses: return "responses";
    case Api::kMessages: return "messages";
  }
  return "chat";
}

std::string_view api_path(Api api) {
  switch (api) {
    case Api::kChat: return "/chat/completions";
    case Api::kCompletions: return "/completions";
    case Api::kResponses: return "/responses";
    case Api::kMessages: return "/messages";
  }
  return "/chat/completions";
}

std::string_view api_operation(Api api) { return api == Api::kCompletions ? "text_completion" : api_name(api); }

std::string completions_prompt(const std::vector<Message>& messages) {
  std::string prompt;
  for (const auto& m : messages) prompt += (prompt.empty() ? "" : "\n") + m.content;
  return prompt;
}

std::string request_body(const ServingRequest& r, const std::string& model, bool ignore_eos, Api api) {
  JsonObjectWriter w;
  switch (api) {
    case Api::kChat:
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .raw_field("messages", messages_json(r, api))
          .field("model", model)
          .field("stream", true)
          .raw_field("stream_options", R"({"include_usage":true})")
          .field("temperature", 0.0);
      break;
    case Api::kCompletions: {
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .field("model", model)
          .field("prompt", completions_prompt(r.messages))
          .field("stream", true)
          .raw_field("stream_options", R"({"include_usage":true})")
          .field("temperature", 0.0);
      break;
    }
    case Api::kResponses:
      if (ignore_eos) w.field("ignore_eos", true);
      w.raw_field("input", messages_json(r, api)).field("max_output_tokens", r.max_output_tokens).field("model", model);
      if (!r.previous_response_id.empty()) w.field("previous_response_id", r.previous_response_id);
      w.field("stream", true).field("temperature", 0.0);
      break;
    case Api::kMessages: {
      std::string system;
      for (const auto& m : r.messages) {
        if (m.role == "system") system += (system.empty() ? "" : "\n") + m.content;
      }
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .raw_field("messages", messages_json(r, api))
          .field("model", model)
          .field("stream", true);
      if (!system.empty()) w.field("system", system);
      w.field("temperature", 0.0);
      break;
    }
  }
  if (api != Api::kCompletions && r.requires_tool_call) {
    w.raw_field("tool_choice", api == Api::kMessages ? R"({"type":"any"})" : R"("required")");
  }
  if (api != Api::kCompletions && (r.declares_tool || has_tool_turns(r))) {
    w.raw_field("tools", tools_json(api, kToolName));
  }
  return std::move(w).finish();
}

}  // namespace mpo::loadgen
