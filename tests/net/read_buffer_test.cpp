// The read buffer's blocks (net/read_buffer.hpp): a buffer given back while its connection waits
// costs no allocation when it is taken again, and a thread keeps no more than its bound.
#include "net/read_buffer.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace mpo::net {
namespace {

TEST(ReadBlocks, ABlockGivenBackIsTheNextOneTaken) {
  void* a = ReadBlocks::take(16 * 1024);
  const std::size_t kept = ReadBlocks::kept();
  ReadBlocks::give(a, 16 * 1024);
  EXPECT_EQ(ReadBlocks::kept(), kept + 1);
  void* b = ReadBlocks::take(300);  // any size up to a block is a block
  EXPECT_EQ(b, a);
  EXPECT_EQ(ReadBlocks::kept(), kept);
  std::memset(b, 1, ReadBlocks::kBlockBytes);  // all of it is usable (ASan would say otherwise)
  ReadBlocks::give(b, 300);
}

TEST(ReadBlocks, LargerSizesAreNotKeptAndAThreadKeepsAtMostItsBound) {
  const std::size_t kept = ReadBlocks::kept();
  void* big = ReadBlocks::take(64 * 1024);
  ReadBlocks::give(big, 64 * 1024);
  EXPECT_EQ(ReadBlocks::kept(), kept);
  std::vector<void*> many;
  for (std::size_t i = 0; i < ReadBlocks::kKeptBlocks + 10; ++i) many.push_back(ReadBlocks::take(16 * 1024));
  for (void* p : many) ReadBlocks::give(p, 16 * 1024);
  EXPECT_EQ(ReadBlocks::kept(), ReadBlocks::kKeptBlocks);
}

TEST(ReadBuffer, AnEmptyBufferGivesItsBlockBackAndTakesOneAgainForTheNextRead) {
  ReadBuffer b;
  auto space = b.prepare(16 * 1024);
  std::memcpy(space.data(), "request", 7);
  b.commit(7);
  release_if_empty(b);  // not empty: kept
  EXPECT_EQ(b.size(), 7u);
  EXPECT_GE(b.capacity(), 7u);
  b.consume(7);
  const std::size_t kept = ReadBlocks::kept();
  release_if_empty(b);
  EXPECT_EQ(b.capacity(), 0u);
  EXPECT_EQ(ReadBlocks::kept(), kept + 1);
  b.prepare(16 * 1024);
  EXPECT_EQ(ReadBlocks::kept(), kept);
}

}  // namespace
}  // namespace mpo::net
