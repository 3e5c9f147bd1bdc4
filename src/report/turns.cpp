// The implementation of report/turns.hpp: a group's requests by turn, and the cache cliff.
#include "report/turns.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <map>

#include "core/json.hpp"

namespace mpo::report {

namespace {

// Prompt and cached tokens of the requests that state both: a pooled share, never a mean of shares.
struct Tokens {
  double prompt = 0, cached = 0;
  std::optional<double> share() const {
    if (!(prompt > 0)) return std::nullopt;
    return cached / prompt;
  }
};

// The share must fall below this fraction of the earlier turns' share, and those must have had at
// least kCliffMinBefore of their prompts cached, for a cliff to be named.
constexpr double kCliffFraction = 0.5;
constexpr double kCliffMinBefore = 0.3;

std::optional<CacheCliff> find_cliff(const std::vector<TurnStats>& turns,
                                     const std::map<std::uint16_t, Tokens>& tokens) {
  // From turn 2: the first turn of a conversation has nothing earlier to find in the cache. One pass
  // in turn order: `before` pools turns 2 up to the candidate, `after` is the total less that.
  Tokens total;
  for (const auto& [turn, tok] : tokens) {
    if (turn >= 2) total.prompt += tok.prompt, total.cached += tok.cached;
  }
  Tokens before;
  std::uint16_t first = 0, last = 0;
  for (const auto& t : turns) {
    if (t.turn < 2) continue;
    if (t.turn >= 3) {
      const Tokens after{total.prompt - before.prompt, total.cached - before.cached};
      const auto b = before.share(), a = after.share();
      if (b && a && t.cached_share && *b >= kCliffMinBefore && *t.cached_share < kCliffFraction * *b &&
          *a < kCliffFraction * *b) {
        return CacheCliff{t.turn, first, last, *b, *a};
      }
    }
    const Tokens& tok = tokens.at(t.turn);
    before.prompt += tok.prompt, before.cached += tok.cached;
    if (first == 0) first = t.turn;
    last = t.turn;
  }
  return std::nullopt;
}

// Each conversation's turns (by the session hash of the index), a row per turn.
using Conversations = std::map<std::uint64_t, std::map<std::uint16_t, const Row*>>;

Conversations conversations_of(const RowList& rows, const SessionIndex* sessions) {
  Conversations out;
  if (sessions == nullptr) return out;
  for (const Row* r : rows) {
    if (auto it = sessions->find(r); it != sessions->end() && r->turn > 0) out[it->second][r->turn] = r;
  }
  return out;
}

// Per turn, the client's time before it: the gap from the end of the same conversation's turn
// before (its line must be in `rows`) to its start, in ms.
std::map<std::uint16_t, std::vector<double>> client_gaps(const Conversations& conversations) {
  std::map<std::uint16_t, std::vector<double>> out;
  for (const auto& [session, turns] : conversations) {
    for (const auto& [turn, r] : turns) {
      if (turn < 2) continue;
      const auto prev = turns.find(static_cast<std::uint16_t>(turn - 1));
      if (prev == turns.end() || !prev->second->ended_at_us) continue;
      const std::int64_t gap = r->started_at_us - *prev->second->ended_at_us;
      if (gap >= 0) out[turn].push_back(static_cast<double>(gap) / 1000.0);
    }
  }
  return out;
}

// The conversations whose own cached share collapses, by the cliff rule applied to each alone.
ConversationCollapse collapses_of(const Conversations& conversations) {
  ConversationCollapse out;
  for (const auto& [session, turns] : conversations) {
    if (turns.size() < 3) continue;
    ++out.conversations;
    std::vector<TurnStats> stats;
    std::map<std::uint16_t, Tokens> tokens;
    for (const auto& [turn, r] : turns) {
      Tokens& tok = tokens[turn];
      if (r->prompt_tokens && r->cached_prompt_tokens) {
        tok.prompt = static_cast<double>(*r->prompt_tokens);
        tok.cached = static_cast<double>(*r->cached_prompt_tokens);
      }
      TurnStats t;
      t.turn = turn;
      t.cached_share = tok.share();
      stats.push_back(t);
    }
    if (const auto cliff = find_cliff(stats, tokens)) {
      ++out.collapsed;
      ++out.from_turn[cliff->from_turn];
    }
  }
  return out;
}

// The highest KV usage scraped between the first start and the last end of the rows whose turn
// is in [from, to].
std::optional<double> kv_max_during(const RowList& rows, std::uint16_t from, std::uint16_t to,
                                    const std::vector<KvSample>& kv) {
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const Row* r : rows) {
    if (r->turn < from || r->turn > to) continue;
    first = std::min(first, r->started_at_us);
    last = std::max(last, r->ended_at_us.value_or(r->started_at_us));
  }
  std::optional<double> out;
  for (const auto& k : kv) {
    if (k.at_us >= first && k.at_us <= last) out = std::max(out.value_or(0.0), k.usage);
  }
  return out;
}

std::optional<FailureCliff> find_failure_cliff(const std::vector<TurnStats>& turns) {
  // The longest run of turns at the end whose every request failed; the turn before it had some
  // succeed (else the run would be longer). One pass from the end: a ledger may hold many turns.
  std::size_t from = turns.size();
  std::size_t failed = 0;
  while (from > 0 && turns[from - 1].errors == turns[from - 1].requests) failed += turns[--from].errors;
  if (from == 0 || from == turns.size()) return std::nullopt;
  return FailureCliff{turns[from].turn, failed};
}

}  // namespace

