// `modelperfobs top`: what a running proxy sees, over the last N seconds, as a terminal screen or
// as plain lines. The figures are the report's (report::analyse over the window's ledger lines,
// grouped by model, with the engine's own evidence from its scrapes), so the likely bottleneck is
// the report's ranking, same code. This file turns one frame of them into text. Pure.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "live/engine_evidence.hpp"
#include "report/analysis.hpp"

namespace mpo::live {

// How the screen is arranged; changed by keys.
enum class SortBy { kRequests, kTtftP99, kErrors, kName };
std::string_view to_string(SortBy s);
SortBy next(SortBy s);

struct TopOptions {
  double window_s = 30;
  SortBy sort = SortBy::kRequests;
  std::string focus;  // "" all models; else the model whose bottleneck and sparklines are shown
  bool paused = false;
};

// One refresh: the window's groups (by model) and what else is known.
struct TopFrame {
  std::int64_t now_us = 0;
  std::string source;  // "ledger runs/qwen/model-perf.jsonl"
  // Why the lines could not be read this refresh ("proxy http://127.0.0.1:9464 not answering: ...",
  // "ledger x.jsonl does not exist yet"); empty when they were. The frame then says nothing of the
  // window's requests, and `top --once` exits 1.
  std::string lines_problem;
  // Why the in-flight gauge could not be read (an --admin beside a ledger); empty when it was or
  // none was asked for.
  std::string gauge_problem;
  std::vector<report::GroupStats> groups;           // by model, over the window
  std::map<std::string, std::string> latest_error;  // by model: "http_error 503: The server is busy"
  // Requests in flight now, by model (the proxy's gauge, from its admin listener); empty: unknown.
  std::map<std::string, double> in_flight;
  std::optional<EngineWindow> engine;             // from the scrape file, when there is one
  std::uint64_t lines = 0, unreadable_lines = 0;  // read from the ledger so far
};

// The last values of a few figures per model, one per refresh, for the sparklines.
struct History {
  static constexpr std::size_t kLength = 24;
  std::map<std::string, std::deque<double>> requests_per_s, ttft_p50_ms, output_tokens_per_s;
  void add(const TopFrame& f);
};

// `values` scaled to their largest, one block character each (U+2581..U+2588), the last `width`.
std::string sparkline(const std::deque<double>& values, std::size_t width);

// The screen, `height` lines of at most `width` columns (UTF-8: columns, not bytes).
std::vector<std::string> render_screen(const TopFrame& f, const TopOptions& o, const History& h, int width, int height);
// Off a terminal: one line per model per refresh, for a log.
std::vector<std::string> render_lines(const TopFrame& f, const TopOptions& o);

// The model whose bottleneck the screen names: the focused one, else the busiest.
const report::GroupStats* focused_group(const TopFrame& f, const TopOptions& o);
// The groups in the screen's order.
std::vector<const report::GroupStats*> sorted_groups(const TopFrame& f, SortBy by);

}  // namespace mpo::live
