// The implementation of sim/openai_api.hpp. The simulator's OpenAI-compatible surface, pure:
// request bodies in, response bodies and SSE events out, shaped as vLLM's OpenAI server shapes them
// (chat, completions); the Responses and Anthropic Messages APIs are rendered by sim/event_apis.
#include "sim/openai_api.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>

#include "core/json.hpp"

namespace mpo::sim {
namespace {

namespace json = boost::json;

// A refused request body: the parameter it is about is the OpenAI error's `param`.
Error bad(std::string_view param, std::string message) {
  Error e = make_error(errc::kSimRequest, std::move(message));
  e.subject = std::string(param);
  return e;
}

Result<std::string> message_text(const json::value& content) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return std::string(content.get_string());
  if (!content.is_array()) return bad("messages", "message content must be a string or an array of parts");
  std::string out;
  for (const auto& part : content.get_array()) {
    if (!part.is_object()) return bad("messages", "each content part must be an object");
    const auto& po = part.get_object();
    const auto type = json_string(po, "type").value_or("text");
    std::string piece;
    if (type == "tool_use") {  // Anthropic: a tool call, as a template renders it (name and input)
      const auto* input = po.if_contains("input");
      piece = fmt::format("{} {}", json_string(po, "name").value_or(""),
                          input != nullptr ? json::serialize(*input) : std::string("{}"));
    } else if (type == "tool_result") {  // Anthropic: a tool's result, a string or text blocks
      const auto* result = po.if_contains("content");
      auto text = result != nullptr ? message_text(*result) : Result<std::string>(std::string());
      if (!text) return text.error();
      piece = std::move(*text);
    } else {
      const auto text = json_string(po, "text");
      if (!text) {
        return bad("messages",
                   "only content parts of type 'text', 'tool_use' and 'tool_result' are supported by the simulator");
      }
      piece = std::string(*text);
    }
    if (!out.empty()) out.push_back('\n');
    out += piece;
  }
  return out;
}

// An OpenAI chat message's tool calls, as a template renders them (each call's name and arguments).
std::string tool_calls_text(const json::object& message) {
  std::string out;
  const auto* calls = json_array(message, "tool_calls");
  if (calls == nullptr) return out;
  for (const auto& c : *calls) {
    if (!c.is_object()) continue;
    if (const auto* fn = json_object(c.get_object(), "function")) {
      if (!out.empty()) out.push_back('\n');
      out += fmt::format("{} {}", json_string(*fn, "name").value_or(""), json_string(*fn, "arguments").value_or(""));
    }
  }
  return out;
}

// A conversation that opens with the system prompt under `key` (Anthropic's `system`, the Responses
// API's `instructions`: a string or a list of text blocks), or with nothing when there is none.
Result<std::vector<ChatMessage>> open_with_system(const json::object& o, std::string_view key) {
  std::vector<ChatMessage> chat;
  const auto* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) return chat;
  auto text = message_text(*v);
  if (!text) return bad(key, fmt::format("'{}' must be a string or a list of text blocks.", key));
  chat.push_back(ChatMessage{"system", std::move(*text)});
  return chat;
}

// A list of {role, content} messages under `key`, each content a string or text parts.
Result<std::vector<ChatMessage>> role_messages(const json::array& items, std::string_view key) {
  std::vector<ChatMessage> out;
  for (const auto& m : items) {
    if (!m.is_object()) return bad(key, "Each message must be an object.");
    // The Responses API's tool items: a call the model made and the result sent back.
    const auto type = json_string(m.get_object(), "type").value_or("message");
    if (type == "function_call") {
      out.push_back({"assistant", fmt::format("{} {}", json_string(m.get_object(), "name").value_or(""),
                                              json_string(m.get_object(), "arguments").value_or(""))});
      continue;
    }
    if (type == "function_call_output") {
      out.push_back({"tool", std::string(json_string(m.get_object(), "output").value_or(""))});
      continue;
    }
    const auto role = json_string(m.get_object(), "role");
    if (!role) return bad(key, "Each message needs a string 'role'.");
    const auto* content = m.get_object().if_contains("content");
    auto text = content != nullptr ? message_text(*content) : Result<std::string>(std::string());
    if (!text) return bad(key, text.error().message);
    out.push_back({std::string(*role), std::move(*text)});
  }
  return out;
}

