// ResponseBuilder's llama.cpp chunks (`simulate --imitate llamacpp`), as llama.cpp b10309 streams
// chat and completions (tests/fixtures/llamacpp/llamacpp_b10309_chat_stream.http,
// llamacpp_b10309_chat_stream_n2.http, llamacpp_b10309_completions_stream_n2.http, and the real
// server asked without stream_options):
//   chat:        {"choices":[{"finish_reason":null,"index":0,"delta":{"content":" a"}}],"created":..,
//                "id":"chatcmpl-..","model":..,"system_fingerprint":"b10309-82bb485","object":"chat.completion.chunk"}
//                the role chunk's content null, sent with the first token; the finish in a chunk of
//                its own with an empty delta, carrying `timings`, or, when usage was asked for,
//                followed by a `"choices":[]` chunk with `usage` and `timings`: one of each a choice.
//   completions: {"choices":[{"text":" a","index":0,"logprobs":null,"finish_reason":null}],"created":..,
//                "model":..,"system_fingerprint":..,"object":"text_completion","id":..}; the finish in a
//                chunk of its own with text "", carrying `usage` (asked for or not) before `id` and
//                `timings` after it.
// Usage counts the choice's own tokens: `completion_tokens`, `prompt_tokens`, `total_tokens`,
// `prompt_tokens_details.cached_tokens`, in that order.
// And its whole bodies, not streamed (llamacpp_b10309_chat_nostream_n3.http,
// llamacpp_b10309_completions_nostream_n2.http):
//   {"choices":[..],"created":..,"model":..,"system_fingerprint":..,"object":"chat.completion"
//   (or "text_completion"),"usage":..,"id":..,"timings":..}, a chat choice
//   {"finish_reason":..,"index":..,"message":{"role":"assistant","content":..}}, a completions one
//   {"text":..,"index":..,"logprobs":null,"finish_reason":..}. With several choices the usage and
//   the timings are the first choice's alone (measured: three choices of 7, 3 and 2 tokens, usage
//   7, `llamacpp:tokens_predicted_total` up by 12).
// A forced tool call (llamacpp_b10309_chat_stream_tool_call.http, _usage.http, nostream): nothing
// while the tokens before the function's name come (b10309 holds back `{"name": "get_weather",
// "parameters": `, 13 of LLaMA-2's tokens: llamacpp_tokens_before_call), then the call's
// head {"index":0,"id":<32 characters>,"type":"function","function":{"name":..,"arguments":<so far>}},
// then each piece of the arguments alone, the finish ("tool_calls") in a chunk of its own; the body's
// message {"role":"assistant","content":"","tool_calls":[{"type":"function","function":{..},"id":..}]}.
// The arguments are the simulator's own (`{"query": "..."}`), the held-back tokens' text among them.
// Not captured, so not imitated: where its message puts `reasoning_content` (after `content` here).
#include <fmt/format.h>

#include "core/json.hpp"
#include "sim/openai_api.hpp"

namespace mpo::sim {
namespace {

constexpr std::string_view kFingerprint = "b10309-82bb485";

}  // namespace

std::string ResponseBuilder::llamacpp_event(std::string_view choice, std::string_view usage,
                                            std::string_view timings) const {
  const std::string usage_member = usage.empty() ? std::string() : fmt::format(",\"usage\":{}", usage);
  const std::string timings_member = timings.empty() ? std::string() : fmt::format(",\"timings\":{}", timings);
  if (req_.endpoint == Endpoint::kCompletions) {
    return fmt::format(
        "data: {{\"choices\":[{}],\"created\":{},\"model\":{},\"system_fingerprint\":\"{}\",\"object\":\"text_"
        "completion\"{},\"id\":{}{}}}\n\n",
        choice, opts_.created, json_quote(opts_.model), kFingerprint, usage_member, json_quote(opts_.id),
        timings_member);
  }
  return fmt::format(
      "data: {{\"choices\":[{}],\"created\":{},\"id\":{},\"model\":{},\"system_fingerprint\":\"{}\",\"object\":"
      "\"chat.completion.chunk\"{}{}}}\n\n",
      choice, opts_.created, json_quote(opts_.id), json_quote(opts_.model), kFingerprint, usage_member, timings_member);
}

std::string ResponseBuilder::llamacpp_chunk(Kind kind, std::string_view text) const {
  if (req_.endpoint == Endpoint::kCompletions) {
    return llamacpp_event(fmt::format(R"({{"text":{},"index":{},"logprobs":null,"finish_reason":null}})",
                                      json_quote(text), opts_.choice));
  }
  return llamacpp_event(fmt::format(R"({{"finish_reason":null,"index":{},"delta":{{"{}":{}}}}})", opts_.choice,
                                    kind == Kind::kReasoning ? "reasoning_content" : "content", json_quote(text)));
}

std::string ResponseBuilder::llamacpp_tool_id() const {
  // b10309's ids are 32 random letters and digits: the response id's hex digits (a UUID's), reversed.
  std::string id;
  const std::string_view uuid = std::string_view(opts_.id).substr(opts_.id.find('-') + 1);
  for (auto c = uuid.rbegin(); c != uuid.rend(); ++c) {
    if (*c != '-') id.push_back(*c);
  }
  return id;
}

std::string ResponseBuilder::llamacpp_tool_chunk(std::string_view text, int tokens, bool last) {
  if (tool_tokens_ == 0) tool_unsent_ = kToolArgumentsOpen;
  tool_tokens_ += tokens;
  tool_unsent_ += text;
  if (last) tool_unsent_ += kToolArgumentsClose;
  // Nothing until the name is parsed, and nothing at all of a call cut before it (b10309's
  // llamacpp_b10309_chat_stream_tool_call_cut_before_name.http: the finish chunk alone).
  if (!tool_head_sent_ && tool_tokens_ <= llamacpp_tokens_before_call(*req_.tool_name)) return {};
  const std::string call =
      tool_head_sent_
          ? fmt::format(R"({{"index":0,"function":{{"arguments":{}}}}})", json_quote(tool_unsent_))
          : fmt::format(R"({{"index":0,"id":{},"type":"function","function":{{"name":{},"arguments":{}}}}})",
                        json_quote(llamacpp_tool_id()), json_quote(*req_.tool_name), json_quote(tool_unsent_));
  tool_head_sent_ = true;
  tool_unsent_.clear();
  return llamacpp_event(
      fmt::format(R"({{"finish_reason":null,"index":{},"delta":{{"tool_calls":[{}]}}}})", opts_.choice, call));
}

std::string ResponseBuilder::llamacpp_usage(int cached) const {
  return fmt::format(
      R"({{"completion_tokens":{},"prompt_tokens":{},"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{}}}}})",
      completion_tokens_, prompt_tokens_, prompt_tokens_ + completion_tokens_, cached);
}

