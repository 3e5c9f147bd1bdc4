// Which API the load generator speaks (`sweep --api`, `attribute --probe --api`,
// `cache-state-bench --api`): the path it POSTs to, the body it sends for a workload request, and
// the ledger's operation. Pure; the driver does the I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/workload.hpp"

namespace mpo::loadgen {

enum class Api { kChat, kCompletions, kResponses, kMessages };

// "chat", "completions", "responses", "messages"; nullopt for anything else.
std::optional<Api> parse_api(std::string_view name);
std::string_view api_name(Api api);
// The path under the OpenAI base URL: /chat/completions, /completions, /responses, /messages.
std::string_view api_path(Api api);
// The ledger's operation for it (chat, text_completion, responses, messages).
std::string_view api_operation(Api api);
// What `--api` accepts.
inline const std::vector<std::string> kApiNames{"chat", "completions", "responses", "messages"};
// What it means, for --help.
inline constexpr const char* kApiHelp =
    "API to speak: chat (/chat/completions, fak's body), completions (/completions, the messages "
    "joined into one prompt), responses (/responses, OpenAI Responses API), messages (/messages, "
    "Anthropic Messages API); each streamed, with its usage";

// A streamed request body, keys in sorted order. chat is fak's body unchanged (docs/FAK.md 6.3):
// max_tokens, messages, model, stream, stream_options.include_usage, temperature 0. completions:
// the messages' contents joined by newlines as `prompt`. responses: the messages as `input`,
// max_output_tokens. messages: system messages joined as `system`, the others as `messages`,
// max_tokens. `ignore_eos` (a vLLM/SGLang extension) is added to any of them when asked.
std::string request_body(const ServingRequest& r, const std::string& model, bool ignore_eos, Api api = Api::kChat);
// The completions API's prompt: the messages' contents joined by newlines (no template).
std::string completions_prompt(const std::vector<Message>& messages);

}  // namespace mpo::loadgen