std::optional<TurnView> turns_of(const RowList& rows, const TurnContext& context) {
  std::map<std::uint16_t, RowList> by_turn;
  for (const Row* r : rows) {
    if (r->turn > 0) by_turn[r->turn].push_back(r);
  }
  if (by_turn.size() < 2) return std::nullopt;
  TurnView v;
  std::map<std::uint16_t, Tokens> tokens;
  const Conversations conversations = conversations_of(rows, context.sessions);
  auto gaps = client_gaps(conversations);
  for (const auto& [turn, rs] : by_turn) {
    TurnStats s;
    s.turn = turn;
    s.requests = rs.size();
    std::vector<double> ttft, prompt;
    Tokens& tok = tokens[turn];
    for (const Row* r : rs) {
      if (!r->ok()) ++s.errors;
      if (r->ttft_ms) ttft.push_back(*r->ttft_ms);
      if (r->prompt_tokens) prompt.push_back(static_cast<double>(*r->prompt_tokens));
      if (r->prompt_tokens && r->cached_prompt_tokens) {
        tok.prompt += static_cast<double>(*r->prompt_tokens);
        tok.cached += static_cast<double>(*r->cached_prompt_tokens);
      }
    }
    s.ttft_ms = summarize(std::move(ttft));
    s.prompt_tokens = summarize(std::move(prompt));
    s.cached_share = tok.share();
    if (auto g = gaps.find(turn); g != gaps.end()) s.client_ms = summarize(std::move(g->second));
    v.turns.push_back(std::move(s));
  }
  v.cliff = find_cliff(v.turns, tokens);
  v.failure_cliff = find_failure_cliff(v.turns);
  if (!conversations.empty()) v.collapse = collapses_of(conversations);
  if (v.cliff && context.kv_usage && !context.kv_usage->empty()) {
    v.cliff->kv_max_after = kv_max_during(rows, v.cliff->from_turn, UINT16_MAX, *context.kv_usage);
    v.cliff->kv_max_before = kv_max_during(rows, v.cliff->before_first, v.cliff->before_last, *context.kv_usage);
  }
  return v;
}

std::string cliff_sentence(const CacheCliff& c) {
  const std::string before = c.before_first == c.before_last
                                 ? fmt::format("turn {}", c.before_first)
                                 : fmt::format("turns {}-{}", c.before_first, c.before_last);
  std::string out = fmt::format("turn {} onward: cached share {:.0f}% of prompt tokens vs {:.0f}% at {}", c.from_turn,
                                100 * c.share_after, 100 * c.share_before, before);
  if (c.kv_max_after) {
    out += fmt::format("; the engine's KV cache {:.0f}% full at most then", 100 * *c.kv_max_after);
    if (c.kv_max_before) out += fmt::format(", {:.0f}% before", 100 * *c.kv_max_before);
  }
  return out;
}

std::vector<std::pair<std::uint16_t, std::uint16_t>> turn_bands(const TurnView& v) {
  std::vector<std::pair<std::uint16_t, std::uint16_t>> out;
  if (v.turns.empty()) return out;
  const std::uint16_t first = v.turns.front().turn, last = v.turns.back().turn;
  if (first == 1) out.emplace_back(1, 1);
  const std::uint16_t from = std::max<std::uint16_t>(first, 2);
  if (v.cliff && v.cliff->from_turn > from) {
    out.emplace_back(from, static_cast<std::uint16_t>(v.cliff->from_turn - 1));
    out.emplace_back(v.cliff->from_turn, last);
  } else if (last >= from) {
    out.emplace_back(from, last);
  }
  return out;
}

std::string band_sentence(const TurnBand& b) {
  const std::string turns =
      b.first == b.last ? fmt::format("turn {}", b.first) : fmt::format("turns {}-{}", b.first, b.last);
  if (b.candidate.empty() || b.score < 1) {
    return fmt::format("{} ({} requests): nothing crosses its threshold", turns, b.requests);
  }
  return fmt::format("{} ({} requests): {} (score {:.1f}){}", turns, b.requests, b.candidate, b.score,
                     b.evidence.empty() ? "" : ": " + b.evidence);
}

std::string failure_cliff_sentence(const FailureCliff& f) {
  return fmt::format("turn {} onward: every request failed ({} requests), where the turns before it succeeded",
                     f.from_turn, f.failed);
}

