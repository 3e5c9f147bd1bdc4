// The warnings a sweep receipt carries beside its verdict (ours; fak's receipts have none): what
// does not make a point invalid but changes what its figures mean. Derived from the receipt's own
// contents, so `sweep verify` derives them again. Pure.
#pragma once

#include <string>
#include <vector>

#include "sweep/receipt.hpp"

namespace mpo::sweep {

// In the order they are written: token counts estimated rather than reported (once a track),
// answers the engine cut short of the max_tokens asked for (once a track, naming the points),
// speculative decoding's acceptance moving across points.
std::vector<std::string> receipt_warnings(const SweepReceipt& r);

}  // namespace mpo::sweep
