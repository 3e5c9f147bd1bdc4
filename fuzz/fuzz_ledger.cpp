// Fuzz target: the ledger reader never crashes; every non-empty line is accounted for exactly once.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "ledger/reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto r = mpo::ledger::read_ledger(text);
  const std::uint64_t accounted =
      r.records.size() + r.gap_lines + r.invalid_lines + r.foreign_lines + (r.torn_last_line ? 1 : 0);
  if (accounted != r.lines) std::abort();
  return 0;
}
