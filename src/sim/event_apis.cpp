// The implementation of sim/event_apis.hpp: the Responses and Anthropic Messages APIs' events and
// bodies, in the references' dialect and in llama.cpp b10309's. b10309's, as captured:
//   response.created / in_progress  {"type":..,"response":{"id":..,"object":"response","status":"in_progress"}}
//   response.output_item.added
//   {"type":..,"item":{"content":[],"id":..,"role":"assistant","status":"in_progress","type":"message"}}
//   response.content_part.added     {"type":..,"item_id":..,"part":{"type":"output_text","text":""}}
//   response.output_text.delta      {"type":..,"item_id":..,"delta":..}
//   response.output_text.done       {"type":..,"item_id":..,"text":..}
//   response.content_part.done
//   {"type":..,"item_id":..,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":..}}
//   response.output_item.done
//   {"type":..,"item":{"type":"message","status":"completed","id":..,"content":[part],"role":"assistant"}}
//   response.completed {"type":..,"response":{"id","object","created_at","status":"completed","model","output",
//                                   "usage":{"input_tokens","output_tokens","total_tokens","input_tokens_details"}},"timings":..}
//   the whole body {"completed_at","created_at","id","model","object","output":[{"content","id","role",
//                                   "status","type"}],"status":"completed","usage"} (members sorted, no timings)
//   Messages: usage {"cache_read_input_tokens","input_tokens","output_tokens"}, no ping; the rest
//   as the reference's.
// b10309's reasoning items were not captured: they keep the reference's members, without sequence
// numbers or output indexes. Its forced call (llamacpp_b10309_responses_{stream,nostream}_tool_call*):
//   nothing until the function's name is parsed; then
//   response.output_item.added {"type":..,"item":{"id":"fc_<32>","arguments":"","call_id":"call_<32>",
//                                                 "name":..,"type":"function_call","status":"in_progress"}}
//   response.function_call_arguments.delta {"type":..,"delta":..,"item_id":..} (one a token)
//   response.output_item.done {"type":..,"item":{"id","type":"function_call","status":"completed",
//                                                "arguments","call_id","name"}}
//   the same item in response.completed's output and in the whole body's (not sorted there). Cut
//   by the length limit before the name: no item streamed (output []), the text as the body's message.
// The reference's (OpenAI's API reference): output_item.added with the item in progress, then
// function_call_arguments.delta {item_id, output_index, delta}, function_call_arguments.done
// {item_id, output_index, name, arguments}, output_item.done.
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

