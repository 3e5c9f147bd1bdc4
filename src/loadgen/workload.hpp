// The requests a sweep sends, and their digest. Pure: built from text the caller read.
//
// A workload is an ordered list of chat requests. fak's digest rule applies unchanged
// (docs/FAK.md 6.6): "sha256:" + SHA-256 of the Go JSON of the list, keys id, messages (role,
// content), max_output_tokens, prompt_tokens_estimate. A replayed ledger adds arrival offsets,
// which are part of how the workload is sent, not of what it is, so they are not in the digest.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "ledger/reader.hpp"

namespace mpo::loadgen {

struct Message {
  std::string role;
  std::string content;
  // A tool turn (multi-turn workloads): an assistant message with `tool_name` set is a call of that
  // tool, its arguments (JSON text) in `content`; a "tool" message is the result of the call
  // `tool_call_id` names (the assistant's call carries the same id).
  std::string tool_name, tool_call_id;
};

// The one tool a multi-turn workload's tool turns call (loadgen/conversation.hpp): declared in each
// request that has a tool turn, or in every request with MultiTurnOptions::require_tool_calls.
inline constexpr const char* kToolName = "lookup";

struct ServingRequest {
  std::string id;
  std::vector<Message> messages;
  std::int64_t max_output_tokens = 64;
  std::int64_t prompt_tokens_estimate = 0;
  std::optional<double> arrival_offset_s;  // replay: when to send, from the start of the point
  // Multi-turn workloads (loadgen/conversation.hpp): the conversation this request is a turn of
  // (sent as X-Session-ID), the turn from 1 (0: not a session's), and the client's own time between
  // the previous turn's end and this one's start (the agent thinking, or running a tool).
  std::string session_id;
  std::int32_t turn = 0;
  double think_time_s = 0;
  // Multi-turn workloads with tool turns asked for (`sweep --require-tool-calls`): the request
  // declares the tool although no call is in its messages yet (an agent's tools are its session's),
  // and, where the next turn sends a tool's result, asks for a call of it (tool_choice "required";
  // Anthropic's {"type":"any"}), so that the engine answers this turn with a call as the next turn
  // says it did.
  bool declares_tool = false;
  bool requires_tool_call = false;
  // Set by the load generator, never in a workload: the Responses API response this request
  // continues (its messages are then only what is new since that response).
  std::string previous_response_id;
};

inline constexpr const char* kDefaultSharedPrefix =
    "Shared browser-agent serving prefix: answer each task concisely. This prefix is "
    "intentionally identical across requests so vLLM, SGLang, and fak-fronted fleet runs exercise "
    "the same cacheable prompt prefix.";

// fak's web-task dataset (a JSON array or JSONL of {id, description, instructions}), expanded to
// `agents` requests (tasks repeat as "<id>#agent-NNN" when agents > tasks; 0: one per task).
struct WebTaskOptions {
  std::size_t agents = 0;
  std::int64_t max_output_tokens = 64;
  std::string shared_prefix = kDefaultSharedPrefix;
};
Result<std::vector<ServingRequest>> parse_web_tasks(std::string_view text, const WebTaskOptions& opts);

// A ShareGPT-style conversations file (JSON array or JSONL of {id, conversations: [{from, value}]}):
// one request per conversation whose first turn is a human one; the prompt is that turn, and the
// output length is the following gpt turn's length estimate (bytes / 4, at least 1) unless
// `max_output_tokens` > 0 fixes it. Conversations without a human first turn are skipped.
struct ShareGptOptions {
  std::size_t limit = 0;               // 0: all
  std::int64_t max_output_tokens = 0;  // 0: from the reply
  std::int64_t output_cap = 4096;
};
Result<std::vector<ServingRequest>> parse_sharegpt(std::string_view text, const ShareGptOptions& opts);

// Token-length distributions: "N" (constant), "uniform:A,B", "normal:MEAN,SD", "exp:MEAN"; draws
// are rounded and clamped to at least 1.
struct LengthDistribution {
  enum class Kind { kConstant, kUniform, kNormal, kExponential } kind = Kind::kConstant;
  double a = 1, b = 0;
};
Result<LengthDistribution> parse_length_distribution(std::string_view text);
// One draw, rounded, at least 1.
std::int64_t draw_length(const LengthDistribution& d, std::mt19937_64& rng);
std::string to_string(const LengthDistribution& d);

struct SyntheticOptions {
  std::size_t count = 64;
  LengthDistribution input{LengthDistribution::Kind::kConstant, 128, 0};
  LengthDistribution output{LengthDistribution::Kind::kConstant, 64, 0};
  std::int64_t shared_prefix_tokens = 0;  // the same leading words in every prompt (cache-aware runs)
  std::uint64_t seed = 1;
};
// Prompts are words of four letters (about one token each in common tokenizers and exactly one in
// `simulate`), seeded: the same options always give the same workload.
std::vector<ServingRequest> synthetic_workload(const SyntheticOptions& opts);
// `tokens` words of synthetic text drawn with `seed` (the replay and synthetic prompts).
std::string synthetic_words(std::int64_t tokens, std::uint64_t seed);

// Replays a ledger: requests in order of started_at, arrival offsets from the first, prompt and
// output lengths from the recorded token counts (no content is in a ledger: prompts are
// synthesised to the recorded lengths). Records without a prompt or completion count are skipped
// and counted in `skipped`.
struct Replay {
  std::vector<ServingRequest> requests;
  std::size_t skipped = 0;
};
Replay replay_ledger(std::vector<ledger::LedgerRecord> records, std::uint64_t seed);

// Repeats or truncates `base` to exactly `n` requests (ids of repeats get "#agent-NNN").
std::vector<ServingRequest> take_requests(const std::vector<ServingRequest>& base, std::size_t n);

// Prompts distinct per point (docs/SWEEP.md "Prompts per point"): a point must not be served from
// the prefix cache an earlier point filled, so each point sends the workload with one word of each
// request's last message replaced by a marker of its own: the first word after the words every
// request's last message begins with (the workload's shared prefix, kept), or appended when
// there is none. A session's turn is marked in its first user message instead (every turn repeats
// it, so the session's turns still share their prefix) and its session_id gains ".<marker>" (a
// proxy counting turns by session sees each point's sessions as new). Lengths stay as they are; the digest is the
// workload's, and the marker rule makes the prompts of every point reproducible from it.
std::size_t shared_leading_words(const std::vector<ServingRequest>& requests);
// "p001" for the second point's measured requests, "w001" for its warm-up.
std::string point_marker(std::size_t point_index, bool warmup);
void mark_prompts(std::vector<ServingRequest>& requests, std::size_t shared_words, std::string_view marker);
// The first `shared_words` words of each request's marked message (the workload's shared prefix),
// and those words replaced by `prefix` in each (the prefix fitted to its length in tokens:
// loadgen/prompt_length.hpp).
std::string shared_prefix_text(const ServingRequest& r, std::size_t shared_words);
void replace_shared_prefix(std::vector<ServingRequest>& requests, std::size_t shared_words, std::string_view prefix);
// The share of a request's prompt bytes the workload declares shared with other requests: every
// message before the last, and the shared words of the last.
double declared_shared_share(const ServingRequest& r, std::size_t shared_words);

boost::json::value workload_json(const std::vector<ServingRequest>& requests);
std::string workload_digest(const std::vector<ServingRequest>& requests);

// fak's estimate: bytes / 4 (integer).
std::int64_t estimate_tokens(std::string_view text);

}  // namespace mpo::loadgen