// Responses API: `input` is a string (one user message) or a list of messages; `instructions`
// is a system message before them.
Result<std::vector<ChatMessage>> responses_input(const json::object& o) {
  auto chat = open_with_system(o, "instructions");
  if (!chat) return chat.error();
  const auto* input = o.if_contains("input");
  if (input == nullptr || input->is_null()) return bad("input", "Field required: 'input'.");
  if (input->is_string()) {
    chat->push_back({"user", std::string(input->get_string())});
  } else if (input->is_array() && !input->get_array().empty()) {
    auto more = role_messages(input->get_array(), "input");
    if (!more) return more.error();
    chat->insert(chat->end(), more->begin(), more->end());
  } else {
    return bad("input", "'input' must be a string or a non-empty list of messages.");
  }
  return chat;
}

// Anthropic Messages: `system` then `messages`.
Result<std::vector<ChatMessage>> anthropic_messages(const json::object& o) {
  auto chat = open_with_system(o, "system");
  if (!chat) return chat.error();
  const auto* msgs = json_array(o, "messages");
  if (msgs == nullptr || msgs->empty()) return bad("messages", "messages: Field required (a non-empty list).");
  auto more = role_messages(*msgs, "messages");
  if (!more) return more.error();
  chat->insert(chat->end(), more->begin(), more->end());
  return chat;
}

}  // namespace

namespace {

// The request's options (model, stream, stream_options, the max-token key of its API, n,
// ignore_eos, seed, stop), as vLLM's OpenAI server validates them.
Status read_options(const json::object& o, Endpoint endpoint, CompletionRequest& r) {
  if (const auto* m = o.if_contains("model"); m != nullptr && !m->is_null()) {
    if (!m->is_string()) return bad("model", "'model' must be a string.");
    r.model = std::string(m->get_string());
  }
  if (const auto* s = o.if_contains("stream"); s != nullptr && !s->is_null()) {
    if (!s->is_bool()) return bad("stream", "'stream' must be a boolean.");
    r.stream = s->get_bool();
  }
  if (const auto* so = o.if_contains("stream_options"); so != nullptr && !so->is_null()) {
    if (!so->is_object()) return bad("stream_options", "'stream_options' must be an object.");
    if (!r.stream) return bad("stream_options", "Stream options can only be defined when `stream=True`.");
    r.include_usage = json_bool(so->get_object(), "include_usage").value_or(false);
    r.continuous_usage = json_bool(so->get_object(), "continuous_usage_stats").value_or(false);
  }
  const bool responses = endpoint == Endpoint::kResponses;
  const bool messages = endpoint == Endpoint::kMessages;
  const auto max_keys = responses  ? std::vector<const char*>{"max_output_tokens"}
                        : messages ? std::vector<const char*>{"max_tokens"}
                                   : std::vector<const char*>{"max_completion_tokens", "max_tokens"};
  for (const char* key : max_keys) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || v->is_null() || r.max_tokens) continue;
    const auto n = json_int(o, key);
    if (!n) return bad(key, fmt::format("'{}' must be an integer.", key));
    if (*n < 1 || *n > 100'000'000) return bad(key, fmt::format("{} must be at least 1, got {}.", key, *n));
    r.max_tokens = static_cast<int>(*n);
  }
  if (messages && !r.max_tokens) return bad("max_tokens", "max_tokens: Field required");
  if (const auto* v = o.if_contains("n"); v != nullptr && !v->is_null()) {
    const auto n = json_int(o, "n");
    if (!n) return bad("n", "'n' must be an integer.");
    if (responses || messages) {
      if (*n != 1) return bad("n", "This API has no `n`: one response a request.");
    } else if (*n < 1 || *n > kMaxChoices) {
      return bad("n", fmt::format("n must be between 1 and {} (the simulator's limit), got {}.", kMaxChoices, *n));
    }
    r.n = static_cast<int>(*n);
  }
  if (const auto* v = o.if_contains("ignore_eos"); v != nullptr && !v->is_null()) {
    if (!v->is_bool()) return bad("ignore_eos", "'ignore_eos' must be a boolean.");
    r.ignore_eos = v->get_bool();
  }
  if (const auto* v = o.if_contains("seed"); v != nullptr && !v->is_null()) {
    const auto n = json_int(o, "seed");
    if (!n) return bad("seed", "'seed' must be an integer.");
    r.seed = static_cast<std::uint64_t>(*n);
  }
  if (const auto* v = o.if_contains(messages ? "stop_sequences" : "stop"); v != nullptr && !v->is_null()) {
    if (v->is_string()) {
      r.stop.emplace_back(v->get_string());
    } else if (v->is_array()) {
      for (const auto& s : v->get_array()) {
        if (!s.is_string()) return bad("stop", "'stop' must be a string or an array of strings.");
        r.stop.emplace_back(s.get_string());
      }
    } else {
      return bad("stop", "'stop' must be a string or an array of strings.");
    }
  }
  return Ok{};
}

