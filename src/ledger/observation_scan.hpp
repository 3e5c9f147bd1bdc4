// Our `modelperfobs.observation.v1` lines, read in the one form our writer gives them, by a scan of
// their bytes: no DOM is built for the ~50 values of a line (building simdjson's tape and copying
// its strings was half of what `report` spent on a million lines). The scan takes only what it can
// read exactly as the DOM walk would (ledger/reader.cpp, from_ours): "schema" first, no whitespace,
// strings without escapes, numbers without a sign, no object or array value, valid UTF-8; anything
// else (another schema, a hand-edited or a damaged line, llama.cpp's server_timings object) is left
// to the DOM walk, which decides what it is. `fuzz_ledger` checks that whatever the scan reads, the
// DOM walk reads the same. Internal to the ledger module. Pure.
#pragma once

#include <string_view>

#include "ledger/reader.hpp"

namespace mpo::ledger::detail {

enum class ScanRead {
  kRead,     // `r` holds the line's record; its strings point into `line`
  kLeftOver  // not read here: the DOM walk decides
};

ScanRead scan_observation(std::string_view line, LedgerRecordView& r);

}  // namespace mpo::ledger::detail
