// The simulator's OpenAI-compatible surface, pure: request bodies in, response bodies and SSE
// events out, shaped as vLLM's OpenAI server shapes them (chat, completions); the Responses and
// Anthropic Messages APIs are rendered by sim/event_apis.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "sim/engine.hpp"
#include "sim/event_apis.hpp"

namespace mpo::sim {

enum class Endpoint { kChat, kCompletions, kResponses, kMessages };

inline constexpr int kMaxChoices = 128;  // the most `n` a request may ask the simulator for

// The API a path serves (/v1/chat/completions, /v1/completions, /v1/responses, /v1/messages).
std::optional<Endpoint> endpoint_of_path(std::string_view path);
// What the API's response ids begin with: "chatcmpl-", "cmpl-", "resp_", "msg_" (vLLM's and the
// APIs' references); llama.cpp b10309 begins chat's, completions' and Messages' with "chatcmpl-"
// (its captures in tests/fixtures/llamacpp/) and the Responses API's with "resp_".
std::string_view response_id_prefix(Endpoint endpoint, bool llamacpp = false);

struct CompletionRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::optional<std::string> model;  // absent: the served model
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats
  std::optional<int> max_tokens;  // max_completion_tokens or max_tokens
  bool ignore_eos = false;
  std::vector<std::string> stop;
  std::optional<std::uint64_t> seed;
  // Choices asked for (`n`, chat and completions; 1 to kMaxChoices): each its own sequence in the
  // engine, their chunks interleaved by `index`, one usage for all (vLLM's serving_chat: the
  // completion tokens of every choice summed).
  int n = 1;
  std::optional<std::string> tool_name;  // set when tools + tool_choice "required" (or named)
  std::vector<TokenId> prompt;
  // Responses: the stored response this request continues (its conversation goes before `prompt`:
  // sim/response_store.hpp).
  std::optional<std::string> previous_response_id;
};

// Parses and validates a request body. The error's `code` is the OpenAI `param` at fault (or
// empty), its message what vLLM would say; every error here is an HTTP 400. Responses: `input`
// (a string or a list of messages), `instructions`, `max_output_tokens`. Messages: `messages`,
// `system`, `max_tokens` (required, as Anthropic's API requires it), `stop_sequences`.
Result<CompletionRequest> parse_completion_request(std::string_view body, Endpoint endpoint);

// {"error":{"message":..,"type":..,"param":..,"code":status}}
std::string render_error(int status, std::string_view type, std::string_view message, std::string_view param = {});

// llama.cpp's per-request `timings` for a finished request, as its streams end with them (captured:
// tests/fixtures/llamacpp/llamacpp_b10309_chat_stream.http): prompt_n and cache_n (the prompt's
// tokens computed and served from the cache), prompt_ms from the first scheduled step's start to
// the first token, predicted_n and predicted_ms from the first token to the last, and the rates.
std::string llamacpp_timings(const FinishedRequest& f);

// vLLM's `POST /tokenize`: {"messages": [...]} (the chat template applied, as a chat request is) or
// {"prompt": "..."} -> {"count": N, "max_model_len": L, "tokens": [...]}; errors as a completion's.
Result<std::string> render_tokenize(std::string_view body, int max_model_len);

// GET /v1/models: the one served model; `owned_by` as the imitated server names itself ("vllm",
// "llamacpp").
std::string render_models(std::string_view model, std::int64_t created, std::string_view owned_by, int max_model_len);

// The members of llama.cpp b10309's GET /props a client reads (tests/fixtures/llamacpp/
// llamacpp_b10309_small-random_np2_props.json): its slots (the engine's max_num_seqs) and context.
std::string render_llamacpp_props(std::string_view model, int slots, int n_ctx);

// The members of SGLang's GET /server_info a client reads (tests/fixtures/sglang/
// sglang_dev1-gf97c09dac_qwen2.5-0.5b_get-server-info_excerpt.json): its running-request cap (the
// engine's max_num_seqs) as the argument and as the scheduler's effective cap, one data-parallel
// rank, and its KV cache's tokens.
std::string render_sglang_server_info(std::string_view model, int max_running, std::int64_t kv_tokens);

// Builds the response of one request, streamed (SSE events) or whole.
// A forced tool call's arguments: the generated tokens' text as one string member (`{"query": "`,
// the text, `"}`).
inline constexpr std::string_view kToolArgumentsOpen = "{\"query\": \"", kToolArgumentsClose = "\"}";
// The tokens llama.cpp b10309 generates of a call before it has parsed the function's name and
// sends anything of it (`{"name": "get_weather", "parameters": ` is 13 of LLaMA-2's tokens: 9 + a
// third of the name's length, rounded up; sim/llamacpp_chunks.cpp).
inline int llamacpp_tokens_before_call(std::string_view name) { return 9 + static_cast<int>(name.size() + 2) / 3; }