// Chat completions: the messages, each a role and its text.
Status read_chat_messages(const json::object& o, CompletionRequest& r) {
  const auto* msgs = json_array(o, "messages");
  if (msgs == nullptr) return bad("messages", "Field required: 'messages' must be an array of messages.");
  if (msgs->empty()) return bad("messages", "'messages' must not be empty.");
  std::vector<ChatMessage> chat;
  for (const auto& m : *msgs) {
    if (!m.is_object()) return bad("messages", "Each message must be an object.");
    const auto role = json_string(m.get_object(), "role");
    if (!role) return bad("messages", "Each message needs a string 'role'.");
    const auto* content = m.get_object().if_contains("content");
    auto text = content != nullptr ? message_text(*content) : Result<std::string>(std::string());
    if (!text) return text.error();
    if (const std::string calls = tool_calls_text(m.get_object()); !calls.empty()) {
      *text += (text->empty() ? "" : "\n") + calls;
    }
    chat.push_back({std::string(*role), std::move(*text)});
  }
  r.prompt = tokenize_chat(chat);
  return Ok{};
}

// A function's name as chat writes it ({"function":{"name":..}}) or the Responses API ({"name":..}).
std::string function_name(const json::value& v) {
  if (!v.is_object()) return {};
  const auto& o = v.get_object();
  if (const auto* fn = json_object(o, "function")) return std::string(json_string(*fn, "name").value_or(""));
  return std::string(json_string(o, "name").value_or(""));
}

// A tool call the request requires (tool_choice "required" or a named function; chat's shapes and
// the Responses API's): which tool.
Status read_tool_choice(const json::object& o, CompletionRequest& r) {
  const auto* tools = json_array(o, "tools");
  const auto* choice = o.if_contains("tool_choice");
  // An object names a function (chat, Responses, Anthropic's {"type":"tool"}) or asks for any
  // (Anthropic's {"type":"any"}); Anthropic's {"type":"auto"} and {"type":"none"} require nothing.
  const auto object_type = choice != nullptr && choice->is_object() ? json_string(choice->get_object(), "type")
                                                                    : std::optional<std::string_view>();
  const bool required = choice != nullptr && ((choice->is_string() && choice->get_string() == "required") ||
                                              (choice->is_object() && object_type != "auto" && object_type != "none"));
  if (required) {
    if (tools == nullptr || tools->empty()) {
      return bad("tool_choice", "When using `tool_choice`, `tools` must be set.");
    }
    std::string name = function_name(*choice);
    if (name.empty()) name = function_name((*tools)[0]);
    if (name.empty()) return bad("tools", "Each tool needs function.name.");
    r.tool_name = std::move(name);
  }
  return Ok{};
}

// Completions: the prompt, a string, a list of one string, or a list of token ids.
Status read_prompt(const json::object& o, CompletionRequest& r) {
  const auto* p = o.if_contains("prompt");
  if (p == nullptr || p->is_null()) return bad("prompt", "Field required: 'prompt'.");
  if (p->is_string()) {
    tokenize(p->get_string(), r.prompt);
  } else if (p->is_array()) {
    const auto& a = p->get_array();
    if (a.size() == 1 && a[0].is_string()) {
      tokenize(a[0].get_string(), r.prompt);
    } else if (!a.empty() && a[0].is_string()) {
      return bad("prompt", "Only one prompt per request is supported by the simulator.");
    } else {
      for (const auto& t : a) {  // a list of token IDs
        if (!t.is_int64() || t.get_int64() < 0 || t.get_int64() > 0xffffffffLL) {
          return bad("prompt", "'prompt' must be a string, a list of one string, or a list of token IDs.");
        }
        r.prompt.push_back(static_cast<TokenId>(t.get_int64()));
      }
    }
  } else {
    return bad("prompt", "'prompt' must be a string, a list of one string, or a list of token IDs.");
  }
  return Ok{};
}

}  // namespace

