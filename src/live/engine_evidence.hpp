// The engine's own numbers over a window of its /metrics snapshots (the proxy's `--scrape` file):
// speculative-decoding acceptance, the queue and load gauges, the queue-time histogram and
// preemptions, as the report's ranking reads them (report::EngineEvidence). Shared by `report` and
// `top`. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/analysis.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::live {

struct EngineWindow {
  std::optional<report::EngineEvidence> evidence;  // nullopt: nothing of these in the window
  std::string no_window;                           // why the snapshots form no window ("" when they do)
  std::string caution;  // failed scrapes inside the window of an engine with no start time (scrape/facts_report.hpp)
  // The latest snapshot's gauges (what `top` shows as "now"): nullopt where the engine has none.
  std::optional<double> waiting_now, running_now, kv_usage_now;
};

// `snapshots`: those of the window, in order.
EngineWindow engine_window(const std::vector<scrape::Snapshot>& snapshots);

}  // namespace mpo::live
