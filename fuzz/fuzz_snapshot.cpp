// Fuzz target: the snapshot-line reader never crashes, and what it accepts writes back to a line
// that reads back to the same line.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "scrape/snapshot_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = mpo::scrape::parse_snapshot_line(text);
  if (!s) return 0;
  const std::string once = mpo::scrape::snapshot_json_line(*s);
  auto again = mpo::scrape::parse_snapshot_line(once);
  if (!again || mpo::scrape::snapshot_json_line(*again) != once) std::abort();
  (void)mpo::scrape::read_snapshots(text);
  return 0;
}
