// The implementation of loadgen/conversation.hpp: multi-turn conversations, drawn from a seed.
#include "loadgen/conversation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace mpo::loadgen {
namespace {

std::int64_t word_count(const std::string& text) {
  if (text.empty()) return 0;
  return 1 + std::count(text.begin(), text.end(), ' ');
}

double draw_think_time_s(const std::optional<LengthDistribution>& ms, std::mt19937_64& rng) {
  return ms ? static_cast<double>(draw_length(*ms, rng)) / 1000.0 : 0.0;
}

// The arguments of one call of the tool (a JSON object as text).
std::string tool_arguments(const std::string& session, std::int32_t turn) {
  return fmt::format(R"({{"query":"{} step {}"}})", session, turn);
}

}  // namespace

std::vector<ServingRequest> multi_turn_workload(const MultiTurnOptions& opts) {
  std::mt19937_64 rng(opts.seed);
  std::vector<Message> shared;
  if (opts.system_prompt_tokens > 0) {
    shared.push_back({"system", synthetic_words(opts.system_prompt_tokens, opts.seed ^ 0x5157e3ULL), {}, {}});
  }
  std::vector<ServingRequest> out;
  for (std::size_t s = 0; s < opts.sessions; ++s) {
    const std::string session = fmt::format("session-{:04}", s + 1);
    const auto turns = static_cast<std::int32_t>(draw_length(opts.turns, rng));
    std::vector<Message> conversation = shared;
    std::int64_t words = 0;
    for (const auto& m : shared) words += word_count(m.content);
    for (std::int32_t t = 1; t <= turns; ++t) {
      const bool tool_turn =
          t > 1 && opts.tool_turn_share > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < opts.tool_turn_share;
      const std::int64_t answer = draw_length(opts.answer_tokens, rng);
      if (tool_turn) {
        // The previous answer was a call of the tool; this turn sends its result.
        if (opts.require_tool_calls) out.back().requires_tool_call = true;
        const std::string call_id = fmt::format("call_{}_{:02}", s + 1, t);
        Message& last = conversation.back();
        last.content = tool_arguments(session, t);
        last.tool_name = kToolName;
        last.tool_call_id = call_id;
        const std::string result = synthetic_words(draw_length(opts.tool_result_tokens, rng), rng());
        conversation.push_back({"tool", result, {}, call_id});
      } else {
        conversation.push_back({"user", synthetic_words(draw_length(opts.user_tokens, rng), rng()), {}, {}});
      }
      ServingRequest r;
      r.id = fmt::format("{}/turn-{:02}", session, t);
      r.session_id = session;
      r.turn = t;
      r.think_time_s = t > 1 ? draw_think_time_s(opts.think_time_ms, rng) : 0.0;
      r.declares_tool = opts.require_tool_calls;
      r.messages = conversation;
      r.max_output_tokens = answer;
      words = 0;
      for (const auto& m : conversation) words += word_count(m.content);
      r.prompt_tokens_estimate = words;
      out.push_back(std::move(r));
      // The reply the next turn sends back: the answer's length in synthetic words.
      conversation.push_back({"assistant", synthetic_words(answer, rng()), {}, {}});
    }
  }
  return out;
}

std::string describe_sessions(const std::vector<ServingRequest>& requests) {
  std::map<std::string, std::int32_t> turns;
  for (const auto& r : requests) {
    if (!r.session_id.empty()) turns[r.session_id] = std::max(turns[r.session_id], r.turn);
  }
  if (turns.empty()) return {};
  std::int32_t lo = turns.begin()->second, hi = lo;
  for (const auto& [id, n] : turns) {
    lo = std::min(lo, n);
    hi = std::max(hi, n);
  }
  const std::string span = lo == hi ? fmt::format("{}", lo) : fmt::format("{}-{}", lo, hi);
  return fmt::format("{} sessions of {} turns ({} requests)", turns.size(), span, requests.size());
}

std::vector<Unit> units_of(const std::vector<ServingRequest>& requests) {
  std::vector<Unit> out;
  for (std::size_t i = 0; i < requests.size();) {
    std::size_t j = i + 1;
    if (!requests[i].session_id.empty()) {
      while (j < requests.size() && requests[j].session_id == requests[i].session_id) ++j;
    }
    out.push_back({i, j});
    i = j;
  }
  return out;
}

}  // namespace mpo::loadgen
