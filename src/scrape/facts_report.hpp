// What `scrape --format md|json` prints: the facts over the widest window the snapshots allow
// (first to last successful scrape of one server instance; one snapshot: since the process
// started), with a restart or counter reset between them said first, never turned into numbers.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "promtext/facts.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::scrape {

struct FactsReport {
  std::size_t scrapes = 0;
  std::size_t failed = 0;
  std::size_t stale = 0;
  const Snapshot* first = nullptr;  // the window's start (nullptr: since the process started)
  const Snapshot* last = nullptr;   // the latest snapshot with signals (nullptr: none)
  std::optional<double> window_seconds;
  std::string window;               // for a person: "since the process started", "12.0 s between scrapes 1 and 13"
  std::string reset;                // why no interval could be formed (a restart, a counter reset, another server)
  std::vector<std::string> errors;  // failed scrapes, one line each (at most a few)
  std::vector<promtext::Fact> facts;
};

FactsReport build_facts_report(std::span<const Snapshot> snapshots);
std::string facts_markdown(const FactsReport& r);
std::string facts_json(const FactsReport& r, std::string_view tool_version);

}  // namespace mpo::scrape
