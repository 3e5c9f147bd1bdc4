// Multi-turn conversations (issue 41): sessions of several turns, each turn sending the whole
// conversation so far, as agents and chat front ends do, so the engine's prefix cache can serve
// every earlier turn. Pure and seeded: the same options always give the same requests.
//
// A session's turn k is one ServingRequest whose messages are [the shared system prompt, when
// asked for], then user 1, assistant 1, ..., user k. The assistant messages are synthetic words of
// the turn's answer length, not the engine's own reply: the conversation (and so the workload
// digest) is fixed before anything is sent, and an engine's cache keeps the earlier turn's prompt
// whatever it generated, so turn k+1 finds turn k's whole prompt cached (llama.cpp b10309 does:
// RealLlamaCpp.AConversationsTurnsAreNumberedAndFindTheEarlierTurnsInTheCache).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/workload.hpp"

namespace mpo::loadgen {

struct MultiTurnOptions {
  std::size_t sessions = 16;
  LengthDistribution turns{LengthDistribution::Kind::kConstant, 4, 0};
  LengthDistribution user_tokens{LengthDistribution::Kind::kConstant, 64, 0};    // each new user message
  LengthDistribution answer_tokens{LengthDistribution::Kind::kConstant, 64, 0};  // max_tokens, and the reply sent back
  std::optional<LengthDistribution> think_time_ms;  // the client's time between a turn's end and the next; none: 0
  // Turns after the first whose new message is a tool's result (the previous answer a tool call):
  // this share of them, drawn per turn.
  double tool_turn_share = 0;
  LengthDistribution tool_result_tokens{LengthDistribution::Kind::kConstant, 256, 0};
  // Every turn declares the tool, and the turn before each tool turn requires a call of it
  // (ServingRequest::requires_tool_call); off: the tool is declared from the first tool turn on and
  // the call before it is the workload's word only.
  bool require_tool_calls = false;
  std::int64_t system_prompt_tokens = 0;  // one system prompt shared by every session; 0: none
  std::uint64_t seed = 1;
};

// Requests session by session, turns in order: ids "session-0001/turn-01", session ids
// "session-0001", turns from 1. A turn's prompt_tokens_estimate counts the words of every message
// it sends (one token per word in `simulate`, about three on the Llama tokenizer).
std::vector<ServingRequest> multi_turn_workload(const MultiTurnOptions& opts);

// What a workload's sessions are: "16 sessions of 4 turns (64 requests)"; empty without sessions.
std::string describe_sessions(const std::vector<ServingRequest>& requests);

// The requests split into what is sent as one: a session's turns, in order, or a single request
// (warm-up, single-turn workloads). [begin, end) into the list; a session is consecutive requests
// with the same session_id.
struct Unit {
  std::size_t begin = 0, end = 0;
};
std::vector<Unit> units_of(const std::vector<ServingRequest>& requests);

}  // namespace mpo::loadgen