std::string ResponseBuilder::choice_end(int cached) {
  if (!opts_.llamacpp || responses_ || messages_) return {};
  const char* fin = finish_string();
  const std::string fin_json = fin ? json_quote(fin) : "null";
  if (req_.endpoint == Endpoint::kCompletions) {
    return llamacpp_event(
        fmt::format(R"({{"text":"","index":{},"logprobs":null,"finish_reason":{}}})", opts_.choice, fin_json),
        llamacpp_usage(cached), timings_);
  }
  std::string out =
      llamacpp_event(fmt::format(R"({{"finish_reason":{},"index":{},"delta":{{}}}})", fin_json, opts_.choice), {},
                     req_.include_usage ? std::string_view() : std::string_view(timings_));
  if (req_.include_usage) out += llamacpp_event({}, llamacpp_usage(cached), timings_);
  return out;
}

std::string ResponseBuilder::llamacpp_choice_json() const {
  const char* fin = finish_string();
  const std::string fin_json = fin ? json_quote(fin) : "null";
  if (req_.endpoint == Endpoint::kCompletions) {
    return fmt::format(R"({{"text":{},"index":{},"logprobs":null,"finish_reason":{}}})", json_quote(content_),
                       opts_.choice, fin_json);
  }
  std::string message;
  if (req_.tool_name && completion_tokens_ <= llamacpp_tokens_before_call(*req_.tool_name)) {
    // Cut before the name: the text so far is the message's content (..._nostream_tool_call_cut_before_name.http).
    message =
        fmt::format(R"({{"role":"assistant","content":{}}})", json_quote(std::string(kToolArgumentsOpen) + tool_args_));
  } else if (req_.tool_name) {
    message = fmt::format(
        R"({{"role":"assistant","content":"","tool_calls":[{{"type":"function","function":{{"name":{},"arguments":{}}},"id":{}}}]}})",
        json_quote(*req_.tool_name), json_quote(tool_arguments()), json_quote(llamacpp_tool_id()));
  } else {
    message = fmt::format(R"({{"role":"assistant","content":{}{}}})", json_quote(content_),
                          reasoning_.empty() ? std::string() : ",\"reasoning_content\":" + json_quote(reasoning_));
  }
  return fmt::format(R"({{"finish_reason":{},"index":{},"message":{}}})", fin_json, opts_.choice, message);
}

std::string ResponseBuilder::llamacpp_body(int cached, std::span<const ResponseBuilder* const> others) const {
  std::string choices = llamacpp_choice_json();
  for (const ResponseBuilder* b : others) {
    choices += ',';
    choices += b->llamacpp_choice_json();
  }
  return fmt::format(
      R"({{"choices":[{}],"created":{},"model":{},"system_fingerprint":"{}","object":"{}","usage":{},"id":{}{}}})",
      choices, opts_.created, json_quote(opts_.model), kFingerprint,
      req_.endpoint == Endpoint::kCompletions ? "text_completion" : "chat.completion", llamacpp_usage(cached),
      json_quote(opts_.id), timings_.empty() ? std::string() : ",\"timings\":" + timings_);
}

}  // namespace mpo::sim
