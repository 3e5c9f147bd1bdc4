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
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "loadgen/shard.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {

struct MergeOptions {
  double max_start_skew_s = 1.0;  // a point's shards must start within this of each other
  std::string output_name;        // artifact name of the merged receipt
};

// One shard's receipt as merge read it (for the record it leaves in the merged receipt).
struct ShardInput {
  std::string name;  // the file it came from
  std::string text;  // the receipt as written
};

// Joins the receipts of shards 0..N-1 of one sweep: every point's samples united, every figure
// re-derived from them (so `sweep verify` holds on the result), the points and tracks evaluated
// again. Refuses shards whose workload, points, settings or windows do not line up, saying which
// and by how much.
Result<SweepReceipt> merge_shards(const std::vector<ShardInput>& shards, const MergeOptions& options);

}  // namespace mpo::sweep