Result<CompletionRequest> parse_completion_request(std::string_view body, Endpoint endpoint) {
  auto doc = parse_json(body);
  if (!doc) return bad("", fmt::format("Invalid JSON body: {}", doc.error().message));
  if (!doc->is_object()) return bad("", "The request body must be a JSON object.");
  const json::object& o = doc->get_object();
  CompletionRequest r;
  r.endpoint = endpoint;
  if (auto st = read_options(o, endpoint, r); !st) return st.error();
  if (endpoint == Endpoint::kResponses) {
    auto chat = responses_input(o);
    if (!chat) return chat.error();
    r.prompt = tokenize_chat(*chat);
    if (auto st = read_tool_choice(o, r); !st) return st.error();
    if (const auto* prev = o.if_contains("previous_response_id"); prev != nullptr && !prev->is_null()) {
      if (!prev->is_string() || prev->get_string().empty())
        return bad("previous_response_id", "'previous_response_id' must be a response id.");
      r.previous_response_id = std::string(prev->get_string());
    }
  } else if (endpoint == Endpoint::kMessages) {
    auto chat = anthropic_messages(o);
    if (!chat) return chat.error();
    r.prompt = tokenize_chat(*chat);
    if (auto st = read_tool_choice(o, r); !st) return st.error();
  } else if (endpoint == Endpoint::kChat) {
    if (auto st = read_chat_messages(o, r); !st) return st.error();
    if (auto st = read_tool_choice(o, r); !st) return st.error();
  } else {
    if (auto st = read_prompt(o, r); !st) return st.error();
  }
  return r;
}

std::string render_error(int status, std::string_view type, std::string_view message, std::string_view param) {
  JsonObjectWriter inner;
  inner.field("message", message).field("type", type);
  if (param.empty()) {
    inner.null_field("param");
  } else {
    inner.field("param", param);
  }
  inner.field("code", status);
  JsonObjectWriter outer;
  outer.raw_field("error", std::move(inner).finish());
  return std::move(outer).finish();
}

std::optional<Endpoint> endpoint_of_path(std::string_view path) {
  if (path == "/v1/chat/completions") return Endpoint::kChat;
  if (path == "/v1/completions") return Endpoint::kCompletions;
  if (path == "/v1/responses") return Endpoint::kResponses;
  if (path == "/v1/messages") return Endpoint::kMessages;
  return std::nullopt;
}

std::string_view response_id_prefix(Endpoint endpoint, bool llamacpp) {
  if (llamacpp) return endpoint == Endpoint::kResponses ? "resp_" : "chatcmpl-";
  switch (endpoint) {
    case Endpoint::kChat: return "chatcmpl-";
    case Endpoint::kCompletions: return "cmpl-";
    case Endpoint::kResponses: return "resp_";
    case Endpoint::kMessages: return "msg_";
  }
  return "cmpl-";
}

std::string render_models(std::string_view model, std::int64_t created, std::string_view owned_by, int max_model_len) {
  return fmt::format(
      R"({{"object":"list","data":[{{"id":{},"object":"model","created":{},"owned_by":"{}","root":{},"parent":null,"max_model_len":{}}}]}})",
      json_quote(model), created, owned_by, json_quote(model), max_model_len);
}

std::string render_llamacpp_props(std::string_view model, int slots, int n_ctx) {
  return fmt::format(
      R"({{"default_generation_settings":{{"params":{{}},"n_ctx":{}}},"total_slots":{},"model_alias":{},)"
      R"("model_path":{},"endpoint_slots":true,"endpoint_props":false,"endpoint_metrics":true,)"
      R"("build_info":"modelperfobs-simulate","is_sleeping":false}})",
      n_ctx, slots, json_quote(model), json_quote(model));
}

std::string render_sglang_server_info(std::string_view model, int max_running, std::int64_t kv_tokens) {
  return fmt::format(
      R"({{"model_path":{0},"served_model_name":{0},"max_running_requests":{1},"dp_size":1,"status":"ready",)"
      R"("max_total_num_tokens":{2},"internal_states":[{{"max_running_requests":{1},"dp_size":1,)"
      R"("effective_max_running_requests_per_dp":{1}}}],"version":"modelperfobs-simulate"}})",
      json_quote(model), max_running, kv_tokens);
}

