// Reading ledgers: our `modelperfobs.observation.v1` lines and fak's `fak-model-perf/1` lines
// alike, mapped onto one record. Torn, invalid and foreign lines are counted (with their line
// numbers), never fatal; a torn last line (a crash mid-write) is skipped and flagged. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpo::ledger {

struct LedgerRecord {
  std::string source_schema;       // which schema the line carried
  std::string observation_id;
  std::int64_t started_at_us = 0;
  std::optional<std::int64_t> ended_at_us;
  std::optional<std::string> model, response_model, backend, path, operation;
  bool stream = false;
  std::optional<int> http_status;
  std::string outcome;
  std::optional<std::string> error_type, error_message;
  std::optional<double> ttfb_ms, ttft_ms, e2e_ms, tpot_ms, itl_p50_ms, itl_p95_ms, itl_max_ms;
  std::optional<double> output_tokens_per_second, e2e_output_tokens_per_second;
  std::optional<std::int64_t> prompt_tokens, completion_tokens, total_tokens, cached_prompt_tokens;
  std::string token_source = "none";
  std::optional<std::int64_t> in_flight_at_start;
};

struct LineProblem {
  std::uint64_t line = 0;  // 1-based
  std::string reason;
};

struct LedgerRead {
  std::vector<LedgerRecord> records;
  std::uint64_t lines = 0;           // non-empty lines seen
  std::uint64_t fak_lines = 0;       // records from fak-model-perf/1
  std::uint64_t gap_lines = 0;       // modelperfobs.ledger-gap.v1 lines
  std::uint64_t dropped_lines = 0;   // sum of the gap lines' counts: lines the writer lost
  std::uint64_t invalid_lines = 0;   // not JSON, not an object, or missing required fields
  std::uint64_t foreign_lines = 0;   // JSON objects of another schema
  bool torn_last_line = false;       // the text did not end with a newline and its last line is invalid
  std::vector<LineProblem> problems; // the first 20 problems, for messages
};

// Reads a whole ledger text (lines numbered from 1).
LedgerRead read_ledger(std::string_view text);

}  // namespace mpo::ledger
