// Decode held up by other requests' prompts (docs/REPORT.md "Decode behind other requests'
// prompts"). An engine that reads a prompt in the same batches as other requests' decode steps
// (llama.cpp puts a prompt chunk of up to --ubatch-size tokens beside them; vLLM's chunked prefill
// up to --max-num-batched-tokens) makes each such step last as long as the chunk: a short request
// decoding while a long prompt is read waits on it token after token. The engine's own prefill
// times (llama.cpp's timings.prompt_ms) say when each prompt was read. What a request lost to them
// is its decode time beyond its own median gap between chunks (its pace, which already holds what
// batching beside other decodes costs), counted only within other requests' prompt windows. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "report/rows.hpp"

namespace mpo::report {

// Where the engine produced a row's first token, ms after its start: its TTFT where streamed, else
// e2e less the engine's own decode time (llama.cpp's timings.predicted_ms); nullopt without either.
std::optional<double> first_token_ms(const Row& r);

// The engine's own decode per token of an ok request whose line dates no first token (not streamed,
// or a tool call first): llama.cpp's timings.predicted_ms
// over the tokens after the first; nullopt without them (or with fewer than two tokens).
std::optional<double> engine_decode_per_token_ms(const Row& r);

// A decode counts as overlapped where other requests' prefill covered at least this share of it.
inline constexpr double kOverlappedShare = 0.10;
// A decode this much covered has the slowed gap for its own median: its loss is counted beyond the
// pace of the decodes outside other prompts' windows instead.
inline constexpr double kMostlyCoveredShare = 0.5;
// A median gap under this is no decode pace: tokens that came in bursts (a speculating engine sends a
// step's accepted tokens at once: llama.cpp b10309 with a draft, ITL p50 0.0 ms at 3.9 tokens a step
// and TPOT 4.2 ms). Such a decode is not judged: against a pace of 0 every covered ms would count
// as lost.
inline constexpr double kMinPaceMs = 0.1;

// Windows of time, [from, to) in ms, merged into one timeline (two that overlap count once): how
// much of any span they cover, in O(log n).
class MergedWindows {
 public:
  MergedWindows() = default;
  explicit MergedWindows(std::vector<std::pair<double, double>> windows);
  bool empty() const { return merged_.empty(); }
  double covered(double from, double to) const { return to > from ? covered_before(to) - covered_before(from) : 0; }

 private:
  double covered_before(double x) const;           // the windows' ms before x
  std::vector<std::pair<double, double>> merged_;  // disjoint, ascending
  std::vector<double> before_;                     // the merged windows' ms before each
};

// Other requests' prefill windows, merged into one timeline (so two prompts read at once count
// once), from the rows that carry the engine's prefill time. A request's own window ends where its
// decode begins, so the merged timeline serves every request.
class PrefillOverlap {
 public:
  // The windows from the rows' own prefill times (llama.cpp's timings.prompt_ms), or where no row
  // carries one, `traced`: [start, end) in wall µs from the engine's spans (`report --traces`),
  // named by `traced_source`.
  explicit PrefillOverlap(const RowList& rows, std::span<const std::pair<std::int64_t, std::int64_t>> traced = {},
                          std::string traced_source = {});
  std::size_t prefill_windows() const { return windows_; }
  const std::string& source() const { return source_; }  // "llama.cpp timings.prompt_ms", ...
  // How many ms of a decoding row's decode (first token to end) the windows cover; nullopt for a
  // row that is not decoding (ok, streamed, a first token, an end, its median gap, two or more
  // output tokens).
  std::optional<double> covered_ms(const Row& r) const;

 private:
  double at(const Row& r, double ms) const;
  std::int64_t origin_us_ = 0;
  std::size_t windows_ = 0;
  std::string source_;
  MergedWindows merged_;  // ms from origin_us_
};

struct DecodeInterference {
  std::string source;                        // where the prefill windows came from
  std::size_t decoding = 0, overlapped = 0;  // decodes considered, and those overlapped
  std::optional<double> overlapped_tpot_p50_ms, others_tpot_p50_ms;
  double overlapped_itl_p50_ms = 0;  // the overlapped decodes' own median gaps, p50
  // The overlapped decodes' time beyond their own pace within other requests' prompt windows, and
  // the decoding requests' whole time (e2e): the share is what other prompts cost them. A long
  // prompt's own short decode held up a little weighs little beside its prefill.
  double lost_ms = 0, e2e_ms = 0;
  double share() const { return e2e_ms > 0 ? lost_ms / e2e_ms : 0; }
};

// Whether other requests' prompt windows covered at least kOverlappedShare of a decoding row's
// decode (its first token to its end): false for a row that is not decoding.
bool decoded_behind_prompts(const Row& r, const PrefillOverlap& overlap);

// Nullopt unless `rows` hold an overlapped decode that lost time (`overlap` from the whole group,
// so that a subset of it sees the prompts of the rest).
std::optional<DecodeInterference> decode_interference(const RowList& rows, const PrefillOverlap& overlap);

}  // namespace mpo::report
