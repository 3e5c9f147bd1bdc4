// A group's requests by the length of their prompt (docs/REPORT.md "By prompt length"). A group that
// mixes short and long prompts (an agent's tool results beside its questions, a retrieved context
// beside a follow-up) mixes shapes in every quantile and in the TTFT fit: the ranking answers for
// the mix, and "who was slow" stays open. The band view shows each shape apart, each band ranked
// from its own requests (report/analysis.cpp). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/stats.hpp"
#include "report/rows.hpp"

namespace mpo::report {

// A band needs this many requests to be ranked (fewer are shown, not judged). Two bands with as
// many and kShapeShare of the requests each, whose median prompts differ by kShapeRatio, with the
// prompts thinning out between them (some bin of a factor of two between the two medians holds
// under kValleyShare of the smaller of the two sides' fullest bins), make a mix: prompts spread
// evenly over a narrower range are one shape. Medians kWideShapeRatio apart or more are shapes
// whatever lies between: quantiles over prompts of 30 and of 3,000 tokens blend costs a hundred
// times apart.
inline constexpr std::size_t kMinBandRequests = 5;
inline constexpr double kShapeShare = 0.10;
inline constexpr double kShapeRatio = 4.0;
inline constexpr double kValleyShare = 0.5;
inline constexpr double kWideShapeRatio = 16.0;

// Bands 0-63, 64-255, ..., 16384-65535, 65536 and more: the band of a prompt length, and a band's
// lower end (its upper end the next band's).
inline constexpr std::size_t kPromptBands = 7;
std::size_t prompt_band_of(std::int64_t tokens);
std::int64_t prompt_band_floor(std::size_t band);
// "1024-4095", or "65536+" where `to` is 0 (no upper end).
std::string prompt_band_text(std::int64_t from, std::int64_t to);

struct PromptBand {
  std::int64_t from = 0, to = 0;  // prompt tokens in [from, to); to 0: no upper end
  std::size_t requests = 0;
  std::size_t errors = 0;  // requests not ok
  std::optional<Summary> prompt_tokens, completion_tokens, ttft_ms, tpot_ms, itl_p95_ms, e2e_ms;
  // The band's own likely bottleneck, as TurnBand's: "" when it was not ranked (too few requests).
  std::string candidate;
  double score = 0;
  std::string evidence;
};

// The rows that name their prompt length, by bands of powers of four ([0, 64), [64, 256), ...,
// [65536, no end)), each band with its figures but not its ranking; empty unless the rows mix
// shapes (above).
std::vector<std::pair<PromptBand, RowList>> prompt_length_bands(const RowList& rows);

// "prompts 1024-4095 tokens (16 requests): prefill (score 1.5): ..." or "...: nothing crosses its
// threshold" or "...: too few requests to rank".
std::string prompt_band_sentence(const PromptBand& b);
std::vector<std::string> prompt_band_headers();
std::vector<std::vector<std::string>> prompt_band_rows(const std::vector<PromptBand>& bands);
// The JSON array (empty: the rows do not mix shapes).
std::string prompt_bands_json(const std::vector<PromptBand>& bands);

}  // namespace mpo::report