class ResponseBuilder {
 public:
  struct Options {
    std::string id;            // "chatcmpl-..." / "cmpl-..." / "resp_..." / "msg_..."
    std::int64_t created = 0;  // Unix seconds
    std::string model;
    int reasoning_tokens = 0;  // this many leading tokens are reasoning_content (chat only)
    int choice = 0;            // the choice's `index` (n > 1: one builder a choice)
    // llama.cpp b10309's chat and completions chunks (`--imitate llamacpp`; captures in
    // tests/fixtures/llamacpp/): its members' order and `system_fingerprint`, the role chunk's null
    // content, the finish in a chunk of its own after the last token, each choice's usage and
    // `timings` where b10309 puts them (choice_end()).
    bool llamacpp = false;
  };
  ResponseBuilder(const CompletionRequest& req, Options opts, int prompt_tokens);

  // The first events: chat's role-only chunk, the Responses API's response.created and
  // response.in_progress ("" for completions, and for Messages, whose message_start goes with the
  // first tokens).
  std::string stream_start();
  // The prefix-cache hit, once the engine scheduled the request (Anthropic's message_start states it).
  void set_cached_prompt_tokens(int n) { cached_prompt_tokens_ = n; }
  // SSE events for the next group of generated tokens (one event per kind of delta).
  std::string stream_tokens(std::span<const Emission> group);
  // What ends one choice, once its last tokens are out: llama.cpp's finish chunk, and its usage
  // chunk (chat with include_usage) or its usage on the finish chunk (completions, always), its
  // timings on the last of them. "" for vLLM's chunks, whose finish rides on the last token.
  std::string choice_end(int cached_prompt_tokens);
  // The usage-only event (vLLM's chunks, when asked for; one for every choice) and "data: [DONE]"
  // ("data: [DONE]" alone for llama.cpp's); the terminal events of the Responses and Messages APIs.
  std::string stream_end(int cached_prompt_tokens);
  // llama.cpp's `timings` object (llamacpp_timings()) for a choice's end (choice_end(), llama.cpp's
  // chunks only): on chat's finish chunk, or on its usage chunk when usage was asked for; on
  // completions' finish chunk.
  void set_timings(std::string timings_json) { timings_ = std::move(timings_json); }
  // The whole JSON body of a non-streamed response, after the last emission; with n > 1, this
  // (the first) choice's builder writes the body, `others` the other choices' builders. llama.cpp's
  // body (chat and completions) carries this choice's `timings` (set_timings()) and, as b10309's
  // does, a usage that counts this (the first) choice's tokens only.
  std::string full_body(int cached_prompt_tokens, std::span<const ResponseBuilder* const> others = {});
  // The completion tokens of the other choices, counted in this builder's usage (the end of a
  // stream of several choices carries one usage for all).
  void count_other_choices(int completion_tokens) { other_choices_tokens_ = completion_tokens; }

  int completion_tokens() const { return completion_tokens_; }
  std::optional<FinishReason> finish() const { return finish_; }

 private:
  using Kind = OutputKind;
  Kind kind_of(int index) const;
  ResponseTotals totals(int cached_prompt_tokens) const;
  std::string chunk(Kind kind, std::string_view text, bool first_tool, bool last_tool, const char* finish) const;
  std::string usage_json(int cached_prompt_tokens, bool with_details, int others = 0) const;
  // llama.cpp's chunks (sim/llamacpp_chunks.cpp): one choice's object in llama.cpp's envelope.
  std::string llamacpp_event(std::string_view choice, std::string_view usage = {}, std::string_view timings = {}) const;
  std::string llamacpp_chunk(Kind kind, std::string_view text) const;
  std::string llamacpp_tool_chunk(std::string_view text, int tokens, bool last);
  std::string llamacpp_tool_id() const;
  std::string llamacpp_usage(int cached_prompt_tokens) const;
  std::string llamacpp_body(int cached_prompt_tokens, std::span<const ResponseBuilder* const> others) const;
  std::string llamacpp_choice_json() const;
  std::string choice_json() const;     // the whole body's choice object
  std::string message_json() const;    // chat's whole message
  std::string tool_arguments() const;  // the whole call's arguments
  const char* finish_string() const;

  const CompletionRequest& req_;
  Options opts_;
  int prompt_tokens_;
  int completion_tokens_ = 0;
  int reasoning_count_ = 0;
  int cached_prompt_tokens_ = 0;
  int other_choices_tokens_ = 0;
  std::string timings_;
  std::optional<FinishReason> finish_;
  std::optional<ResponsesEvents> responses_;
  std::optional<MessagesEvents> messages_;
  std::string reasoning_, content_, tool_args_;
  // llama.cpp's tool call as it streams: the tokens so far, whether the call's head went out, and
  // the arguments not yet sent (held back until the function's name is parsed).
  int tool_tokens_ = 0;
  bool tool_head_sent_ = false;
  std::string tool_unsent_;
  // vLLM's chunk up to its choice's first member, `data: {"id":..,"created":..,"choices":[{"index":N,`,
  // written once (a chunk's cost was mostly formatting the same id and model again).
  std::string chunk_head_;
};

}  // namespace mpo::sim
