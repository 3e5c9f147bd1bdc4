// `sweep verify`: re-derives a receipt from its own contents. Every point's statistics and
// evidence figures are recomputed from its samples, every point and track is re-evaluated, and for
// a receipt this tool wrote the whole document must come out byte for byte as written; any
// difference is named. `sweep gate`: refuses claims the receipt cannot carry (fak's claim kinds).
// Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/json_diff.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {

struct VerifyOutcome {
  bool holds = false;
  std::vector<std::string> problems;  // why it does not hold (empty when it does)
  std::vector<std::string> notes;     // e.g. a fak receipt without samples: stats taken as written
  std::string summary;                // one line
};
VerifyOutcome verify_sweep(std::string_view text);

// Every field `text` states that differs from `derived` (the same receipt re-derived and
// re-evaluated): for our receipts every field; for fak's the fields fak writes, a field fak's
// version left out being absent by design and its reasons fak's own wording (said in `notes`).
std::vector<JsonDifference> stated_differences(std::string_view text, const SweepReceipt& derived,
                                               std::vector<std::string>* notes = nullptr);

// A report with every point's stats and evidence figures recomputed from its samples (points
// without samples keep theirs), before evaluation: what the runner writes and verify expects.
// Differences from what was written are appended to `out` when given.
void rederive_from_samples(SweepReceipt& r, VerifyOutcome* out = nullptr);

struct GateOutcome {
  bool allowed = false;
  std::string message;  // "serving claim gate: OK" or the refusal
  // false when the text makes no claim the gate knows: fak's rule allows it, but nothing was judged
  // (the command exits 4, "could not judge", so a pipeline does not pass on a claim it missed).
  bool judged = true;
};
// fak's claim gate over a sweep or parity receipt (docs/FAK.md 6.5, 6.9).
GateOutcome gate_claim(std::string_view claim, std::string_view artifact_text);

}  // namespace mpo::sweep
