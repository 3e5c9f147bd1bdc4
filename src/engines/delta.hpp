// Two snapshots' signals as one interval: counters and histograms become their increase, gauges
// keep the later value. A restart (the process start time changed) or any counter or histogram
// that went down is a reset: no delta at all, never a negative or silently restarted count.
#pragma once

#include "core/result.hpp"
#include "engines/signals.hpp"

namespace mpo::engines {

// Errors: "scrape.reset" (restart or a decreasing counter), "scrape.identity" (another engine).
Result<EngineSignals> delta_signals(const EngineSignals& before, const EngineSignals& after);

}  // namespace mpo::engines
