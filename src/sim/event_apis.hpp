// The simulator's Responses API (`/v1/responses`) and Anthropic Messages API (`/v1/messages`)
// output, pure: streamed events and whole bodies, in two dialects. The APIs' references' (event
// names, field names, the order of events; OpenAI's `sequence_number` and `output_index`,
// `response.incomplete` at the length limit, Anthropic's `ping`), and, with `--imitate llamacpp`,
// llama.cpp b10309's as captured (tests/fixtures/llamacpp/llamacpp_b10309_{responses,messages}_*):
// its members in its order, no sequence numbers, output indexes or ping, `response.completed`
// whatever ended the response, with its `timings` beside the response. A forced tool call is a
// function_call item on the Responses API (b10309's as captured: llamacpp_b10309_responses_*tool_call*);
// on the Messages API a tool_use block in Anthropic's shape (b10309's were not captured).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.hpp"

namespace mpo::sim {

// What a stream of these APIs generates, in the order the engine emits it.
enum class OutputKind { kReasoning, kContent, kTool };

// What the end of a response states.
struct ResponseTotals {
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int completion_tokens = 0;
  int reasoning_tokens = 0;
  std::optional<FinishReason> finish;
  std::string_view timings;  // llama.cpp's `timings` object (its dialect, streamed: on response.completed)
};

// One response's identity, as the builder was given it.
struct ResponseIdentity {
  std::string id;  // "resp_..." / "msg_..."
  std::int64_t created = 0;
  std::string model;
  bool llamacpp = false;  // llama.cpp b10309's dialect
};

// Responses API: response.created and response.in_progress; for each run of output of one kind an
// output item (a message with output_text, or a reasoning item with reasoning_text) opened,
// streamed as deltas and closed; then response.completed, or response.incomplete
// (incomplete_details.reason "max_output_tokens") when the length limit ended it.
class ResponsesEvents {
 public:
  explicit ResponsesEvents(ResponseIdentity identity) : identity_(std::move(identity)) {}
  std::string start();
  std::string delta(OutputKind kind, std::string_view text);
  // A forced call of `name` (tool_choice "required", or naming the function): the output is one
  // function_call item. llama.cpp sends nothing of it until `held_back` tokens have come (the
  // tokens before the function's name); a call cut within them has no item (its text is the whole
  // body's message instead, as b10309's). The reference's dialect opens the item at once.
  void expect_call(std::string name, int held_back);
  // The call's next `tokens` tokens, `text` its arguments' next piece.
  std::string call_delta(std::string_view text, int tokens);
  std::string end(const ResponseTotals& totals);
  // The whole response object (the body of a non-streamed request), after the last delta.
  std::string body(const ResponseTotals& totals);

 private:
  std::string event(std::string_view type, std::string_view fields);
  std::string open_item(OutputKind kind);
  std::string close_item();
  std::string response_object(std::string_view status, const ResponseTotals* totals) const;
  std::string llamacpp_response(const ResponseTotals& totals) const;
  std::string call_item(std::string_view status) const;
  std::string close_call();

  ResponseIdentity identity_;
  int sequence_ = 0;
  std::optional<OutputKind> open_;
  std::string item_id_, item_text_;
  std::vector<std::string> output_;       // closed items, as JSON
  std::vector<std::string> body_output_;  // llama.cpp's: closed items as its whole body writes them
  // The forced call: its function, the tokens llama.cpp holds back, the tokens so far, whether its
  // item is open, its arguments so far and those not yet sent.
  std::optional<std::string> call_name_;
  int call_held_back_ = 0, call_tokens_ = 0;
  bool call_open_ = false;
  std::string call_hex_, call_arguments_, call_unsent_;
};

// Anthropic Messages: message_start (input usage, with the prefix-cache hit as
// cache_read_input_tokens), a ping, one content block per run of output of one kind (thinking,
// text), message_delta (stop_reason, output usage), message_stop.
class MessagesEvents {
 public:
  explicit MessagesEvents(ResponseIdentity identity) : identity_(std::move(identity)) {}
  // message_start needs the prefix-cache hit, known once the request was scheduled: it is sent with
  // the first delta (or at the end).
  std::string delta(OutputKind kind, std::string_view text, int prompt_tokens, int cached_prompt_tokens);
  // A forced call of `name` (tool_choice {"type":"any"} or {"type":"tool","name":..}): one tool_use
  // block, its input as input_json_delta pieces. With llama.cpp's dialect nothing until `held_back`
  // tokens have come, as its chat and Responses APIs do (its Messages tool_use was not captured).
  void expect_call(std::string name, int held_back);
  std::string call_delta(std::string_view text, int tokens, int prompt_tokens, int cached_prompt_tokens);
  std::string end(const ResponseTotals& totals);
  std::string body(const ResponseTotals& totals);

 private:
  std::string start(int prompt_tokens, int cached_prompt_tokens);
  std::string close_block();
  std::string close_call(bool complete);
  const char* stop_reason(std::optional<FinishReason> finish) const;
  std::string usage(int prompt_tokens, int cached_prompt_tokens, int output_tokens) const;

  ResponseIdentity identity_;
  bool started_ = false;
  std::optional<OutputKind> open_;
  int index_ = -1;
  std::string block_text_;
  std::vector<std::string> content_;  // closed blocks, as JSON
  // The forced call, as in ResponsesEvents.
  std::optional<std::string> call_name_;
  int call_held_back_ = 0, call_tokens_ = 0;
  bool call_open_ = false, called_ = false;
  std::string call_id_, call_input_, call_unsent_;
};

// Anthropic's error body: {"type":"error","error":{"type":..,"message":..}}.
std::string render_messages_error(std::string_view type, std::string_view message);

}  // namespace mpo::sim
