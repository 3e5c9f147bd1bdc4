// A group's requests by their turn in a conversation (issue 41; docs/REPORT.md "By turn"): per turn
// index, how many requests, their TTFT, their prompt length and the share of their prompt tokens
// the engine served from its prefix cache; and the cliff, where that share collapses: the first
// turn from which the share is under half of what the earlier turns had (a cache that serves turn 2
// of a conversation but not turn 10 is the commonest latency cliff of agent serving). Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/stats.hpp"
#include "report/rows.hpp"

namespace mpo::report {

struct TurnStats {
  std::uint16_t turn = 0;
  std::size_t requests = 0;
  std::optional<Summary> ttft_ms, prompt_tokens;
  std::optional<double> cached_share;  // of the turn's prompt tokens, over requests that say
};

struct CacheCliff {
  std::uint16_t from_turn = 0;                      // the first turn of the low share
  std::uint16_t before_first = 0, before_last = 0;  // the turns compared with (from turn 2)
  double share_before = 0, share_after = 0;         // pooled over those turns and from the cliff on
};

struct TurnView {
  std::vector<TurnStats> turns;  // by turn, ascending
  std::optional<CacheCliff> cliff;
};

// Nullopt unless the rows name at least two distinct turns.
std::optional<TurnView> turns_of(const RowList& rows);

// "turn 9 onward: cached share 12% of prompt tokens vs 91% at turns 2-8"
std::string cliff_sentence(const CacheCliff& c);

// The table's headers and cells, one row per turn: markdown and the page show the same.
std::vector<std::string> turn_headers();
std::vector<std::vector<std::string>> turn_rows(const TurnView& v);
// The group's "turns" member: {"by_turn":[...],"cache_cliff":{...}|null}, or null.
std::string turns_json(const std::optional<TurnView>& v);

}  // namespace mpo::report
