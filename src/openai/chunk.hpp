// Reading OpenAI-compatible payloads for timing and accounting: the kind of each streamed chunk
// (does it carry generated content?), usage, ids and errors; the same for a whole non-streamed
// body; and what a request asks for. Pure; never throws; nothing here blocks forwarding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpo::openai {

enum class ChunkKind {
  kContent,     // delta.content / choices[].text non-empty
  kReasoning,   // delta.reasoning_content or delta.reasoning non-empty
  kToolCalls,   // delta.tool_calls non-empty
  kRefusal,     // delta.refusal non-empty
  kRoleOnly,    // only a role (the prelude of a chat stream)
  kEmpty,       // choices without anything generated (e.g. the finish-only chunk)
  kUsageOnly,   // no choices, a usage object
  kError,       // an error object
  kDone,        // "[DONE]"
  kUnparsable,  // not JSON (malformed stream)
};
std::string_view to_string(ChunkKind k);
// Generated content: the event that starts TTFT and counts for inter-token gaps.
inline bool is_generated(ChunkKind k) {
  return k == ChunkKind::kContent || k == ChunkKind::kReasoning || k == ChunkKind::kToolCalls ||
         k == ChunkKind::kRefusal;
}

struct Usage {
  std::optional<std::int64_t> prompt_tokens;
  std::optional<std::int64_t> completion_tokens;
  std::optional<std::int64_t> total_tokens;
  std::optional<std::int64_t> cached_prompt_tokens;  // prompt_tokens_details.cached_tokens
  std::optional<std::int64_t> reasoning_tokens;      // completion_tokens_details.reasoning_tokens
  bool operator==(const Usage&) const = default;
};

inline constexpr std::int64_t kMaxChoiceIndex = 65535;
// A choice's `index` as both readers take it: 0 outside [0, kMaxChoiceIndex].
inline int choice_index_of(std::int64_t n) { return n >= 0 && n <= kMaxChoiceIndex ? static_cast<int>(n) : 0; }

struct PayloadInfo {
  ChunkKind kind = ChunkKind::kEmpty;
  int choices = 0;
  std::optional<Usage> usage;
  std::string model;
  std::string id;
  std::string finish_reason;  // first choice's, "" when absent
  // The first choice's `index` (a request with `n` > 1 streams its choices' chunks interleaved,
  // each naming its choice): an integer in [0, kMaxChoiceIndex], else 0.
  int first_choice_index = 0;
  std::string error_type;
  std::string error_message;
  std::string server_timings;  // raw JSON of llama.cpp `timings` / vLLM `metrics`, "" when absent
  // The event that ends a stream of the Responses API (`response.completed`, `response.incomplete`,
  // `response.failed`) or of Anthropic Messages (`message_stop`), by its payload's `type`.
  // ("[DONE]" of chat and completions streams is kind kDone.)
  bool terminal = false;
  // An event of the Responses or Messages API (a `type` they define): such a stream must end with
  // its terminal event, or it was cut short.
  bool typed_event = false;
  // A `type` no reader here knows (APIs add event types every few months): counted and ignored.
  bool unknown_event = false;
  // The usage the stream states once, for the whole response: chat's usage-only chunk, the
  // Responses API's terminal event, Anthropic's message_delta (not vLLM's continuous usage).
  bool final_usage = false;
  bool operator==(const PayloadInfo&) const = default;
};

// One SSE data payload of a streamed response. A stream's reader keeps its first id: with
// IdWanted::kNo a chat or completions chunk's `id` is not copied (issue 43: a 45-byte id was an
// allocation per chunk read).
enum class IdWanted { kYes, kNo };
PayloadInfo classify_chunk(std::string_view data, IdWanted id = IdWanted::kYes);
// A complete non-streamed response body (chat, completions, responses, messages, embeddings, or
// an error body).
PayloadInfo parse_response_body(std::string_view body);

enum class Operation {
  kChat,            // /chat/completions
  kTextCompletion,  // /completions
  kEmbeddings,      // /embeddings
  kResponses,       // /responses (OpenAI Responses API)
  kMessages,        // /messages (Anthropic Messages API)
  kRerank,          // /rerank
  kScore,           // /score
  kModels,          // /models
  kOther,
};
std::string_view to_string(Operation op);
Operation operation_for_path(std::string_view path);

struct RequestInfo {
  Operation operation = Operation::kOther;
  std::optional<std::string> model;
  bool stream = false;
  bool usage_requested = false;  // stream_options.include_usage
  // The body is a JSON object whose top-level members read without fault (openai/request_inspect.cpp:
  // a fault inside a value nothing reads, such as `messages`, is not looked for).
  bool json = false;
  // What ties the request to a conversation (proxy/sessions.hpp): the Responses API's
  // previous_response_id, OpenAI's `user` and `safety_identifier`, Anthropic's metadata.user_id.
  std::optional<std::string> previous_response_id, user, safety_identifier, metadata_user_id;
  // The output limit the request names, a non-negative integer: max_completion_tokens (chat), else
  // max_tokens (chat, completions, Anthropic Messages), else max_output_tokens (Responses API).
  std::optional<std::int64_t> max_tokens;
  bool operator==(const RequestInfo&) const = default;
};
// What a request asks for, by its path and body (openai/request_inspect.cpp).
RequestInfo inspect_request(std::string_view path, std::string_view body);
// The bytes the reading may look at past a body's end (simdjson's padding). A body whose string has
// this much room past its size (reserved for it: proxy/server.cpp) is read where it lies, without
// the copy inspect_request(path, string_view) makes (a 40 KB agent request: 40 KB a request).
inline constexpr std::size_t kRequestBodyPadding = 64;
// As inspect_request; the body read in place when its capacity leaves kRequestBodyPadding bytes.
RequestInfo inspect_request_in_place(std::string_view path, const std::string& body);

}  // namespace mpo::openai