std::string collapse_sentence(const ConversationCollapse& c) {
  std::string out =
      fmt::format("{} of {} conversations of three or more turns lose their own cache", c.collapsed, c.conversations);
  if (c.collapsed == 0) return out;
  std::string where;
  for (const auto& [turn, n] : c.from_turn) where += fmt::format("{}turn {} ({})", where.empty() ? "" : ", ", turn, n);
  return out + " from " + where;
}

std::vector<std::string> turn_headers() {
  return {"turn",        "requests",          "errors",       "TTFT p50 ms",
          "TTFT p95 ms", "prompt tokens p50", "cached share", "client time before p50 ms"};
}

std::vector<std::vector<std::string>> turn_rows(const TurnView& v) {
  auto ms = [](const std::optional<Summary>& s, double Summary::*q) {
    return s ? fmt::format("{:.1f}", (*s).*q) : std::string("-");
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : v.turns) {
    rows.push_back({std::to_string(t.turn), std::to_string(t.requests), std::to_string(t.errors),
                    ms(t.ttft_ms, &Summary::p50), ms(t.ttft_ms, &Summary::p95),
                    t.prompt_tokens ? fmt::format("{:.0f}", t.prompt_tokens->p50) : std::string("-"),
                    t.cached_share ? fmt::format("{:.0f}%", 100 * *t.cached_share) : std::string("-"),
                    ms(t.client_ms, &Summary::p50)});
  }
  return rows;
}

std::string turns_json(const std::optional<TurnView>& v) {
  if (!v) return "null";
  std::string turns = "[";
  for (const auto& t : v->turns) {
    if (turns.size() > 1) turns += ',';
    JsonObjectWriter w;
    w.field("turn", static_cast<std::int64_t>(t.turn))
        .field("requests", static_cast<std::uint64_t>(t.requests))
        .field("errors", static_cast<std::uint64_t>(t.errors))
        .optional_field("ttft_p50_ms", quantile_of(t.ttft_ms, &Summary::p50))
        .optional_field("ttft_p95_ms", quantile_of(t.ttft_ms, &Summary::p95))
        .optional_field("prompt_tokens_p50", quantile_of(t.prompt_tokens, &Summary::p50))
        .optional_field("cached_share", t.cached_share)
        .optional_field("client_p50_ms", quantile_of(t.client_ms, &Summary::p50))
        .optional_field("client_p95_ms", quantile_of(t.client_ms, &Summary::p95));
    turns += std::move(w).finish();
  }
  turns += ']';
  std::string cliff = "null";
  if (const auto& c = v->cliff) {
    JsonObjectWriter w;
    w.field("from_turn", static_cast<std::int64_t>(c->from_turn))
        .field("share_after", c->share_after)
        .field("share_before", c->share_before)
        .field("before_first_turn", static_cast<std::int64_t>(c->before_first))
        .field("before_last_turn", static_cast<std::int64_t>(c->before_last))
        .optional_field("kv_usage_max_after", c->kv_max_after)
        .optional_field("kv_usage_max_before", c->kv_max_before);
    cliff = std::move(w).finish();
  }
  std::string bands = "[";
  for (const auto& b : v->bands) {
    if (bands.size() > 1) bands += ',';
    JsonObjectWriter bw;
    bw.field("first_turn", static_cast<std::int64_t>(b.first))
        .field("last_turn", static_cast<std::int64_t>(b.last))
        .field("requests", static_cast<std::uint64_t>(b.requests));
    if (!b.candidate.empty() && b.score >= 1) {
      bw.field("likely_bottleneck", b.candidate).field("score", b.score).field("evidence", b.evidence);
    } else {
      bw.null_field("likely_bottleneck");
    }
    bands += std::move(bw).finish();
  }
  bands += ']';
  std::string collapse = "null";
  if (const auto& c = v->collapse) {
    std::string from = "{";
    for (const auto& [turn, n] : c->from_turn) {
      if (from.size() > 1) from += ',';
      from += fmt::format("\"{}\":{}", turn, n);
    }
    from += '}';
    JsonObjectWriter cw;
    cw.field("conversations", static_cast<std::uint64_t>(c->conversations))
        .field("collapsed", static_cast<std::uint64_t>(c->collapsed))
        .raw_field("from_turn", from);
    collapse = std::move(cw).finish();
  }
  std::string failures = "null";
  if (const auto& f = v->failure_cliff) {
    JsonObjectWriter fw;
    fw.field("from_turn", static_cast<std::int64_t>(f->from_turn))
        .field("failed", static_cast<std::uint64_t>(f->failed));
    failures = std::move(fw).finish();
  }
  JsonObjectWriter w;
  w.raw_field("by_turn", turns)
      .raw_field("cache_cliff", cliff)
      .raw_field("failure_cliff", failures)
      .raw_field("conversations", collapse)
      .raw_field("bands", bands);
  return std::move(w).finish();
}

}  // namespace mpo::report
