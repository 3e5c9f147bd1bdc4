// What `scrape --format md|json` prints: the facts over the widest window the snapshots allow
// (first to last successful scrape of one server instance; one snapshot: since the process
// started), with a restart or counter reset between them said first, never turned into numbers.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engines/facts.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::scrape {

// One gauge over the window's scrapes (step function: each sample holds until the next scrape).
struct GaugeOverWindow {
  engines::Signal signal;
  std::string name;  // "requests waiting", "requests running", "KV pool used", ...
  std::string source;
  std::size_t samples = 0;
  double max = 0;
  double mean = 0;              // time-weighted
  double share_above_zero = 0;  // of the window's time
};

// The queue and load gauges over every successful scrape of one server from `first` to `last`:
// a window in which 4 requests waited for 15 s must not read "0 waiting" because the last scrape
// came after the run (issue 37).
std::vector<GaugeOverWindow> gauges_over_window(std::span<const Snapshot> snapshots, const Snapshot& first,
                                                const Snapshot& last);

struct FactsReport {
  std::size_t scrapes = 0;
  std::size_t failed = 0;
  std::size_t stale = 0;
  const Snapshot* first = nullptr;  // the window's start (nullptr: since the process started)
  const Snapshot* last = nullptr;   // the latest snapshot with signals (nullptr: none)
  std::optional<double> window_seconds;
  std::string window;  // for a person: "since the process started", "12.0 s between scrapes 1 and 13"
  std::string reset;   // why no interval could be formed (a restart, a counter reset, another server)
  // Scrapes refused or answered with an error inside the window of an engine that publishes no
  // process start time
  // (llama.cpp): a restart then would go unseen, and what it counted before it would be missing
  // from the window's differences. "" when none did.
  std::string caution;
  std::vector<std::string> errors;  // failed scrapes, one line each (at most a few)
  std::vector<engines::Fact> facts;
  // What the facts were read from, for readers that judge with the numbers (the report): the
  // counters and histograms as the window's difference, and the gauges over its scrapes. Empty
  // when no interval was formed.
  std::optional<engines::EngineSignals> delta;
  std::vector<GaugeOverWindow> gauges;
};

FactsReport build_facts_report(std::span<const Snapshot> snapshots);
std::string facts_markdown(const FactsReport& r);
std::string facts_json(const FactsReport& r, std::string_view tool_version);

}  // namespace mpo::scrape
