#include "sim/block_pool.hpp"

#include <gtest/gtest.h>

namespace mpo::sim {
namespace {

TEST(BlockPool, FreedCachedBlocksStayFindableUntilReused) {
  BlockPool pool(4, true);
  auto a = pool.allocate(2);
  pool.cache(a[0], 111);
  pool.cache(a[1], 222);
  pool.release(a);
  EXPECT_EQ(pool.num_free(), 4);
  const BlockHash chain[] = {111, 222, 333};
  EXPECT_EQ(pool.lookup(chain).size(), 2u);
  // LRU: the two never-used blocks go first, then the freed tail (222), then the head (111).
  auto b = pool.allocate(3);
  EXPECT_EQ(pool.lookup(chain).size(), 1u);
  EXPECT_EQ(pool.evictions(), 1u);
  pool.release(b);
}

TEST(BlockPool, TouchTakesFreeCachedBlocksOutOfTheFreeQueue) {
  BlockPool pool(2, true);
  auto a = pool.allocate(1);
  pool.cache(a[0], 7);
  pool.release(a);
  const BlockHash h[] = {7};
  auto hit = pool.lookup(h);
  EXPECT_EQ(pool.count_free(hit), 1);
  pool.touch(hit);
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_DOUBLE_EQ(pool.usage(), 0.5);
}

TEST(BlockPool, WithoutCachingNothingIsFound) {
  BlockPool pool(2, false);
  auto a = pool.allocate(1);
  pool.cache(a[0], 7);
  const BlockHash h[] = {7};
  EXPECT_TRUE(pool.lookup(h).empty());
}

TEST(BlockPool, ResetForgetsEveryHash) {
  BlockPool pool(2, true);
  auto a = pool.allocate(2);
  pool.cache(a[0], 1);
  pool.cache(a[1], 2);
  EXPECT_EQ(pool.reset_prefix_cache(), 2);
  const BlockHash h[] = {1};
  EXPECT_TRUE(pool.lookup(h).empty());
}

TEST(BlockHash, ChainsOnTheParent) {
  const std::uint32_t t[] = {1, 2, 3};
  EXPECT_EQ(hash_block(0, t), hash_block(0, t));
  EXPECT_NE(hash_block(0, t), hash_block(1, t));
}

}  // namespace
}  // namespace mpo::sim
