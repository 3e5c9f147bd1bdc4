// The simulator's stand-in for a tokenizer and a model's sampler, both deterministic.
//
// Prompt tokens (documented in docs/SIMULATOR.md): text splits into runs of letters/digits and
// single other non-space characters; a run of L characters is ceil(L/4) tokens (4-character
// pieces), any other non-space character is 1 token, whitespace is free. A chat prompt adds a
// template: 3 tokens plus the role's tokens per message, and 3 tokens to prime the assistant.
// Token IDs are hashes of the pieces, so the same text always gives the same IDs (prefix caching
// sees repeated prompts).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::sim {

using TokenId = std::uint32_t;

// Appends the token IDs of `text` to `out`.
void tokenize(std::string_view text, std::vector<TokenId>& out);

struct ChatMessage {
  std::string role;
  std::string content;
};
std::vector<TokenId> tokenize_chat(const std::vector<ChatMessage>& messages);

// Output vocabulary: a generated token ID maps to one word with a leading space (" lorem").
constexpr std::uint32_t kVocabularySize = 64;
std::string_view token_text(TokenId id);
// The `index`-th generated token of a request seeded with `seed`.
TokenId sample_token(std::uint64_t seed, std::uint64_t index);

std::uint64_t mix64(std::uint64_t x);

}  // namespace mpo::sim