// A forced call's ids: the response id's hex digits after its prefix (b10309's are 32 letters and
// digits), dashes left out.
std::string call_hex(std::string_view response_id) {
  std::string hex;
  for (char c : response_id.substr(response_id.find('_') + 1)) {
    if (c != '-') hex.push_back(c);
  }
  return hex;
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
  if (identity_.llamacpp) return sse(type, fmt::format("{{\"type\":\"{}\",{}}}", type, fields));
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

std::string ResponsesEvents::llamacpp_response(const ResponseTotals& t) const {
  return fmt::format(
      R"({{"id":{},"object":"response","created_at":{},"status":"completed","model":{},"output":{},"usage":{{)"
      R"("input_tokens":{},"output_tokens":{},"total_tokens":{},"input_tokens_details":{{"cached_tokens":{}}}}}}})",
      json_quote(identity_.id), identity_.created, json_quote(identity_.model), join(output_), t.prompt_tokens,
      t.completion_tokens, t.prompt_tokens + t.completion_tokens, t.cached_prompt_tokens);
}

std::string ResponsesEvents::start() {
  const std::string response =
      identity_.llamacpp
          ? fmt::format(R"({{"id":{},"object":"response","status":"in_progress"}})", json_quote(identity_.id))
          : response_object("in_progress", nullptr);
  std::string out = event("response.created", "\"response\":" + response);
  out += event("response.in_progress", "\"response\":" + response);
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
    if (identity_.llamacpp) {
      std::string out = event(
          "response.output_item.added",
          fmt::format(R"("item":{{"content":[],"id":{},"role":"assistant","status":"in_progress","type":"message"}})",
                      json_quote(item_id_)));
      out += event("response.content_part.added",
                   fmt::format(R"("item_id":{},"part":{{"type":"output_text","text":""}})", json_quote(item_id_)));
      return out;
    }
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
  if (identity_.llamacpp && !reasoning) {
    const std::string id = json_quote(item_id_);
    const std::string part = fmt::format(R"({{"type":"output_text","annotations":[],"logprobs":[],"text":{}}})", text);
    const std::string item =
        fmt::format(R"({{"type":"message","status":"completed","id":{},"content":[{}],"role":"assistant"}})", id, part);
    std::string out = event("response.output_text.done", fmt::format(R"("item_id":{},"text":{})", id, text));
    out += event("response.content_part.done", fmt::format(R"("item_id":{},"part":{})", id, part));
    out += event("response.output_item.done", "\"item\":" + item);
    output_.push_back(item);
    body_output_.push_back(fmt::format(
        R"({{"content":[{}],"id":{},"role":"assistant","status":"completed","type":"message"}})", part, id));
    open_.reset();
    return out;
  }
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
  body_output_.push_back(item);
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
  if (identity_.llamacpp && kind != OutputKind::kReasoning) {
    return out + event("response.output_text.delta",
                       fmt::format(R"("item_id":{},"delta":{})", json_quote(item_id_), json_quote(text)));
  }
  out += event(kind == OutputKind::kReasoning ? "response.reasoning_text.delta" : "response.output_text.delta",
               fmt::format("\"item_id\":{},\"output_index\":{},\"content_index\":0,\"delta\":{}", json_quote(item_id_),
                           output_.size(), json_quote(text)));
  return out;
}

void ResponsesEvents::expect_call(std::string name, int held_back) {
  call_name_ = std::move(name);
  call_held_back_ = identity_.llamacpp ? held_back : 0;
  call_hex_ = call_hex(identity_.id);
}

std::string ResponsesEvents::call_item(std::string_view status) const {
  if (identity_.llamacpp && status == "in_progress") {
    return fmt::format(R"({{"id":"fc_{}","arguments":"","call_id":"call_{}","name":{},"type":"function_call",)"
                       R"("status":"in_progress"}})",
                       call_hex_, call_hex_, json_quote(*call_name_));
  }
  return fmt::format(R"({{"id":"fc_{}","type":"function_call","status":"{}","arguments":{},"call_id":"call_{}",)"
                     R"("name":{}}})",
                     call_hex_, status, json_quote(status == "in_progress" ? std::string() : call_arguments_),
                     call_hex_, json_quote(*call_name_));
}

std::string ResponsesEvents::call_delta(std::string_view text, int tokens) {
  call_tokens_ += tokens;
  call_arguments_ += text;
  call_unsent_ += text;
  // llama.cpp: nothing until the name is parsed, and nothing at all when the call ended before it.
  if (!call_open_ && call_tokens_ <= call_held_back_) return {};
  std::string out;
  const std::size_t n = output_.size();
  if (!call_open_) {
    call_open_ = true;
    out += identity_.llamacpp ? event("response.output_item.added", "\"item\":" + call_item("in_progress"))
                              : event("response.output_item.added",
                                      fmt::format("\"output_index\":{},\"item\":{}", n, call_item("in_progress")));
  }
  const std::string id = fmt::format("\"fc_{}\"", call_hex_);
  out += identity_.llamacpp
             ? event("response.function_call_arguments.delta",
                     fmt::format(R"("delta":{},"item_id":{})", json_quote(call_unsent_), id))
             : event("response.function_call_arguments.delta",
                     fmt::format(R"("item_id":{},"output_index":{},"delta":{})", id, n, json_quote(call_unsent_)));
  call_unsent_.clear();
  return out;
}

std::string ResponsesEvents::close_call() {
  if (!call_name_) return {};
  if (!call_open_) {  // cut before the name: llama.cpp's body says the text; its stream said nothing
    if (!call_arguments_.empty() && identity_.llamacpp) {
      body_output_.push_back(fmt::format(
          R"({{"content":[{{"type":"output_text","annotations":[],"logprobs":[],"text":{}}}],"id":"msg_{}","role":"assistant",)"
          R"("status":"completed","type":"message"}})",
          json_quote(call_arguments_), call_hex_));
    }
    call_name_.reset();
    return {};
  }
  const std::string item = call_item("completed");
  const std::size_t n = output_.size();
  std::string out;
  if (identity_.llamacpp) {
    out = event("response.output_item.done", "\"item\":" + item);
  } else {
    const std::string id = fmt::format("\"fc_{}\"", call_hex_);
    out = event("response.function_call_arguments.done",
                fmt::format(R"("item_id":{},"output_index":{},"name":{},"arguments":{})", id, n,
                            json_quote(*call_name_), json_quote(call_arguments_)));
    out += event("response.output_item.done", fmt::format("\"output_index\":{},\"item\":{}", n, item));
  }
  output_.push_back(item);
  body_output_.push_back(item);
  call_name_.reset();
  return out;
}

std::string ResponsesEvents::end(const ResponseTotals& totals) {
  std::string out = close_item() + close_call();
  if (identity_.llamacpp) {  // completed whatever ended it, the timings beside the response
    const std::string timings = totals.timings.empty() ? std::string() : ",\"timings\":" + std::string(totals.timings);
    return out + sse("response.completed", fmt::format(R"({{"type":"response.completed","response":{}{}}})",
                                                       llamacpp_response(totals), timings));
  }
  const bool incomplete = totals.finish && *totals.finish == FinishReason::kLength;
  out += event(incomplete ? "response.incomplete" : "response.completed",
               "\"response\":" + response_object(incomplete ? "incomplete" : "completed", &totals));
  return out;
}

std::string ResponsesEvents::body(const ResponseTotals& totals) {
  close_item();
  close_call();
  if (identity_.llamacpp) {
    return fmt::format(
        R"({{"completed_at":{},"created_at":{},"id":{},"model":{},"object":"response","output":{},"status":"completed",)"
        R"("usage":{{"input_tokens":{},"output_tokens":{},"total_tokens":{},"input_tokens_details":{{"cached_tokens":{}}}}}}})",
        identity_.created, identity_.created, json_quote(identity_.id), json_quote(identity_.model), join(body_output_),
        totals.prompt_tokens, totals.completion_tokens, totals.prompt_tokens + totals.completion_tokens,
        totals.cached_prompt_tokens);
  }
  const bool incomplete = totals.finish && *totals.finish == FinishReason::kLength;
  return response_object(incomplete ? "incomplete" : "completed", &totals);
}

// ---- Anthropic Messages ----

std::string MessagesEvents::usage(int prompt_tokens, int cached, int output_tokens) const {
  if (identity_.llamacpp) {
    return fmt::format(R"({{"cache_read_input_tokens":{},"input_tokens":{},"output_tokens":{}}})", cached,
                       prompt_tokens - cached, output_tokens);
  }
  return fmt::format(R"({{"input_tokens":{},"cache_read_input_tokens":{},"output_tokens":{}}})", prompt_tokens - cached,
                     cached, output_tokens);
}

std::string MessagesEvents::start(int prompt_tokens, int cached) {
  started_ = true;
  std::string out = sse(
      "message_start",
      fmt::format("{{\"type\":\"message_start\",\"message\":{{\"id\":{},\"type\":\"message\",\"role\":\"assistant\","
                  "\"content\":[],\"model\":{},\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{}}}}}",
                  json_quote(identity_.id), json_quote(identity_.model), usage(prompt_tokens, cached, 0)));
  if (!identity_.llamacpp) out += sse("ping", R"({"type":"ping"})");
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

void MessagesEvents::expect_call(std::string name, int held_back) {
  call_name_ = std::move(name);
  call_held_back_ = identity_.llamacpp ? held_back : 0;
  call_id_ = "toolu_" + call_hex(identity_.id);
}

std::string MessagesEvents::call_delta(std::string_view text, int tokens, int prompt_tokens, int cached) {
  std::string out = started_ ? std::string() : start(prompt_tokens, cached);
  call_tokens_ += tokens;
  call_input_ += text;
  call_unsent_ += text;
  if (!call_open_ && call_tokens_ <= call_held_back_) return out;  // llama.cpp: not before the name
  if (!call_open_) {
    call_open_ = true;
    ++index_;
    out += sse("content_block_start",
               fmt::format(R"({{"type":"content_block_start","index":{},"content_block":{{"type":"tool_use","id":{},)"
                           R"("name":{},"input":{{}}}}}})",
                           index_, json_quote(call_id_), json_quote(*call_name_)));
  }
  out += sse("content_block_delta",
             fmt::format(R"({{"type":"content_block_delta","index":{},"delta":{{"type":"input_json_delta",)"
                         R"("partial_json":{}}}}})",
                         index_, json_quote(call_unsent_)));
  call_unsent_.clear();
  return out;
}

// The call's block closed (its input whole where the call was, `{}` where the length limit cut it);
// a call cut before its name is its text instead, as llama.cpp's other APIs write it.
std::string MessagesEvents::close_call(bool complete) {
  if (!call_name_) return {};
  std::string out;
  if (call_open_) {
    content_.push_back(fmt::format(R"({{"type":"tool_use","id":{},"name":{},"input":{}}})", json_quote(call_id_),
                                   json_quote(*call_name_), complete ? call_input_ : std::string("{}")));
    out = sse("content_block_stop", fmt::format(R"({{"type":"content_block_stop","index":{}}})", index_));
    called_ = true;
  } else if (!call_input_.empty()) {
    content_.push_back(fmt::format(R"({{"type":"text","text":{}}})", json_quote(call_input_)));
  }
  call_name_.reset();
  return out;
}

const char* MessagesEvents::stop_reason(std::optional<FinishReason> finish) const {
  if (called_ && !(finish && *finish == FinishReason::kLength)) return "tool_use";
  return anthropic_stop_reason(finish);
}

std::string MessagesEvents::end(const ResponseTotals& t) {
  std::string out = started_ ? std::string() : start(t.prompt_tokens, t.cached_prompt_tokens);
  out += close_block();
  out += close_call(!(t.finish && *t.finish == FinishReason::kLength));
  out += sse("message_delta", fmt::format("{{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{}\","
                                          "\"stop_sequence\":null}},\"usage\":{{\"output_tokens\":{}}}}}",
                                          stop_reason(t.finish), t.completion_tokens));
  out += sse("message_stop", R"({"type":"message_stop"})");
  return out;
}

std::string MessagesEvents::body(const ResponseTotals& t) {
  close_block();
  close_call(!(t.finish && *t.finish == FinishReason::kLength));
  return fmt::format(
      "{{\"id\":{},\"type\":\"message\",\"role\":\"assistant\",\"content\":{},\"model\":{},\"stop_reason\":\"{}\","
      "\"stop_sequence\":null,\"usage\":{}}}",
      json_quote(identity_.id), join(content_), json_quote(identity_.model), stop_reason(t.finish),
      usage(t.prompt_tokens, t.cached_prompt_tokens, t.completion_tokens));
}

std::string render_messages_error(std::string_view type, std::string_view message) {
  return fmt::format(R"({{"type":"error","error":{{"type":{},"message":{}}}}})", json_quote(type), json_quote(message));
}

}  // namespace mpo::sim