ResponseBuilder::ResponseBuilder(const CompletionRequest& req, Options opts, int prompt_tokens)
    : req_(req), opts_(std::move(opts)), prompt_tokens_(prompt_tokens) {
  const ResponseIdentity identity{opts_.id, opts_.created, opts_.model, opts_.llamacpp};
  if (req_.endpoint == Endpoint::kResponses) responses_.emplace(identity);
  if (responses_ && req_.tool_name)
    responses_->expect_call(*req_.tool_name, llamacpp_tokens_before_call(*req_.tool_name));
  if (req_.endpoint == Endpoint::kMessages) messages_.emplace(identity);
  if (messages_ && req_.tool_name)
    messages_->expect_call(*req_.tool_name, llamacpp_tokens_before_call(*req_.tool_name));
  if (responses_ || messages_) return;  // chunk() writes chat's and completions' events only
  chunk_head_ =
      fmt::format("data: {{\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":{},",
                  json_quote(opts_.id), req_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion",
                  opts_.created, json_quote(opts_.model), opts_.choice);
}

ResponseTotals ResponseBuilder::totals(int cached) const {
  return ResponseTotals{prompt_tokens_, cached, completion_tokens_, reasoning_count_, finish_, timings_};
}

ResponseBuilder::Kind ResponseBuilder::kind_of(int index) const {
  if (req_.tool_name) return Kind::kTool;
  if (req_.endpoint != Endpoint::kCompletions && index < opts_.reasoning_tokens) return Kind::kReasoning;
  return Kind::kContent;
}

const char* ResponseBuilder::finish_string() const {
  if (!finish_) return nullptr;
  // A call cut by max_tokens: llama.cpp b10309 says length (its captures); the vLLM shape keeps
  // tool_calls.
  if (req_.tool_name && *finish_ != FinishReason::kAbort && !(opts_.llamacpp && *finish_ == FinishReason::kLength))
    return "tool_calls";
  switch (*finish_) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
    case FinishReason::kRepetition: return "repetition";
  }
  return nullptr;
}

std::string ResponseBuilder::usage_json(int cached, bool with_details, int others) const {
  JsonObjectWriter u;
  u.field("prompt_tokens", prompt_tokens_)
      .field("total_tokens", prompt_tokens_ + completion_tokens_ + others)
      .field("completion_tokens", completion_tokens_ + others);
  if (with_details) {
    u.raw_field("prompt_tokens_details", std::move(JsonObjectWriter().field("cached_tokens", cached)).finish());
  }
  return std::move(u).finish();
}

std::string ResponseBuilder::stream_start() {
  if (responses_) return responses_->start();
  if (req_.endpoint != Endpoint::kChat) return {};
  if (opts_.llamacpp) {
    return llamacpp_event(fmt::format(
        R"({{"finish_reason":null,"index":{},"delta":{{"role":"assistant","content":null}}}})", opts_.choice));
  }
  const std::string delta =
      req_.tool_name ? R"({"role":"assistant","content":null})" : R"({"role":"assistant","content":""})";
  return fmt::format(
      "data: {{\"id\":{},\"object\":\"chat.completion.chunk\",\"created\":{},\"model\":{},\"choices\":"
      "[{{\"index\":{},\"delta\":{},\"logprobs\":null,\"finish_reason\":null}}]{}}}\n\n",
      json_quote(opts_.id), opts_.created, json_quote(opts_.model), opts_.choice, delta,
      req_.continuous_usage ? ",\"usage\":" + usage_json(0, false) : "");
}

