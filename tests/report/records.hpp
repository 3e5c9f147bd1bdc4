// Ledger lines for the report's unit tests, built as the proxy writes them.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "ledger/reader.hpp"
#include "report/analysis.hpp"

namespace mpo::report::test_lines {

// An ok (or `outcome`) line started at `start_ms`: its e2e, TTFT (streamed where given), prompt
// tokens and requests in flight at its start; 10 completion tokens from the usage.
inline ledger::LedgerRecord rec(std::int64_t start_ms, double e2e, std::optional<double> ttft, int prompt, int inflight,
                                std::string outcome = "ok") {
  ledger::LedgerRecord r;
  r.observation_id = std::to_string(start_ms);
  r.started_at_us = start_ms * 1000;
  r.ended_at_us = r.started_at_us + static_cast<std::int64_t>(e2e * 1000);
  r.model = "m";
  r.stream = ttft.has_value();
  r.outcome = std::move(outcome);
  r.http_status = r.outcome == "ok" ? 200 : 500;
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.prompt_tokens = prompt;
  r.completion_tokens = 10;
  r.in_flight_at_start = inflight;
  r.token_source = "usage";
  return r;
}

inline const Candidate& candidate(const GroupStats& g, std::string_view name) {
  return *std::find_if(g.ranking.begin(), g.ranking.end(), [&](const Candidate& c) { return c.name == name; });
}

// A streamed llama.cpp request as the proxy records it: the head when its slot starts (after
// `wait_ms`), the first token once the engine's prefill (`prompt_ms`, in its timings) is done.
inline ledger::LedgerRecord llamacpp(int i, double wait_ms, double prompt_ms, int prompt, int inflight) {
  const double ttfb = wait_ms + 1.5;
  auto r = rec(i * 700, ttfb + prompt_ms + 400, ttfb + prompt_ms + 0.4, prompt, inflight);
  r.ttfb_ms = ttfb;
  r.tpot_ms = 2.5;
  r.server_timings = fmt::format(R"({{"cache_n":0,"prompt_n":{},"prompt_ms":{},"predicted_n":160,"predicted_ms":400}})",
                                 prompt, prompt_ms);
  return r;
}

// Issue 37: eight clients on four llama.cpp slots ranked transport first ("the response head, sent
// before any output, takes 1228.4 ms"): the head came at slot start, so TTFB was the queue.
}  // namespace mpo::report::test_lines
