// The implementation of report/held_prompts.hpp.
#include "report/held_prompts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <utility>

#include "core/json.hpp"
#include "core/stats.hpp"
#include "report/interference.hpp"
#include "report/shapes.hpp"

namespace mpo::report {
namespace {}  // namespace

std::vector<PromptWindow> prompt_windows_of(const RowList& rows) {
  std::vector<PromptWindow> out;
  for (const Row* r : rows) {
    const auto first = first_token_ms(*r);
    if (!r->ok() || !r->engine_prompt_ms || *r->engine_prompt_ms <= 0 || !first || !r->prompt_tokens) continue;
    out.push_back(PromptWindow{r->started_at_us, *first, *r->engine_prompt_ms, *r->prompt_tokens});
  }
  return out;
}

std::vector<HeldPrompts> held_prompts(std::span<const PromptWindow> windows, std::string_view source) {
  if (windows.empty()) return {};
  std::int64_t origin_us = INT64_MAX;
  for (const auto& w : windows) origin_us = std::min(origin_us, w.started_at_us);
  // Each request's time to first token and its prompt's window, in ms from the first start.
  struct Span {
    double start = 0, first = 0, prompt_ms = 0;
  };
  std::array<std::vector<Span>, kPromptBands> by_band;
  for (const auto& w : windows) {
    if (w.prompt_tokens < 0 || w.first_token_ms <= 0) continue;
    const double start = static_cast<double>(w.started_at_us - origin_us) / 1000.0;
    by_band[prompt_band_of(w.prompt_tokens)].push_back(Span{start, start + w.first_token_ms, w.prompt_ms});
  }
  std::vector<HeldPrompts> found;
  // From the longest band down, the windows of every band above the one judged.
  std::vector<std::pair<double, double>> longer;
  std::size_t longer_band = 0;  // the lowest band in `longer`
  for (std::size_t band = kPromptBands; band-- > 0;) {
    const auto& spans = by_band[band];
    if (!longer.empty() && spans.size() >= kMinHeldRequests + kMinUnheldRequests) {
      const MergedWindows reading(longer);
      std::vector<double> held_ttft, unheld_ttft, held_prompt, unheld_prompt;
      std::vector<std::pair<double, bool>> ttfts;  // (TTFT, held)
      for (const auto& s : spans) {
        const double ttft = s.first - s.start;
        const bool held = reading.covered(s.start, s.first) >= kHeldShare * ttft;
        (held ? held_ttft : unheld_ttft).push_back(ttft);
        (held ? held_prompt : unheld_prompt).push_back(s.prompt_ms);
        ttfts.emplace_back(ttft, held);
      }
      HeldPrompts h;
      h.held = held_ttft.size();
      h.unheld = unheld_ttft.size();
      h.held_ttft_p50_ms = median_of(std::move(held_ttft)).value_or(0);
      h.unheld_ttft_p50_ms = median_of(std::move(unheld_ttft)).value_or(0);
      if (h.held >= kMinHeldRequests && h.unheld >= kMinUnheldRequests &&
          h.held_ttft_p50_ms >= kHeldTtftRatio * h.unheld_ttft_p50_ms &&
          h.held_ttft_p50_ms - h.unheld_ttft_p50_ms >= kHeldMinExtraMs) {
        h.source = std::string(source);
        h.from_tokens = prompt_band_floor(band);
        h.to_tokens = prompt_band_floor(band + 1);
        h.longer_from_tokens = prompt_band_floor(longer_band);
        h.held_prompt_p50_ms = median_of(std::move(held_prompt)).value_or(0);
        h.unheld_prompt_p50_ms = median_of(std::move(unheld_prompt)).value_or(0);
        h.slowest = std::max<std::size_t>(1, (ttfts.size() + 9) / 10);
        const auto cut = ttfts.begin() + static_cast<std::ptrdiff_t>(h.slowest);
        std::nth_element(ttfts.begin(), cut - 1, ttfts.end(), [](const auto& a, const auto& b) { return a > b; });
        h.slowest_held =
            static_cast<std::size_t>(std::count_if(ttfts.begin(), cut, [](const auto& t) { return t.second; }));
        found.push_back(std::move(h));
      }
    }
    for (const auto& s : spans) longer.emplace_back(s.first - s.prompt_ms, s.first);
    if (!spans.empty()) longer_band = band;
  }
  std::reverse(found.begin(), found.end());
  return found;
}

std::string held_prompts_sentence(const HeldPrompts& h) {
  return fmt::format(
      "first tokens behind longer prompts: {} of {} prompts of {} tokens waited while prompts of {} tokens or more "
      "were being read ({}: those windows covered at least half of their time to first token): TTFT p50 {:.1f} ms "
      "against {:.1f} ms for the {} that met none, the engine's reading of them {:.1f} against {:.1f} ms; {} of the "
      "band's {} slowest first token{}. The engine reads the prompts it holds in shared batches, so a short prompt's "
      "first token waits on a long one's (llama.cpp: --batch-size tokens a batch, from the slots in turn; vLLM: "
      "chunked prefill, where --long-prefill-token-threshold caps a long prompt's share of a step)",
      h.held, h.held + h.unheld, prompt_band_text(h.from_tokens, h.to_tokens), h.longer_from_tokens, h.source,
      h.held_ttft_p50_ms, h.unheld_ttft_p50_ms, h.unheld, h.held_prompt_p50_ms, h.unheld_prompt_p50_ms, h.slowest_held,
      h.slowest, h.slowest == 1 ? "" : "s");
}

std::string held_prompts_evidence(const HeldPrompts& h) {
  return fmt::format(
      "first tokens behind longer prompts ({}): {} of {} prompts of {} tokens waited while prompts of {} tokens or "
      "more were being read, TTFT p50 {:.1f} ms against {:.1f} ms for the others",
      h.source, h.held, h.held + h.unheld, prompt_band_text(h.from_tokens, h.to_tokens), h.longer_from_tokens,
      h.held_ttft_p50_ms, h.unheld_ttft_p50_ms);
}

std::string held_prompts_json(const std::vector<HeldPrompts>& found) {
  std::string out = "[";
  for (const auto& h : found) {
    if (out.size() > 1) out += ',';
    JsonObjectWriter w;
    w.field("from_tokens", h.from_tokens)
        .field("to_tokens", h.to_tokens)
        .field("longer_from_tokens", h.longer_from_tokens)
        .field("source", h.source)
        .field("held", static_cast<std::uint64_t>(h.held))
        .field("unheld", static_cast<std::uint64_t>(h.unheld))
        .field("held_ttft_p50_ms", h.held_ttft_p50_ms)
        .field("unheld_ttft_p50_ms", h.unheld_ttft_p50_ms)
        .field("held_prompt_p50_ms", h.held_prompt_p50_ms)
        .field("unheld_prompt_p50_ms", h.unheld_prompt_p50_ms)
        .field("slowest", static_cast<std::uint64_t>(h.slowest))
        .field("slowest_held", static_cast<std::uint64_t>(h.slowest_held));
    out += std::move(w).finish();
  }
  return out + "]";
}

}  // namespace mpo::report
