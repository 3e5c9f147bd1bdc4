// Fuzz target: the ledger reader never crashes; every non-empty line is accounted for exactly once;
// and what the scan of our writer's form reads (ledger/observation_scan.hpp) is what the DOM walk
// reads: the same records, counts and problems with the scan as with every line through the DOM.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ledger/reader.hpp"

namespace {

mpo::ledger::LedgerRead read(std::string_view text, bool dom_only) {
  mpo::ledger::LineDecoder decoder;
  decoder.set_dom_only(dom_only);
  decoder.text(text, 1, true);
  return std::move(decoder).take();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = mpo::ledger::read_ledger(text);
  const std::uint64_t accounted =
      r.records.size() + r.gap_lines + r.invalid_lines + r.foreign_lines + (r.torn_last_line ? 1 : 0);
  if (accounted != r.lines) std::abort();
  const auto scanned = read(text, false), dom = read(text, true);
  if (scanned.records != dom.records || scanned.lines != dom.lines || scanned.invalid_lines != dom.invalid_lines ||
      scanned.foreign_lines != dom.foreign_lines || scanned.torn_last_line != dom.torn_last_line ||
      scanned.problems.size() != dom.problems.size()) {
    std::abort();
  }
  return 0;
}
