// The implementation of report/shapes.hpp.
#include "report/shapes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <vector>

#include "core/json.hpp"

namespace mpo::report {
namespace {

constexpr std::size_t kBands = kPromptBands;
std::size_t band_of(std::int64_t tokens) { return prompt_band_of(tokens); }
std::int64_t band_floor(std::size_t band) { return prompt_band_floor(band); }

template <typename T>
std::optional<Summary> summary_of(const RowList& rs, Maybe<T> Row::*field) {
  std::vector<double> v;
  for (const auto* r : rs) {
    if (r->*field) v.push_back(static_cast<double>(*(r->*field)));
  }
  return summarize(std::move(v));
}

std::string range_text(const PromptBand& b) { return prompt_band_text(b.from, b.to); }

// Whether the prompts thin out between two shapes' medians: counted in bins of a factor of two,
// some bin between the medians' bins holds under kValleyShare of the smaller of the two sides'
// peaks (each side's fullest bin, from its median's bin outwards). Prompts spread evenly
// over a range have no such valley however far apart two bands' medians lie (the demo's 58 to 258
// tokens in even steps: 14, 17, 44, 11 a bin); two shapes of traffic have one (a chat's questions
// and an agent's tool results: nothing between).
bool valley_between(const RowList& rows, double shortest, double longest) {
  constexpr std::size_t kBins = 40;
  const auto bin_of = [](double tokens) {
    return tokens < 1
               ? std::size_t{0}
               : std::min(kBins - 1, static_cast<std::size_t>(std::bit_width(static_cast<std::uint64_t>(tokens))));
  };
  std::array<std::size_t, kBins> counts{};
  for (const Row* r : rows) {
    if (r->prompt_tokens && *r->prompt_tokens >= 0) ++counts[bin_of(*r->prompt_tokens)];
  }
  const std::size_t left = bin_of(shortest), right = bin_of(longest);
  if (right <= left + 1) return true;  // no bin between: nothing says they are one
  const auto begin = counts.begin();
  const std::size_t left_peak = *std::max_element(begin, begin + static_cast<std::ptrdiff_t>(left) + 1);
  const std::size_t right_peak = *std::max_element(begin + static_cast<std::ptrdiff_t>(right), counts.end());
  const std::size_t valley =
      *std::min_element(begin + static_cast<std::ptrdiff_t>(left) + 1, begin + static_cast<std::ptrdiff_t>(right));
  return static_cast<double>(valley) < kValleyShare * static_cast<double>(std::min(left_peak, right_peak));
}

}  // namespace

std::size_t prompt_band_of(std::int64_t tokens) {
  std::size_t band = 0;
  for (std::int64_t floor = 64; band + 1 < kPromptBands && tokens >= floor; floor *= 4) ++band;
  return band;
}

std::string prompt_band_text(std::int64_t from, std::int64_t to) {
  return to == 0 ? fmt::format("{}+", from) : fmt::format("{}-{}", from, to - 1);
}

std::int64_t prompt_band_floor(std::size_t band) { return band == 0 ? 0 : std::int64_t{64} << (2 * (band - 1)); }

std::vector<std::pair<PromptBand, RowList>> prompt_length_bands(const RowList& rows) {
  // A band that is a shape of the traffic: requests enough, and a share of them.
  std::size_t known = 0;
  std::array<std::size_t, kBands> counts{};
  for (const Row* r : rows) {
    if (r->prompt_tokens && *r->prompt_tokens >= 0) ++counts[band_of(*r->prompt_tokens)], ++known;
  }
  const auto a_shape = [&](std::size_t n) {
    return n >= kMinBandRequests && static_cast<double>(n) >= kShapeShare * static_cast<double>(known);
  };
  // Most groups are one shape: counted first, without copying a row.
  if (std::count_if(counts.begin(), counts.end(), a_shape) < 2) return {};
  std::array<RowList, kBands> by_band;
  for (const Row* r : rows) {
    if (r->prompt_tokens && *r->prompt_tokens >= 0) by_band[band_of(*r->prompt_tokens)].push_back(r);
  }
  // The shapes' median prompts, before any band's figures: a spread that is no mix costs no more.
  std::optional<double> shortest, longest;
  for (const RowList& rs : by_band) {
    if (!a_shape(rs.size())) continue;
    std::vector<double> prompts;
    prompts.reserve(rs.size());
    for (const Row* r : rs) prompts.push_back(static_cast<double>(*r->prompt_tokens));
    const auto mid = prompts.begin() + static_cast<std::ptrdiff_t>(prompts.size() / 2);
    std::nth_element(prompts.begin(), mid, prompts.end());  // the median, near enough for a ratio of four
    if (!shortest) shortest = *mid;
    longest = *mid;
  }
  if (!shortest || *longest < kShapeRatio * std::max(*shortest, 1.0)) return {};
  // Medians far enough apart are shapes whatever lies between (an agent's prompts over decades);
  // nearer ones only with a valley between them.
  if (*longest < kWideShapeRatio * std::max(*shortest, 1.0) && !valley_between(rows, *shortest, *longest)) return {};
  std::vector<std::pair<PromptBand, RowList>> out;
  for (std::size_t band = 0; band < kBands; ++band) {
    RowList& rs = by_band[band];
    if (rs.empty()) continue;
    PromptBand b;
    b.from = band_floor(band);
    b.to = band + 1 < kBands ? band_floor(band + 1) : 0;
    b.requests = rs.size();
    b.errors = static_cast<std::size_t>(std::count_if(rs.begin(), rs.end(), [](const Row* r) { return !r->ok(); }));
    b.prompt_tokens = summary_of(rs, &Row::prompt_tokens);
    b.completion_tokens = summary_of(rs, &Row::completion_tokens);
    b.ttft_ms = summary_of(rs, &Row::ttft_ms);
    b.tpot_ms = summary_of(rs, &Row::tpot_ms);
    b.itl_p95_ms = summary_of(rs, &Row::itl_p95_ms);
    b.e2e_ms = summary_of(rs, &Row::e2e_ms);
    out.emplace_back(std::move(b), std::move(rs));
  }
  return out;
}

std::string prompt_band_sentence(const PromptBand& b) {
  const std::string band =
      fmt::format("prompts of {} tokens ({} request{})", range_text(b), b.requests, b.requests == 1 ? "" : "s");
  if (b.requests < kMinBandRequests) return band + ": too few requests to rank";
  if (b.candidate.empty() || b.score < 1) return band + ": nothing crosses its threshold";
  return fmt::format("{}: {} (score {:.1f}){}", band, b.candidate, b.score,
                     b.evidence.empty() ? "" : ": " + b.evidence);
}

std::vector<std::string> prompt_band_headers() {
  return {"prompt tokens", "requests",    "errors",      "prompt p50",  "output p50",
          "TTFT p50 ms",   "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "e2e p99 ms"};
}

std::vector<std::vector<std::string>> prompt_band_rows(const std::vector<PromptBand>& bands) {
  auto num = [](const std::optional<Summary>& s, double Summary::*q, int digits) {
    return s ? fmt::format("{:.{}f}", (*s).*q, digits) : std::string("-");
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& b : bands) {
    rows.push_back(
        {range_text(b), std::to_string(b.requests), std::to_string(b.errors), num(b.prompt_tokens, &Summary::p50, 0),
         num(b.completion_tokens, &Summary::p50, 0), num(b.ttft_ms, &Summary::p50, 1), num(b.ttft_ms, &Summary::p99, 1),
         num(b.tpot_ms, &Summary::p50, 1), num(b.tpot_ms, &Summary::p99, 1), num(b.e2e_ms, &Summary::p99, 1)});
  }
  return rows;
}

std::string prompt_bands_json(const std::vector<PromptBand>& bands) {
  std::string out = "[";
  for (const auto& b : bands) {
    if (out.size() > 1) out += ',';
    JsonObjectWriter w;
    w.field("from_tokens", b.from);
    if (b.to == 0) {
      w.null_field("to_tokens");
    } else {
      w.field("to_tokens", b.to);
    }
    w.field("requests", static_cast<std::uint64_t>(b.requests))
        .field("errors", static_cast<std::uint64_t>(b.errors))
        .optional_field("prompt_tokens_p50", quantile_of(b.prompt_tokens, &Summary::p50))
        .optional_field("completion_tokens_p50", quantile_of(b.completion_tokens, &Summary::p50))
        .optional_field("ttft_p50_ms", quantile_of(b.ttft_ms, &Summary::p50))
        .optional_field("ttft_p99_ms", quantile_of(b.ttft_ms, &Summary::p99))
        .optional_field("tpot_p50_ms", quantile_of(b.tpot_ms, &Summary::p50))
        .optional_field("tpot_p99_ms", quantile_of(b.tpot_ms, &Summary::p99))
        .optional_field("itl_p95_p99_ms", quantile_of(b.itl_p95_ms, &Summary::p99))
        .optional_field("e2e_p99_ms", quantile_of(b.e2e_ms, &Summary::p99));
    if (!b.candidate.empty() && b.score >= 1) {
      w.field("likely_bottleneck", b.candidate).field("score", b.score).field("evidence", b.evidence);
    } else {
      w.null_field("likely_bottleneck");
    }
    out += std::move(w).finish();
  }
  return out + "]";
}

}  // namespace mpo::report
