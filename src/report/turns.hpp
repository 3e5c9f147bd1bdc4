// A group's requests by their turn in a conversation (issue 41; docs/REPORT.md "By turn"): per turn
// index, how many requests, their TTFT, their prompt length and the share of their prompt tokens
// the engine served from its prefix cache; and the cliff, where that share collapses: the first
// turn from which the share is under half of what the earlier turns had (a cache that serves turn 2
// of a conversation but not turn 10 is the commonest latency cliff of agent serving). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "report/rows.hpp"

namespace mpo::report {

struct TurnStats {
  std::uint16_t turn = 0;
  std::size_t requests = 0;
  std::size_t errors = 0;  // requests not ok (a conversation past the context a server allows fails)
  std::optional<Summary> ttft_ms, prompt_tokens;
  std::optional<double> cached_share;  // of the turn's prompt tokens, over requests that say
  // The client's own time before this turn: from the end of the same conversation's previous turn
  // to this one's start (the agent thinking, running a tool, or waiting for its user). Not the
  // engine's time; nullopt for turn 1 and where the previous turn is not in the ledger.
  std::optional<Summary> client_ms;
};

// The engine's KV cache usage (0-1) at a scrape's time, from the proxy's scrape file.
struct KvSample {
  std::int64_t at_us = 0;
  double usage = 0;
};

struct CacheCliff {
  std::uint16_t from_turn = 0;                      // the first turn of the low share
  std::uint16_t before_first = 0, before_last = 0;  // the turns compared with (from turn 2)
  double share_before = 0, share_after = 0;         // pooled over those turns and from the cliff on
  // The engine's KV usage at its highest while the turns from the cliff on ran, and while the turns
  // before it ran (where the scrapes say: vLLM and SGLang do, llama.cpp b10309 has no such gauge).
  std::optional<double> kv_max_after, kv_max_before;
};

// What turns_of can use beyond the rows: which conversation each row is a turn of, and the
// engine's KV usage over time. Either may be null.
struct TurnContext {
  const SessionIndex* sessions = nullptr;
  const std::vector<KvSample>* kv_usage = nullptr;
};

// The likely bottleneck of a band of turns, ranked as the report ranks a group but from the band's
// rows alone (report/analysis.cpp): a conversation's first turn has nothing cached, the turns after
// it should find the earlier ones, and the turns past a cache cliff no longer do.
struct TurnBand {
  std::uint16_t first = 0, last = 0;
  std::size_t requests = 0;
  std::string candidate;  // the top candidate ("prefill", "decode", ...); "" when none was ranked
  double score = 0;       // >= 1: its evidence crosses its threshold
  std::string evidence;   // the first line of its evidence
};

// The conversations (lines linked by their session, three or more turns) whose own cached share
// collapses by the cliff rule, and at which turn each does.
struct ConversationCollapse {
  std::size_t conversations = 0, collapsed = 0;
  std::map<std::uint16_t, std::size_t> from_turn;  // turn -> conversations that collapse from it
};

// The first turn from which every request failed, where an earlier turn had some succeed: the
// conversation outgrew what the server accepts (llama.cpp: "request (561 tokens) exceeds the
// available context size (512 tokens)").
struct FailureCliff {
  std::uint16_t from_turn = 0;
  std::size_t failed = 0;  // requests from that turn on, all failed
};

struct TurnView {
  std::vector<TurnStats> turns;  // by turn, ascending
  std::optional<CacheCliff> cliff;
  std::optional<FailureCliff> failure_cliff;
  std::optional<ConversationCollapse> collapse;  // where the lines name their sessions
  std::vector<TurnBand> bands;                   // filled by the report's analysis
};

// The bands judged apart: turn 1; the turns after it up to the cliff; the turns from the cliff on
// (or every turn after the first, without a cliff). Inclusive [first, last], in order.
std::vector<std::pair<std::uint16_t, std::uint16_t>> turn_bands(const TurnView& v);
// "turns 2-4: prefill (score 1.4): median TTFT ..." or "turn 1: nothing crosses its threshold".
std::string band_sentence(const TurnBand& b);

// Nullopt unless the rows name at least two distinct turns.
std::optional<TurnView> turns_of(const RowList& rows, const TurnContext& context = {});

// "turn 4 onward: every request failed (6 requests), where the turns before it succeeded"
std::string failure_cliff_sentence(const FailureCliff& f);

// "2 of 6 conversations of three or more turns lose their own cache from turn 5 (1), turn 6 (1)"
std::string collapse_sentence(const ConversationCollapse& c);

// "turn 9 onward: cached share 12% of prompt tokens vs 91% at turns 2-8; the engine's KV cache
// 97% full at most then, 41% before"
std::string cliff_sentence(const CacheCliff& c);

// The table's headers and cells, one row per turn: markdown and the page show the same.
std::vector<std::string> turn_headers();
std::vector<std::vector<std::string>> turn_rows(const TurnView& v);
// The group's "turns" member: {"by_turn":[...],"cache_cliff":{...}|null}, or null.
std::string turns_json(const std::optional<TurnView>& v);

}  // namespace mpo::report
