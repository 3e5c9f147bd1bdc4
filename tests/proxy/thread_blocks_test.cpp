// The blocks each thread keeps for its next allocation of one size (proxy/thread_blocks.hpp, issue
// 43): a block given back is the next one taken, on that thread; no more than `Keep` are kept; a
// block given on another thread is kept by that thread.
#include "proxy/thread_blocks.hpp"

#include <gtest/gtest.h>

#include <string>
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

TEST(ThreadKept, AStringsBufferGoesToTheNextTakenEmptiedAndOnlyBuffersWorthKeepingAreKept) {
  using Strings = ThreadKept<std::string, struct TestStrings, 2, 4096>;
  std::string a = Strings::take();
  a.assign(1500, 'a');
  const char* buffer = a.data();
  Strings::give(std::move(a));
  EXPECT_EQ(Strings::kept_now(), 1u);
  std::string b = Strings::take();
  EXPECT_EQ(b.data(), buffer);  // the same buffer, not a new one
  EXPECT_TRUE(b.empty());
  EXPECT_GE(b.capacity(), 1500u);
  Strings::give(std::string("short"));    // no buffer of its own: nothing to keep
  Strings::give(std::string(8000, 'x'));  // over MaxBytes: freed
  EXPECT_EQ(Strings::kept_now(), 0u);
  for (int i = 0; i < 3; ++i) Strings::give(std::string(100, 'y'));
  EXPECT_EQ(Strings::kept_now(), 2u);  // Keep
  while (Strings::kept_now() > 0) (void)Strings::take();
}

TEST(ThreadKept, KeptGivesItsBufferBackWhenItGoesAndAMovedOneOnce) {
  const char* buffer = nullptr;
  {
    Kept<std::vector<int>> v;
    v->assign(300, 7);
    buffer = reinterpret_cast<const char*>(v->data());
    Kept<std::vector<int>> moved(std::move(v));  // one buffer, given back once
  }
  EXPECT_EQ(ThreadKept<std::vector<int>>::kept_now(), 1u);
  Kept<std::vector<int>> again;
  EXPECT_EQ(reinterpret_cast<const char*>(again->data()), buffer);
  EXPECT_TRUE(again->empty());
}

}  // namespace
}  // namespace mpo::proxy
