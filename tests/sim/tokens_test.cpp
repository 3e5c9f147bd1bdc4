#include "sim/tokens.hpp"

#include <gtest/gtest.h>

namespace mpo::sim {
namespace {

std::size_t count(std::string_view text) {
  std::vector<TokenId> t;
  tokenize(text, t);
  return t.size();
}

TEST(Tokenize, FollowsTheDocumentedApproximation) {
  EXPECT_EQ(count(""), 0u);
  EXPECT_EQ(count("   "), 0u);
  EXPECT_EQ(count("Hi"), 1u);
  EXPECT_EQ(count("Hello"), 2u);          // 5 chars: ceil(5/4)
  EXPECT_EQ(count("Hello, world!"), 6u);  // "Hell" "o" "," "worl" "d" "!"
}

TEST(Tokenize, SameTextSameIds) {
  std::vector<TokenId> a, b;
  tokenize("the same words", a);
  tokenize("the same words", b);
  EXPECT_EQ(a, b);
}

TEST(TokenizeChat, AddsThreeTokensPerMessagePlusRoleAndThreeForThePrimer) {
  const auto t = tokenize_chat({{"user", "Hi"}});
  EXPECT_EQ(t.size(), 3u + 1 + 1 + 3);  // template + "user" + "Hi" + primer
}

TEST(SampleToken, IsDeterministicAndInVocabulary) {
  EXPECT_EQ(sample_token(1, 5), sample_token(1, 5));
  for (std::uint64_t i = 0; i < 100; ++i) EXPECT_LT(sample_token(3, i), kVocabularySize);
  EXPECT_FALSE(token_text(sample_token(3, 0)).empty());
}

}  // namespace
}  // namespace mpo::sim
