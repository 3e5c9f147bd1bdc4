// What a stream tap saw, written into a ledger line: response identity, timing from `t0_us` (the
// steady time the request started), tokens and their source. Shared by the proxy and the sweep
// load generator, so both ledgers mean the same thing by each field. The tap's response id and gaps
// are moved into the line (read them before). Pure.
#pragma once

#include <cstdint>

#include "ledger/observation.hpp"
#include "openai/stream_tap.hpp"

namespace mpo::ledger {

void fill_from_tap(Observation& o, openai::StreamTap& tap, std::int64_t t0_us, bool itl_full);

}  // namespace mpo::ledger