std::string ResponseBuilder::chunk(Kind kind, std::string_view text, bool first_tool, bool last_tool,
                                   const char* finish) const {
  // Appended piece by piece after the head written once: this is the simulator's busiest path.
  std::string out = chunk_head_;
  out.reserve(out.size() + text.size() + 160);
  if (req_.endpoint == Endpoint::kCompletions) {
    out += "\"text\":";
    append_json_string(out, text);
    out += ",\"logprobs\":null,\"finish_reason\":";
  } else {
    out += "\"delta\":";
    if (kind == Kind::kReasoning || kind == Kind::kContent) {
      out += kind == Kind::kReasoning ? "{\"reasoning_content\":" : "{\"content\":";
      append_json_string(out, text);
      out += '}';
    } else {
      std::string args(text);
      if (first_tool) args.insert(0, kToolArgumentsOpen);
      if (last_tool) args += kToolArgumentsClose;
      if (first_tool) {
        out += fmt::format(
            "{{\"tool_calls\":[{{\"index\":0,\"id\":{},\"type\":\"function\",\"function\":{{\"name\":{},"
            "\"arguments\":{}}}}}]}}",
            json_quote("chatcmpl-tool-" + opts_.id.substr(opts_.id.find('-') + 1)), json_quote(*req_.tool_name),
            json_quote(args));
      } else {
        out += fmt::format("{{\"tool_calls\":[{{\"index\":0,\"function\":{{\"arguments\":{}}}}}]}}", json_quote(args));
      }
    }
    out += ",\"logprobs\":null,\"finish_reason\":";
  }
  if (finish != nullptr) {
    append_json_string(out, finish);
  } else {
    out += "null";
  }
  // vLLM adds stop_reason to every completions choice, and to a chat choice that finished.
  if (req_.endpoint == Endpoint::kCompletions || finish != nullptr) out += ",\"stop_reason\":null";
  out += "}]";
  if (req_.continuous_usage) {
    out += ",\"usage\":";
    out += usage_json(0, false);
  }
  out += "}\n\n";
  return out;
}

std::string ResponseBuilder::stream_tokens(std::span<const Emission> group) {
  std::string out;
  std::size_t i = 0;
  while (i < group.size()) {
    const Kind kind = kind_of(group[i].index);
    const bool first_tool = kind == Kind::kTool && group[i].index == 0;
    std::string text;
    std::size_t j = i;
    for (; j < group.size() && kind_of(group[j].index) == kind; ++j) {
      text += group[j].text;
      ++completion_tokens_;
      if (group[j].finish) finish_ = group[j].finish;
    }
    (kind == Kind::kReasoning ? reasoning_ : kind == Kind::kTool ? tool_args_ : content_) += text;
    if (kind == Kind::kReasoning) reasoning_count_ += static_cast<int>(j - i);
    const bool last = j == group.size() && finish_.has_value();
    if ((responses_ || messages_) && kind == Kind::kTool) {
      const std::string piece = fmt::format("{}{}{}", first_tool ? kToolArgumentsOpen : std::string_view(), text,
                                            last ? kToolArgumentsClose : std::string_view());
      out += responses_ ? responses_->call_delta(piece, static_cast<int>(j - i))
                        : messages_->call_delta(piece, static_cast<int>(j - i), prompt_tokens_, cached_prompt_tokens_);
    } else if (responses_) {
      out += responses_->delta(kind, text);
    } else if (messages_) {
      out += messages_->delta(kind, text, prompt_tokens_, cached_prompt_tokens_);
    } else if (opts_.llamacpp) {  // its finish comes in a chunk of its own (choice_end)
      out +=
          kind == Kind::kTool ? llamacpp_tool_chunk(text, static_cast<int>(j - i), last) : llamacpp_chunk(kind, text);
    } else {
      out += chunk(kind, text, first_tool, last && kind == Kind::kTool, last ? finish_string() : nullptr);
    }
    i = j;
  }
  return out;
}

std::string ResponseBuilder::stream_end(int cached) {
  if (responses_) return responses_->end(totals(cached));
  if (messages_) return messages_->end(totals(cached));
  if (opts_.llamacpp) return "data: [DONE]\n\n";  // each choice's usage and timings came with its end
  std::string out;
  if (req_.include_usage) {
    const char* object = req_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion";
    out +=
        fmt::format("data: {{\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[],\"usage\":{}}}\n\n",
                    json_quote(opts_.id), object, opts_.created, json_quote(opts_.model),
                    usage_json(cached, true, other_choices_tokens_));
  }
  out += "data: [DONE]\n\n";
  return out;
}

