// Our `modelperfobs.observation.v1` lines, read in the one form our writer gives them, by a scan of
// their bytes: no DOM is built for the ~50 values of a line (building simdjson's tape and copying
// its strings was half of what `report` spent on a million lines). The scan takes only what it can
// read exactly as the DOM walk would (ledger/reader.cpp, from_ours): "schema" first, no whitespace,
// strings without escapes, numbers without a sign, no object or array value, valid UTF-8; anything
// else (another schema, a hand-edited or a damaged line, llama.cpp's server_timings object) is left
// to the DOM walk, which decides what it is. `fuzz_ledger` checks that whatever the scan reads, the
// DOM walk reads the same. Internal to the ledger module. Pure (the key order it learns is the
// caller's).
#pragma once

#include <cstdint>
#include <string_view>

#include "ledger/line_fields.hpp"
#include "ledger/reader.hpp"

namespace mpo::ledger::detail {

enum class ScanRead {
  kRead,     // `r` holds the line's record; its strings point into `line`
  kLeftOver  // not read here: the DOM walk decides
};

// The keys of the last line read, in its order: the writer gives every line the same keys in the
// same order, so a line's key is compared with the one the last line had there, and found by its
// name only where they differ (then it is learnt for the next line).
struct KeyOrder {
  struct Key {
    char text[32];            // kMaxKeyLength
    std::uint8_t length = 0;  // 0: none learnt
    Field field = Field::kOther;
  };
  Key keys[64];
};

// `order` is the decoder's own, kept from line to line.
ScanRead scan_observation(std::string_view line, LedgerRecordView& r, KeyOrder& order);

}  // namespace mpo::ledger::detail
