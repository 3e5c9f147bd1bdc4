// First tokens held behind longer prompts (docs/REPORT.md "First tokens behind longer prompts"). An
// engine reads the prompts of the requests it holds in shared batches: llama.cpp fills a batch of
// up to --batch-size tokens from its slots in turn, vLLM's scheduler (chunked prefill) a step of up
// to --max-num-batched-tokens. A short prompt that comes while a long one is being read waits for
// the long one's batches, before its own reading begins or inside it, and its first token comes
// nearly as late as the long one's. A median over the short prompts hides it: it is their TTFT
// tail. The engine's own prompt windows (llama.cpp's timings.prompt_ms, vLLM's spans) say when each
// prompt was read; a request counts as held where the windows of prompts of a longer band
// (report/shapes.hpp) cover at least half of its time to first token, and its band's requests that
// no longer prompt covered so are what it is compared with. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/rows.hpp"

namespace mpo::report {

inline constexpr double kHeldShare = 0.5;             // of a request's time to first token
inline constexpr std::size_t kMinHeldRequests = 2;    // a finding needs as many held
inline constexpr std::size_t kMinUnheldRequests = 3;  // and as many of its band not held to compare with
inline constexpr double kHeldTtftRatio = 2.0;         // held TTFT p50 at least this many times the others'
inline constexpr double kHeldMinExtraMs = 50;         // and at least this much longer

// One request as the engine read it.
struct PromptWindow {
  std::int64_t started_at_us = 0;  // the request's start (the line's)
  double first_token_ms = 0;       // its first token, after its start
  double prompt_ms = 0;            // the engine's reading of its prompt, ending at its first token
  std::int64_t prompt_tokens = 0;
};

// The ok rows that carry the engine's prompt time (llama.cpp's timings.prompt_ms), a first token and
// a prompt length.
std::vector<PromptWindow> prompt_windows_of(const RowList& rows);

struct HeldPrompts {
  std::string source;                           // where the prompt windows came from
  std::int64_t from_tokens = 0, to_tokens = 0;  // the band held, [from, to)
  std::int64_t longer_from_tokens = 0;          // the longer prompts: the lowest band above with any
  std::size_t held = 0, unheld = 0;             // its requests held, and those no longer prompt held
  double held_ttft_p50_ms = 0, unheld_ttft_p50_ms = 0;
  double held_prompt_p50_ms = 0, unheld_prompt_p50_ms = 0;  // the engine's reading of them
  // The band's slowest tenth of first tokens (one at least), and how many of them were held.
  std::size_t slowest = 0, slowest_held = 0;
};

// Each band whose held requests' TTFT p50 is kHeldTtftRatio times and kHeldMinExtraMs over its
// other requests', with kMinHeldRequests and kMinUnheldRequests of them; shortest band first.
std::vector<HeldPrompts> held_prompts(std::span<const PromptWindow> windows, std::string_view source);

// "first tokens behind longer prompts: 3 of 6 prompts of 0-63 tokens ...", and a short form for a
// candidate's evidence.
std::string held_prompts_sentence(const HeldPrompts& h);
std::string held_prompts_evidence(const HeldPrompts& h);
std::string held_prompts_json(const std::vector<HeldPrompts>& found);

}  // namespace mpo::report
