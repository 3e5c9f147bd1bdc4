// From what this project records to attribution's neutral inputs: scrape snapshots (any engine the
// catalogs know) to MetricsSnapshot, ledger lines to RequestWindow, and the windows to grade.
// Pure.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "attribution/attribution.hpp"
#include "core/result.hpp"
#include "ledger/reader.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::attribution {

// Neutral counters from the engine's signals: requests (total, or finished + failed), prefix-cache
// hits and queries (tokens on vLLM V1), preemptions, queue_events (requests whose queue time went
// past the queue-time histogram's lowest bound) and queue_time_seconds (its sum), prompt and
// generation tokens. cache_evictions: no engine in the catalogs publishes one; it stays absent.
MetricsSnapshot neutral_snapshot(const scrape::Snapshot& s);

// A ledger line as a request window; what the server returned for this request in its response
// (usage cached tokens; llama.cpp timings.cache_n) becomes its own correlated evidence.
RequestWindow request_window(const ledger::LedgerRecord& r);

enum class WindowMode { kConsecutive, kPerRequest, kExplicit };
struct WindowChoice {
  WindowMode mode = WindowMode::kConsecutive;
  std::int64_t from_us = 0, to_us = 0;  // kExplicit
};
// "auto" (consecutive snapshots), "per-request" (for each request, the last snapshot that ended at
// or before its start to the first that began at or after its end), or "FROM,TO" (RFC 3339: the
// same around FROM and TO). A snapshot's counters are read somewhere inside its scrape, so only a
// scrape wholly before or after a moment is on that side of it.
Result<WindowChoice> parse_window(std::string_view text);

struct Window {
  std::size_t before = 0, after = 0;      // indexes into the snapshots, ordered by time
  std::vector<std::string> for_requests;  // per-request mode: whose enclosing window this is
};
// The snapshot pairs to grade, in time order, de-duplicated. `snapshots` must be sorted by
// scraped_at (sort_snapshots).
std::vector<Window> choose_windows(const std::vector<MetricsSnapshot>& snapshots,
                                   const std::vector<RequestWindow>& requests, const WindowChoice& choice);
void sort_snapshots(std::vector<MetricsSnapshot>& snapshots);

struct GradedWindow {
  Window window;
  AttributionResult result;
};

// Whether a ledger line's call runs inference on the engine, and so may move its counters: not a
// model list, and not a call of another path that counted no token and saw no first token (health
// checks, /tokenize, /props, /metrics). Embeddings, rerank and score do: they read a prompt.
bool runs_inference(const ledger::LedgerRecord& r);

struct AttributionRun {
  std::vector<MetricsSnapshot> snapshots;
  std::vector<RequestWindow> requests;
  std::vector<GradedWindow> windows;
  // The calls left out (they run no inference), by operation; nullopt where every line was taken
  // (the rule of documents written before 2026-12-06, which `attribute --verify` re-derives so).
  std::optional<std::map<std::string, std::size_t>> left_out;
};
// Everything: neutral inputs, windows, one attribution per window (staleness against the latest
// end of the window's own requests, when max_scrape_age_us > 0). Deterministic under any order of
// the inputs. The requests are the lines that run inference (`every_line`: all of them, as before
// 2026-12-06): a health check or a /tokenize call beside one request made its window "multiple
// observed requests" and its grade cohort-only.
AttributionRun attribute_run(std::vector<scrape::Snapshot> snapshots, const std::vector<ledger::LedgerRecord>& records,
                             const WindowChoice& choice, std::int64_t max_scrape_age_us, bool every_line = false);

}  // namespace mpo::attribution
