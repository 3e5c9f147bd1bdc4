// The implementation of sim/tokens.hpp. The simulator's stand-in for a tokenizer and a model's
// sampler, both deterministic.
#include "sim/tokens.hpp"

#include <array>

namespace mpo::sim {
namespace {

constexpr std::array<std::string_view, kVocabularySize> kWords = {
    " the",     " engine", " serves",  " tokens", " quickly",  " while",  " queues",  " grow",
    " under",   " load",   " and",     " every",  " request",  " keeps",  " its",     " own",
    " cache",   " blocks", " prefill", " decode", " steps",    " batch",  " memory",  " bandwidth",
    " limits",  " speed",  " so",      " we",     " measure",  " each",   " stream",  " carefully",
    " latency", " rises",  " when",    " slots",  " run",      " out",    " of",      " room",
    " a",       " model",  " answers", " with",   " evidence", " not",    " guesses", " first",
    " token",   " time",   " matters", " most",   " for",      " agents", " waiting", " on",
    " tools",   " that",   " call",    " back",   " again",    " later",  " today",   ".",
};

constexpr TokenId kTemplateStart = 0xfffffff0U;
constexpr TokenId kTemplateEnd = 0xfffffff1U;
constexpr TokenId kTemplateNewline = 0xfffffff2U;

TokenId piece_id(std::string_view piece) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : piece) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return static_cast<TokenId>(mix64(h) & 0xffffffefULL);
}

bool is_word_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

bool is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

void tokenize(std::string_view text, std::vector<TokenId>& out) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (is_space(c)) {
      ++i;
    } else if (is_word_char(c)) {
      std::size_t j = i;
      while (j < text.size() && is_word_char(static_cast<unsigned char>(text[j]))) ++j;
      for (std::size_t k = i; k < j; k += 4) out.push_back(piece_id(text.substr(k, std::min<std::size_t>(4, j - k))));
      i = j;
    } else {
      out.push_back(piece_id(text.substr(i, 1)));
      ++i;
    }
  }
}

std::vector<TokenId> tokenize_chat(const std::vector<ChatMessage>& messages) {
  std::vector<TokenId> out;
  for (const auto& m : messages) {
    out.push_back(kTemplateStart);
    tokenize(m.role, out);
    out.push_back(kTemplateNewline);
    tokenize(m.content, out);
    out.push_back(kTemplateEnd);
  }
  out.push_back(kTemplateStart);
  out.push_back(piece_id("assistant"));  // the primer is exactly 3 tokens
  out.push_back(kTemplateNewline);
  return out;
}

std::string_view token_text(TokenId id) { return kWords[id % kVocabularySize]; }

TokenId sample_token(std::uint64_t seed, std::uint64_t index) {
  return static_cast<TokenId>(mix64(seed ^ mix64(index + 1)) % kVocabularySize);
}

}  // namespace mpo::sim
