// The implementation of loadgen/api.hpp. Which API the load generator speaks (`sweep --api`,
// `attribute --probe --api`, `cache-state-bench --api`): the path it POSTs to, the body it sends
// for a workload request, and the ledger's operation.
#include "loadgen/api.hpp"

#include "core/json.hpp"

namespace mpo::loadgen {
namespace {

std::string messages_json(const ServingRequest& r, bool skip_system) {
  std::string out = "[";
  for (const auto& m : r.messages) {
    if (skip_system && m.role == "system") continue;
    if (out.size() > 1) out.push_back(',');
    JsonObjectWriter w;
    w.field("role", m.role).field("content", m.content);
    out += std::move(w).finish();
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

std::string request_body(const ServingRequest& r, const std::string& model, bool ignore_eos, Api api) {
  JsonObjectWriter w;
  switch (api) {
    case Api::kChat:
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .raw_field("messages", messages_json(r, false))
          .field("model", model)
          .field("stream", true)
          .raw_field("stream_options", R"({"include_usage":true})")
          .field("temperature", 0.0);
      break;
    case Api::kCompletions: {
      std::string prompt;
      for (const auto& m : r.messages) prompt += (prompt.empty() ? "" : "\n") + m.content;
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .field("model", model)
          .field("prompt", prompt)
          .field("stream", true)
          .raw_field("stream_options", R"({"include_usage":true})")
          .field("temperature", 0.0);
      break;
    }
    case Api::kResponses:
      if (ignore_eos) w.field("ignore_eos", true);
      w.raw_field("input", messages_json(r, false))
          .field("max_output_tokens", r.max_output_tokens)
          .field("model", model)
          .field("stream", true)
          .field("temperature", 0.0);
      break;
    case Api::kMessages: {
      std::string system;
      for (const auto& m : r.messages) {
        if (m.role == "system") system += (system.empty() ? "" : "\n") + m.content;
      }
      if (ignore_eos) w.field("ignore_eos", true);
      w.field("max_tokens", r.max_output_tokens)
          .raw_field("messages", messages_json(r, true))
          .field("model", model)
          .field("stream", true);
      if (!system.empty()) w.field("system", system);
      w.field("temperature", 0.0);
      break;
    }
  }
  return std::move(w).finish();
}

}  // namespace mpo::loadgen
