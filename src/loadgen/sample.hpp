// One measured request of a sweep or parity run (docs/FAK.md 6.3: the fields of fak's
// `MeasureSSERequest` sample, in its order), plus what this project adds so that a receipt can be
// re-verified from its own contents: when the request was due and when it was sent (offsets from
// the start of the point, so lateness is visible), whether it was a warm-up request, and its
// correlation ID (the ledger line of the same request carries it).
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "ledger/observation.hpp"

namespace mpo::loadgen {

struct SampleUsage {
  std::optional<std::int64_t> prompt_tokens, completion_tokens, total_tokens, cached_tokens;
};

struct Sample {
  std::string id;
  bool ok = false;  // "ok" | "fail"
  std::string error;
  std::string error_class;  // request_encode|request_build|timeout|transport|http_status|stream_read
  std::optional<int> http_status;
  std::string stream_mode;  // "sse" | "non_sse" | ""
  std::optional<double> ttft_ms;
  std::vector<double> itl_ms;
  std::optional<double> tpot_ms;
  double end_to_end_ms = 0;
  std::int64_t output_events = 0;
  std::int64_t output_token_estimate = 0;
  std::optional<std::int64_t> output_tokens_exact;
  std::string output_token_count_basis;  // usage.completion_tokens | stream_content_events | estimated_content_tokens
  std::int64_t prompt_tokens_estimate = 0;
  std::optional<SampleUsage> usage;  // null: no usage object was seen
  // Ours.
  std::string observation_id;
  double scheduled_offset_ms = 0;  // when the request was due, from the start of the point
  double sent_offset_ms = 0;       // when its first byte was written
  bool warmup = false;             // excluded from statistics
  std::string response_model;      // the `model` the server answered with
  std::string response_id;         // the response's id as the server named it (not written in receipts)
  std::string finish_reason;       // the answer's finish reason as the server gave it ("" when none)
  // What its first generated event carried ("content", "reasoning", "tool_calls", "refusal"; ""
  // when none): fak's ttft_ms counts any, and a tool call comes after the tokens before its name.
  std::string first_output;
  std::optional<std::int64_t> max_tokens;  // the output limit the request asked for
  std::optional<int> shard;                // the shard that sent it (`sweep --shard I/N`, kept by `sweep merge`)
};

// Rounds to 3 decimals of a millisecond, as fak does for every time it writes.
double round_ms(double ms);
inline double send_lateness_ms(const Sample& s) { return round_ms(s.sent_offset_ms - s.scheduled_offset_ms); }

// Its first token's time, ms after it was sent: fak's ttft_ms, but none where the first event was a
// tool call (the engine held back the tokens before the function's name: REPORT.md "Tool calls
// first"). What the sweep's TTFT statistics take.
inline std::optional<double> first_token_ms(const Sample& s) {
  return ledger::began_with_tool_call(s.first_output) ? std::nullopt : s.ttft_ms;
}

boost::json::object sample_json(const Sample& s);
Result<Sample> sample_from_json(const boost::json::object& o);
// A receipt's `samples` member (absent: none); `not_object` is the receipt's code for an item that is
// not an object.
Result<std::vector<Sample>> samples_from_json(const boost::json::object& parent, ErrorCode not_object);

}  // namespace mpo::loadgen
