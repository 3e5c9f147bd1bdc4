// Reading `modelperfobs.scrape.v1` lines back (the proxy's `<ledger>.scrape.jsonl`, `scrape
// --output`), so facts can be taken over a recorded run. Numbers are read exactly (simdjson).
#pragma once

#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::scrape {

// One line. Errors name what is wrong ("scrape.line").
Result<Snapshot> parse_snapshot_line(std::string_view line);

struct SnapshotsRead {
  std::vector<Snapshot> snapshots;
  std::uint64_t invalid_lines = 0;    // not a snapshot line (another schema, torn, malformed)
  std::vector<std::string> problems;  // the first few, with line numbers
};
SnapshotsRead read_snapshots(std::string_view text);

}  // namespace mpo::scrape
