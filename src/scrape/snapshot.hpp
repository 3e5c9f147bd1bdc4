// One scrape of an engine's /metrics as a record (`modelperfobs.scrape.v1`, one JSON line each):
// when it was scheduled, started and ended, what came back, the server's identity, and the
// canonical signals. A failed or stale scrape is a record too, with its status and error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engines/signals.hpp"
#include "promtext/exposition.hpp"

namespace mpo::scrape {

enum class ScrapeStatus {
  kOk,
  kStale,        // parsed, but it ended after the next scrape was due: it no longer describes its slot
  kHttpError,    // the server answered with a non-2xx status
  kUnreachable,  // connect or read failed
  kTimeout,
  kParseError,  // the body is not a valid exposition
};
std::string_view to_string(ScrapeStatus s);
bool has_signals(ScrapeStatus s);  // ok and stale carry signals

struct Snapshot {
  std::uint64_t seq = 0;  // 1, 2, ... within one run
  std::string source;     // the URL, or "file:PATH"
  std::int64_t scheduled_at_us = 0;
  std::int64_t started_at_us = 0;
  std::int64_t ended_at_us = 0;
  ScrapeStatus status = ScrapeStatus::kOk;
  std::optional<int> http_status;
  std::string error;
  bool not_prometheus_text = false;  // the page was another kind (HTML, JSON): `error` asks whether the URL is right
  std::uint64_t bytes = 0;
  std::optional<promtext::Format> format;
  std::vector<promtext::Problem> problems;
  engines::EngineSignals signals;
};

// What went wrong with a scrape, for a message: its error, or its status where it has none.
std::string failure_text(const Snapshot& s);

// Fills status, error, format, problems and signals from a response body.
void absorb_body(Snapshot& s, std::string_view body);

// Who answered: source, engine, generation, models and process start time, joined. Two snapshots
// with different identities are not one server; without a process start time a restart shows only
// as counters going down.
std::string server_instance_id(const Snapshot& s);

std::string snapshot_json_line(const Snapshot& s);  // one line, no trailing newline

// The snapshots file that goes with a ledger (`proxy --scrape`): "runs/m/model-perf.jsonl" ->
// "runs/m/model-perf.scrape.jsonl".
std::string snapshots_path_for(const std::string& ledger_path);

}  // namespace mpo::scrape