Result<std::string> render_tokenize(std::string_view body, int max_model_len) {
  auto doc = parse_json(body);
  if (!doc || !doc->is_object()) return bad("body", "the body must be a JSON object");
  const bool chat = doc->as_object().contains("messages");
  auto req = parse_completion_request(body, chat ? Endpoint::kChat : Endpoint::kCompletions);
  if (!req) return req.error();
  JsonObjectWriter w;
  std::string tokens = "[";
  for (std::size_t i = 0; i < req->prompt.size(); ++i) {
    if (i) tokens += ',';
    tokens += std::to_string(req->prompt[i]);
  }
  tokens += ']';
  w.field("count", static_cast<std::int64_t>(req->prompt.size()))
      .field("max_model_len", max_model_len)
      .raw_field("tokens", tokens);
  return std::move(w).finish();
}

std::string llamacpp_timings(const FinishedRequest& f) {
  const auto ms = [](std::optional<double> from, std::optional<double> to) {  // to the microsecond
    return from && to ? std::round(std::max(0.0, (*to - *from) * 1e6)) / 1000 : 0.0;
  };
  const double prompt_ms = ms(f.scheduled_s, f.first_token_s);
  const double predicted_ms = ms(f.first_token_s, f.last_token_s);
  const int prompt_n = f.prompt_tokens - f.cached_prompt_tokens;
  const auto per_second = [](int n, double t) { return t > 0 ? 1000.0 * n / t : 0.0; };
  JsonObjectWriter t;
  t.field("cache_n", f.cached_prompt_tokens)
      .field("prompt_n", prompt_n)
      .field("prompt_ms", prompt_ms)
      .field("prompt_per_token_ms", prompt_n > 0 ? prompt_ms / prompt_n : 0.0)
      .field("prompt_per_second", per_second(prompt_n, prompt_ms))
      .field("predicted_n", f.completion_tokens)
      .field("predicted_ms", predicted_ms)
      .field("predicted_per_token_ms", f.completion_tokens > 0 ? predicted_ms / f.completion_tokens : 0.0)
      .field("predicted_per_second", per_second(f.completion_tokens, predicted_ms));
  return std::move(t).finish();
}

std::string ResponseBuilder::tool_arguments() const {
  return std::string(kToolArgumentsOpen) + tool_args_ + std::string(kToolArgumentsClose);
}

std::string ResponseBuilder::message_json() const {
  if (req_.tool_name) {
    return fmt::format(
        "{{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{{\"id\":{},\"type\":\"function\","
        "\"function\":{{\"name\":{},\"arguments\":{}}}}}]}}",
        json_quote("chatcmpl-tool-" + opts_.id.substr(opts_.id.find('-') + 1)), json_quote(*req_.tool_name),
        json_quote(tool_arguments()));
  }
  return fmt::format("{{\"role\":\"assistant\",\"content\":{},\"reasoning_content\":{},\"tool_calls\":[]}}",
                     json_quote(content_), reasoning_.empty() ? "null" : json_quote(reasoning_));
}

std::string ResponseBuilder::choice_json() const {
  const char* fin = finish_string();
  const std::string fin_json = fin ? json_quote(fin) : "null";
  if (req_.endpoint == Endpoint::kCompletions) {
    return fmt::format(
        "{{\"index\":{},\"text\":{},\"logprobs\":null,\"finish_reason\":{},\"stop_reason\":null,"
        "\"prompt_logprobs\":null}}",
        opts_.choice, json_quote(content_), fin_json);
  }
  return fmt::format("{{\"index\":{},\"message\":{},\"logprobs\":null,\"finish_reason\":{},\"stop_reason\":null}}",
                     opts_.choice, message_json(), fin_json);
}

std::string ResponseBuilder::full_body(int cached, std::span<const ResponseBuilder* const> others) {
  if (responses_) return responses_->body(totals(cached));
  if (messages_) return messages_->body(totals(cached));
  if (opts_.llamacpp) return llamacpp_body(cached, others);
  std::string choices = choice_json();
  int other_tokens = 0;
  for (const ResponseBuilder* b : others) {
    choices += ',';
    choices += b->choice_json();
    other_tokens += b->completion_tokens();
  }
  const char* object = req_.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion";
  return fmt::format(
      "{{\"id\":{},\"object\":\"{}\",\"created\":{},\"model\":{},\"choices\":[{}],\"usage\":{},"
      "\"prompt_logprobs\":null}}",
      json_quote(opts_.id), object, opts_.created, json_quote(opts_.model), choices,
      usage_json(cached, true, other_tokens));
}

}  // namespace mpo::sim
