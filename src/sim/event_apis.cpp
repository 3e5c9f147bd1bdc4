// The implementation of sim/event_apis.hpp. The simulator's Responses API (`/v1/responses`) and
// Anthropic Messages API (`/v1/messages`) output, pure: streamed events and whole bodies, shaped
// like the captures of a real llama.cpp b10309 server (tests/fixtures/llamacpp/*_b10309_*) and the
// public API references (event names, field names, the order of events).
#include "sim/event_apis.hpp"

#include <fmt/format.h>

#include "core/json.hpp"

namespace mpo::sim {
namespace {

std::string sse(std::string_view type, std::string_view data) {
  return fmt::format("event: {}\ndata: {}\n\n", type, data);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return "[" + out + "]";
}

// A kind with nothing of its own on these APIs (tool calls) is written as text.
OutputKind shown_as(OutputKind k) { return k == OutputKind::kTool ? OutputKind::kContent : k; }

const char* anthropic_stop_reason(std::optional<FinishReason> f) {
  if (f && *f == FinishReason::kLength) return "max_tokens";
  return "end_turn";
}

}  // namespace

// ---- Responses API ----

std::string ResponsesEvents::event(std::string_view type, std::string_view fields) {
  return sse(type, fmt::format("{{\"type\":\"{}\",\"sequence_number\":{}{}{}}}", type, sequence_++,
                               fields.empty() ? "" : ",", fields));
}

std::string ResponsesEvents::response_object(std::string_view status, const ResponseTotals* t) const {
  std::string usage = "null";
  std::string incomplete = "null";
  if (t != nullptr) {
    usage = fmt::format(
        "{{\"input_tokens\":{},\"input_tokens_details\":{{\"cached_tokens\":{}}},\"output_tokens\":{},"
        "\"output_tokens_details\":{{\"reasoning_tokens\":{}}},\"total_tokens\":{}}}",
        t->prompt_tokens, t->cached_prompt_tokens, t->completion_tokens, t->reasoning_tokens,
        t->prompt_tokens + t->completion_tokens);
    if (status == "incomplete") incomplete = R"({"reason":"max_output_tokens"})";
  }
  return fmt::format(
      "{{\"id\":{},\"object\":\"response\",\"created_at\":{},\"status\":\"{}\",\"model\":{},\"output\":{},"
      "\"incomplete_details\":{},\"error\":null,\"usage\":{}}}",
      json_quote(identity_.id), identity_.created, status, json_quote(identity_.model), join(output_), incomplete,
      usage);
}

std::string ResponsesEvents::start() {
  std::string out = event("response.created", "\"response\":" + response_object("in_progress", nullptr));
  out += event("response.in_progress", "\"response\":" + response_object("in_progress", nullptr));
  return out;
}

std::string ResponsesEvents::open_item(OutputKind kind) {
  open_ = kind;
  item_text_.clear();
  const std::size_t n = output_.size();
  const std::string hex = identity_.id.substr(identity_.id.find('_') + 1);
  std::string item, part;
  if (kind == OutputKind::kReasoning) {
    item_id_ = fmt::format("rs_{}_{}", hex, n);
    item = fmt::format(R"({{"id":{},"type":"reasoning","summary":[],"content":[],"status":"in_progress"}})",
                       json_quote(item_id_));
    part = R"({"type":"reasoning_text","text":""})";
  } else {
    item_id_ = fmt::format("msg_{}_{}", hex, n);
    item = fmt::format(R"({{"id":{},"type":"message","role":"assistant","status":"in_progress","content":[]}})",
                       json_quote(item_id_));
    part = R"({"type":"output_text","text":"","annotations":[]})";
  }
  std::string out = event("response.output_item.added", fmt::format("\"output_index\":{},\"item\":{}", n, item));
  out += event(
      "response.content_part.added",
      fmt::format("\"item_id\":{},\"output_index\":{},\"content_index\":0,\"part\":{}", json_quote(item_id_), n, part));
  return out;
}

std::string ResponsesEvents::close_item() {
  if (!open_) return {};
  const std::size_t n = output_.size();
  const bool reasoning = *open_ == OutputKind::kReasoning;
  const std::string text = json_quote(item_text_);
  const std::string part = reasoning ? fmt::format(R"({{"type":"reasoning_text","text":{}}})", text)
                                     : fmt::format(R"({{"type":"output_text","text":{},"annotations":[]}})", text);
  const std::string item =
      reasoning ? fmt::format(R"({{"id":{},"type":"reasoning","summary":[],"content":[{}],"status":"completed"}})",
                              json_quote(item_id_), part)
                : fmt::format(R"({{"id":{},"type":"message","role":"assistant","status":"completed","content":[{}]}})",
                              json_quote(item_id_), part);
  const std::string where =
      fmt::format("\"item_id\":{},\"output_index\":{},\"content_index\":0", json_quote(item_id_), n);
  std::string out = event(reasoning ? "response.reasoning_text.done" : "response.output_text.done",
                          fmt::format("{},\"text\":{}", where, text));
  out += event("response.content_part.done", fmt::format("{},\"part\":{}", where, part));
  out += event("response.output_item.done", fmt::format("\"output_index\":{},\"item\":{}", n, item));
  output_.push_back(item);
  open_.reset();
  return out;
}

std::string ResponsesEvents::delta(OutputKind kind, std::string_view text) {
  kind = shown_as(kind);
  std::string out;
  if (open_ != kind) {
    out += close_item();
    out += open_item(kind);
  }
  item_text_ += text;
  out += event(kind == OutputKind::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
               fmt::format("\"item_id\":{},\"output_index\":{},\"content_index\":0,\"delta\":{}", json_quote(item_id_),
                           output_.size(), json_quote(text)));
  return out;
}

std::string ResponsesEvents::end(const ResponseTotals& totals) {
  std::string out = close_item();
  const bool incomplete = totals.finish && *totals.finish == FinishReason::kLength;
  out += event(incomplete ? "response.incomplete" : "response.completed",
               "\"response\":" + response_object(incomplete ? "incomplete" : "completed", &totals));
  return out;
}

std::string ResponsesEvents::body(const ResponseTotals& totals) {
  close_item();
  const bool incomplete = totals.finish && *totals.finish == FinishReason::kLength;
  return response_object(incomplete ? "incomplete" : "completed", &totals);
}

// ---- Anthropic Messages ----

std::string MessagesEvents::start(int prompt_tokens, int cached) {
  started_ = true;
  std::string out = sse(
      "message_start",
      fmt::format("{{\"type\":\"message_start\",\"message\":{{\"id\":{},\"type\":\"message\",\"role\":\"assistant\","
                  "\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{{"
                  "\"input_tokens\":{},\"cache_read_input_tokens\":{},\"output_tokens\":0}}}}}}",
                  json_quote(identity_.id), json_quote(identity_.model), prompt_tokens - cached, cached));
  out += sse("ping", R"({"type":"ping"})");
  return out;
}

std::string MessagesEvents::close_block() {
  if (!open_) return {};
  content_.push_back(*open_ == OutputKind::kReasoning
                         ? fmt::format(R"({{"type":"thinking","thinking":{},"signature":""}})", json_quote(block_text_))
                         : fmt::format(R"({{"type":"text","text":{}}})", json_quote(block_text_)));
  open_.reset();
  return sse("content_block_stop", fmt::format(R"({{"type":"content_block_stop","index":{}}})", index_));
}

std::string MessagesEvents::delta(OutputKind kind, std::string_view text, int prompt_tokens, int cached) {
  kind = shown_as(kind);
  std::string out = started_ ? std::string() : start(prompt_tokens, cached);
  const bool thinking = kind == OutputKind::kReasoning;
  if (open_ != kind) {
    out += close_block();
    open_ = kind;
    block_text_.clear();
    ++index_;
    out += sse(
        "content_block_start",
        fmt::format(R"({{"type":"content_block_start","index":{},"content_block":{}}})", index_,
                    thinking ? R"({"type":"thinking","thinking":"","signature":""})" : R"({"type":"text","text":""})"));
  }
  block_text_ += text;
  out += sse("content_block_delta",
             fmt::format(R"({{"type":"content_block_delta","index":{},"delta":{{"type":"{}","{}":{}}}}})", index_,
                         thinking ? "thinking_delta" : "text_delta", thinking ? "thinking" : "text", json_quote(text)));
  return out;
}

std::string MessagesEvents::end(const ResponseTotals& t) {
  std::string out = started_ ? std::string() : start(t.prompt_tokens, t.cached_prompt_tokens);
  out += close_block();
  out += sse("message_delta", fmt::format("{{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{}\","
                                          "\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{}}}}}",
                                          anthropic_stop_reason(t.finish), t.completion_tokens));
  out += sse("message_stop", R"({"type":"message_stop"})");
  return out;
}

std::string MessagesEvents::body(const ResponseTotals& t) {
  close_block();
  return fmt::format(
      "{{\"id\":{},\"type\":\"message\",\"role\":\"assistant\",\"content\":{},\"model\":{},\"stop_reason\":\"{}\","
      "\"stop_sequence\":null,\"usage\":{{\"input_tokens\":{},\"cache_read_input_tokens\":{},\"output_tokens\":{}}}}}",
      json_quote(identity_.id), join(content_), json_quote(identity_.model), anthropic_stop_reason(t.finish),
      t.prompt_tokens - t.cached_prompt_tokens, t.cached_prompt_tokens, t.completion_tokens);
}

std::string render_messages_error(std::string_view type, std::string_view message) {
  return fmt::format(R"({{"type":"error","error":{{"type":{},"message":{}}}}})", json_quote(type), json_quote(message));
}

}  // namespace mpo::sim
