// Small text helpers (core/text.hpp): copy_bytes copies what memcpy does for every length, the
// short ones by overlapping fixed-size copies; append_pieces lays pieces end to end.
#include "core/text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mpo {
namespace {

TEST(CopyBytes, CopiesWhatMemcpyDoesForEveryLengthAndPlace) {
  std::string from(80, '\0');
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<char>('A' + i % 57);
  for (std::size_t n = 0; n <= 40; ++n) {
    for (std::size_t at = 0; at < 8; ++at) {
      std::string ours(64, '.'), theirs(64, '.');
      copy_bytes(ours.data() + at, from.data() + at + 3, n);
      std::memcpy(theirs.data() + at, from.data() + at + 3, n);
      EXPECT_EQ(ours, theirs) << n << " bytes at " << at;  // and nothing written around them
    }
  }
}

TEST(AppendPieces, LaysThePiecesEndToEndAfterWhatWasThere) {
  std::string out = "GET";
  append_pieces(out, {" ", "/v1/chat/completions", "", " HTTP/1.1\r\n", "Host: a\r\n"});
  EXPECT_EQ(out, "GET /v1/chat/completions HTTP/1.1\r\nHost: a\r\n");
}

}  // namespace
}  // namespace mpo
