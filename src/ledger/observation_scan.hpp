// Our `modelperfobs.observation.v1` lines, read in the one form our writer gives them, by a scan of
// their bytes: no DOM is built for the ~50 values of a line (building simdjson's tape and copying
// its strings was half of what `report` spent on a million lines). The scan takes only what it can
// read exactly as the DOM walk would (ledger/reader.cpp, from_ours): "schema" first, no whitespace,
// strings without escapes, numbers without a sign, no array, no object but server_timings (parsed
// on its own by the DOM, as the walk keeps it), valid UTF-8. Anything else (another schema, a
// hand-edited or a damaged line) is left to the DOM walk, which decides what it is. `fuzz_ledger`
// checks that whatever the scan reads, the DOM walk reads the same. Internal to the ledger module.
// Pure (what it keeps from line to line is the caller's).
#pragma once

#include <cstdint>
#include <string>
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

// What a decoder keeps for the scan from line to line.
struct ScanState {
  KeyOrder order;
  std::string object;  // a server_timings object copied with room to parse it
};

// `dom` parses a server_timings object on its own, minified into `scratch`, as the DOM walk keeps
// it (the record's server_timings then points there).
ScanRead scan_observation(std::string_view line, LedgerRecordView& r, ScanState& state, simdjson::dom::parser& dom,
                          std::string& scratch);

}  // namespace mpo::ledger::detail
