// Reading ledgers: our `modelperfobs.observation.v1` lines and fak's `fak-model-perf/1` lines
// alike, mapped onto one record. Torn, invalid and foreign lines are counted (with their line
// numbers), never fatal; a torn last line (a crash mid-write) is skipped and flagged. Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace simdjson::dom {
class parser;
}

namespace mpo::ledger {
namespace detail {
struct ScanState;
}

// One ledger line's fields. LedgerRecord owns its strings; a LedgerRecordView's point into the
// decoder's parse of the line and stay valid only until the decoder's next line: what a reader that
// keeps numbers and interned names takes, with no allocation per line.
template <typename Str>
struct BasicLedgerRecord {
  std::string_view source_schema;  // which schema the line carried (a static string)
  Str observation_id;
  std::int64_t started_at_us = 0;
  std::optional<std::int64_t> ended_at_us;
  std::optional<Str> model, response_model, backend, path, operation;
  bool stream = false;
  std::optional<int> http_status;
  Str outcome;
  std::optional<Str> error_type, error_message;
  std::optional<Str> finish_reason;        // the first choice's ("stop", "length", ...)
  std::optional<std::int64_t> max_tokens;  // the output limit the request named
  std::optional<double> ttfb_ms, ttft_ms, e2e_ms, tpot_ms, itl_p50_ms, itl_p95_ms, itl_max_ms;
  std::optional<double> output_tokens_per_second, e2e_output_tokens_per_second;
  std::optional<Str> first_output;  // what the first generated event carried ("tool_calls", ...)
  std::optional<std::int64_t> prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens;
  Str token_source = "none";
  std::optional<std::int64_t> in_flight_at_start;
  std::optional<Str> server_timings;         // raw JSON object the server returned, minified
  std::optional<Str> sweep_point;            // `sweep` lines: the load point ("concurrency=8")
  bool warmup = false;                       // `sweep` lines: a warm-up request
  std::optional<Str> timing_basis;           // proxy lines: "kernel_rx" | "loop"; absent in older ledgers
  std::optional<double> proxy_lag_ms;        // proxy lines: the largest lag of the proxy's reads
  std::optional<double> proxy_lag_at_ms;     // ... and when that read's bytes arrived, ms after started_at
  std::optional<double> proxy_lag_quiet_ms;  // ... and how much of its wait the loop read nothing
  std::optional<Str> trace_id, span_id;      // proxy lines: W3C trace context (docs/OTEL.md)
  std::optional<Str> session_id;             // the conversation (docs/FORMATS.md "Sessions")
  std::optional<std::int64_t> turn;          // the request's turn in it, from 1
  bool operator==(const BasicLedgerRecord&) const = default;
};
using LedgerRecord = BasicLedgerRecord<std::string>;
using LedgerRecordView = BasicLedgerRecord<std::string_view>;

// Between the two: the owned copy of a view, and a view of an owned record (valid while it lives).
LedgerRecord to_owned(const LedgerRecordView& v);
LedgerRecordView view_of(const LedgerRecord& r);

struct LineProblem {
  std::uint64_t line = 0;  // 1-based
  std::string reason;
};

struct LedgerRead {
  std::vector<LedgerRecord> records;
  std::uint64_t lines = 0;            // non-empty lines seen
  std::uint64_t fak_lines = 0;        // records from fak-model-perf/1
  std::uint64_t gap_lines = 0;        // modelperfobs.ledger-gap.v1 lines
  std::uint64_t dropped_lines = 0;    // sum of the gap lines' counts: lines the writer lost
  std::uint64_t invalid_lines = 0;    // not JSON, not an object, or missing required fields
  std::uint64_t foreign_lines = 0;    // JSON objects of another schema
  bool torn_last_line = false;        // the text did not end with a newline and its last line is invalid
  std::vector<LineProblem> problems;  // the first 20 problems, for messages
};

// Reads a whole ledger text (lines numbered from 1).
LedgerRead read_ledger(std::string_view text);

// The same, piece by piece: feed whole lines (or a text of whole lines), take the result. One
// decoder per thread; their results merge in order with merge_into.
class LineDecoder {
 public:
  LineDecoder();
  ~LineDecoder();
  LineDecoder(LineDecoder&&) noexcept;
  // One line without its newline; `last_unterminated`: the file ended inside it (a torn write).
  // `readable_after`: how many bytes past the line's end the caller's memory holds (the parser
  // reads up to 64 past a line; with fewer the line is copied first).
  void line(std::string_view line, std::uint64_t line_no, bool last_unterminated, std::size_t readable_after = 0);
  // Lines of `text` numbered from first_line_no; its last line is torn only when is_end. Returns
  // how many lines it held (a final newline does not start another). `readable_after`: bytes the
  // caller's memory holds past the text's end.
  std::uint64_t text(std::string_view text, std::uint64_t first_line_no, bool is_end, std::size_t readable_after = 0);
  void reserve(std::size_t records) { out_.records.reserve(records); }
  // Hands each record to `sink` instead of keeping it (the counts are kept either way).
  void set_sink(std::function<void(LedgerRecord&&)> sink) { sink_ = std::move(sink); }
  // Hands each record as a view, valid during the call, to `sink` (no copy of its strings).
  void set_view_sink(std::function<void(const LedgerRecordView&)> sink) { view_sink_ = std::move(sink); }
  LedgerRead take() && { return std::move(out_); }
  // For tests: every line through the DOM walk, none read by the scan of our writer's form (the two
  // must agree: ledger/observation_scan.hpp).
  void set_dom_only(bool dom_only) { dom_only_ = dom_only; }

 private:
  void note(std::uint64_t line_no, std::string reason);
  void deliver();
  std::unique_ptr<simdjson::dom::parser> parser_;
  std::unique_ptr<detail::ScanState> scan_;  // what the scan of our lines keeps from line to line
  bool dom_only_ = false;
  std::function<void(LedgerRecord&&)> sink_;
  std::function<void(const LedgerRecordView&)> view_sink_;
  LedgerRecordView view_;  // the line being decoded
  std::string scratch_;    // the minified server_timings the view points at
  std::string padded_;     // a line copied with room to read past its end
  LedgerRead out_;
};

// Appends `from` (whose line numbers start after line_offset lines of `into`'s input) to `into`.
void merge_into(LedgerRead& into, LedgerRead&& from, std::uint64_t line_offset);

// Reads a ledger file in chunks (never the whole file in memory), on up to `threads` threads that
// each take a range of whole lines; the result is what read_ledger gives for the same bytes.
// Errors: the file cannot be opened or read.
struct FileReadOptions {
  unsigned threads = 1;
  // Ranges per thread, taken in turn: no thread idles long at the end (8: a million lines loaded in
  // 0.63-0.70 s here against 0.70-0.81 s with 4; 16 no better).
  unsigned parts_per_thread = 8;
  std::uint64_t min_bytes_per_thread = 16u << 20;  // smaller files are read as one range
  // Grows for a line longer than this. 1 MiB: the parser reads what was just copied while it is
  // still in the core's cache (8 MiB read 6-8% slower over a million lines).
  std::size_t chunk_bytes = 1u << 20;
  // When set, records go here instead of into the result: `part` (< threads * parts_per_thread)
  // is the range, in file order; calls for one part come from one thread, in line order.
  std::function<void(unsigned part, LedgerRecord&&)> sink;
  // When set (and `sink` is not), each record goes here as a view valid during the call.
  std::function<void(unsigned part, const LedgerRecordView&)> view_sink;
};
Result<LedgerRead> read_ledger_file(const std::string& path, const FileReadOptions& opts);

}  // namespace mpo::ledger
