// The share of a point each shard runs, and the rule that judges each shard's generator on its own.
#include <gtest/gtest.h>

#include "sweep/evaluate.hpp"
#include "sweep/merge.hpp"
#include "sweep/receipt_fixtures.hpp"

namespace mpo::sweep {
namespace {

TEST(Shard, IndexCountsFromZeroAndOutOfRangeIsRefused) {
  auto s = loadgen::parse_shard("2/4");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", "0/2000"}) {
    EXPECT_FALSE(loadgen::parse_shard(bad)) << bad;
  }
}

TEST(Shard, TheSharesOfAPointAreDisjointAndAddUpToIt) {
  for (int n : {1, 2, 3, 5}) {
    for (std::int64_t c : {1, 2, 3, 8, 17}) {
      std::int64_t workers = 0;
      std::vector<int> owners(100, 0);
      std::vector<int> arrivals(100, 0);
      for (int i = 0; i < n; ++i) {
        const loadgen::Shard s{i, n};
        workers += loadgen::shard_concurrency(c, s);
        for (std::size_t j = 0; j < owners.size(); ++j) {
          owners[j] += s.owns_request(j, c) ? 1 : 0;
          arrivals[j] += s.owns_arrival(j) ? 1 : 0;
        }
        // A shard without workers sends no request of the point.
        if (loadgen::shard_concurrency(c, s) == 0) {
          for (std::size_t j = 0; j < owners.size(); ++j) EXPECT_FALSE(s.owns_request(j, c));
        }
      }
      EXPECT_EQ(workers, c) << n << " shards at " << c;
      for (std::size_t j = 0; j < owners.size(); ++j) {
        EXPECT_EQ(owners[j], 1) << "request " << j;
        EXPECT_EQ(arrivals[j], 1) << "arrival " << j;
      }
    }
  }
}

TEST(Shard, OneLateShardMakesTheMergedPointClientSaturated) {
  auto r = fixtures::scaling_sweep(8, {1, 2, 4});
  auto& tp = r.points[1].tracks[0];
  for (std::size_t i = 0; i < tp.samples.size(); ++i) tp.samples[i].shard = static_cast<int>(i % 2);
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(tp.status, "valid");
  // Shard 1 sent every request 3 ms late (the point's generator block, written before, does not
  // show it): the samples name the shard whose client saturated.
  for (auto& s : tp.samples) {
    if (s.shard == 1) s.sent_offset_ms = s.scheduled_offset_ms + 3;
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(tp.reason_code, "client_saturated");
  EXPECT_NE(tp.reason.find("shard 1's load generator sent late: p99 send lateness 3 ms"), std::string::npos)
      << tp.reason;
}

}  // namespace
}  // namespace mpo::sweep
