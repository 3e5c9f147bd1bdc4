// `sweep merge`: joins the receipts of a sweep driven from many machines (docs/SWEEP.md "Sharded
// sweeps"; each shard's share of the load is loadgen/shard.hpp's). Pure.
//
// The share, of the same seeded workload, disjoint between shards. Closed loop at concurrency c:
// worker w of the point belongs to shard w mod N (shard I runs c/N workers, one more when
// I < c mod N) and request j of the point's list (warm-up first, then measured) to the shard of
// worker j mod c, so each shard sends in proportion to its workers. Open loop: the point's whole
// arrival process is drawn from the seed and shard I keeps arrivals j mod N == I (a deterministic
// thinning): the N shards together offer the point's rate.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/result.hpp"

namespace mpo::loadgen {

inline constexpr int kMaxShards = 1024;

struct Shard {
  int index = 0;  // from 0 (Kubernetes' JOB_COMPLETION_INDEX)
  int count = 1;
  bool sharded() const { return count > 1; }
  // Open loop: whether arrival j of a point is this shard's.
  bool owns_arrival(std::size_t j) const { return static_cast<int>(j % static_cast<std::size_t>(count)) == index; }
  // Closed loop at concurrency `c`: whether request j of a point is this shard's.
  bool owns_request(std::size_t j, std::int64_t c) const {
    return owns_arrival(j % static_cast<std::size_t>(std::max<std::int64_t>(c, 1)));
  }
};

// "I/N" with 0 <= I < N <= kMaxShards.
Result<Shard> parse_shard(std::string_view text);
// Closed-loop workers of this shard at concurrency `c`.
std::int64_t shard_concurrency(std::int64_t c, const Shard& s);

}  // namespace mpo::loadgen
