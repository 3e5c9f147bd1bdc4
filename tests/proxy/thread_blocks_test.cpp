// The blocks each thread keeps for its next allocation of one size (proxy/thread_blocks.hpp, issue
// 43): a block given back is the next one taken, on that thread; no more than `Keep` are kept; a
// block given on another thread is kept by that thread.
#include "proxy/thread_blocks.hpp"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace mpo::proxy {
namespace {

TEST(ThreadBlocks, ABlockGivenBackIsTheNextTakenAndNoMoreThanKeepAreKept) {
  using Blocks = ThreadBlocks<4096, 4>;
  void* a = Blocks::take();
  Blocks::give(a);
  EXPECT_EQ(Blocks::kept_now(), 1u);
  EXPECT_EQ(Blocks::take(), a);  // reused, not allocated again
  EXPECT_EQ(Blocks::kept_now(), 0u);
  std::vector<void*> taken;
  for (int i = 0; i < 6; ++i) taken.push_back(Blocks::take());
  for (void* p : taken) Blocks::give(p);
  EXPECT_EQ(Blocks::kept_now(), 4u);  // the other two went back to the allocator
  Blocks::give(a);
  EXPECT_EQ(Blocks::kept_now(), 4u);
}

TEST(ThreadBlocks, ABlockGivenOnAnotherThreadIsKeptByThatThread) {
  using Blocks = ThreadBlocks<2048, 8>;
  void* a = Blocks::take();
  std::size_t there = 0;
  std::thread other([&] {
    Blocks::give(a);
    there = Blocks::kept_now();
    EXPECT_EQ(Blocks::take(), a);
    Blocks::give(a);  // kept until that thread ends, then freed
  });
  other.join();
  EXPECT_EQ(there, 1u);
  EXPECT_EQ(Blocks::kept_now(), 0u);
}

struct Big : KeptByThread<Big> {
  char bytes[3000] = {};
};

TEST(ThreadBlocks, AClassKeptByThreadReusesItsBlock) {
  auto* first = new Big;
  delete first;
  auto* second = new Big;
  EXPECT_EQ(second, first);
  delete second;
}

}  // namespace
}  // namespace mpo::proxy
