// The report's analysis, pure: ledger records -> per-group statistics, a least-squares fit of TTFT
// against prompt length and concurrency, and a ranking of likely bottlenecks with the evidence
// behind each (rules and thresholds: docs/REPORT.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/stats.hpp"
#include "ledger/reader.hpp"
#include "report/held_prompts.hpp"
#include "report/interference.hpp"
#include "report/proxy_stalls.hpp"
#include "report/queued.hpp"
#include "report/rows.hpp"
#include "report/shapes.hpp"
#include "report/slow_decode.hpp"
#include "report/speculation.hpp"
#include "report/turns.hpp"

namespace mpo::report {

Result<GroupBy> parse_group_by(std::string_view s);

// TTFT ~ a + b * prompt_tokens + c * in_flight_at_start, least squares over streamed ok requests.
struct TtftFit {
  std::size_t n = 0;
  double a_ms = 0, b_ms_per_token = 0, c_ms_per_in_flight = 0, r2 = 0;
  bool in_flight_varies = false;  // c is identifiable only when concurrency varied
  bool prompt_varies = false;
  // Prompt length and in-flight count moved together (each a linear function of the other, as in a
  // ramp that grows both): the fit cannot split them, so it uses prompt tokens only and c is 0.
  bool collinear = false;
  // The prompt lengths varied, but over a range too narrow to carry a per-token cost (under
  // kMinPromptRangeTokens, or under a quarter of the median): the fit leaves the prompt term out
  // and says so, instead of printing a slope from noise.
  bool prompt_range_narrow = false;
  double prompt_min = 0, prompt_max = 0;
  // The 95% intervals of b and c (± these, in their units: ms a prompt token, ms a request in
  // flight): Student's t over the n - k degrees of freedom left times the coefficient's standard
  // error. Ordinary least squares' own interval, which takes the residuals as independent and of one
  // spread; TTFT under a queue is neither, so read it as the least the fit does not know. None when no
  // degree of freedom is left (`intervals` false).
  bool intervals = false;
  double b_ci95_ms = 0, c_ci95_ms = 0;
  // The term is in the model and its interval holds 0: the data cannot tell its sign (noise), or
  // leaves 0 out (known).
  bool prompt_term_noise() const { return prompt_varies && intervals && std::fabs(b_ms_per_token) <= b_ci95_ms; }
  bool in_flight_term_noise() const {
    return in_flight_varies && intervals && std::fabs(c_ms_per_in_flight) <= c_ci95_ms;
  }
  bool prompt_term_known() const { return prompt_varies && intervals && !prompt_term_noise(); }
  bool in_flight_term_known() const { return in_flight_varies && intervals && !in_flight_term_noise(); }
};
inline constexpr double kMinPromptRangeTokens = 64;

// The fit over streamed ok requests: y their TTFT (ms), beside each its prompt tokens and the
// requests in flight at its start. nullopt under 3 requests or when no column can be solved for.
std::optional<TtftFit> fit_ttft(std::span<const double> y, std::span<const double> prompt,
                                std::span<const double> inflight);

struct Candidate {
  std::string name;  // errors, queueing, prefill, decode, transport, workload, not_enough_evidence
  double score = 0;  // >= 1: the evidence crosses this candidate's threshold
  std::vector<std::string> evidence;
};

// One API's share of a group that mixes several (chat, responses, messages, ...).
struct ApiStats {
  std::string operation;
  std::size_t requests = 0;
  std::optional<Summary> ttft_ms, tpot_ms, itl_p95_ms, e2e_ms;
};

// Requests that generate nothing (embeddings, rerank, score, models, ...), by operation: latency,
// status and prompt tokens; never ranked.
struct OtherStats {
  std::string operation;
  std::size_t requests = 0;
  std::map<std::string, std::size_t> outcomes;
  double error_rate = 0;
  std::optional<Summary> e2e_ms, ttfb_ms;
  std::int64_t prompt_tokens_total = 0;
};

// Failed requests of one kind: their outcome, HTTP status (0: none) and error type, with the
// first message one of them carried (RowTable::failures: cut, or empty past the messages kept).
struct FailureKind {
  std::string outcome;
  int http_status = 0;
  std::string error_type, example_message;
  std::size_t requests = 0;
};

// One request's TTFT as the client saw it beside the engine's own times for it: from llama.cpp's
// `timings` on the line, or from the engine's span joined to the line (report --traces).
struct EngineTimes {
  double ttft_ms = 0;                // the line's (the client's through the proxy)
  double prefill_ms = 0;             // the engine's own
  std::optional<double> ttfb_ms;     // the line's
  std::optional<double> queue_ms;    // the engine's own time in its queue (spans)
  std::optional<double> outside_ms;  // the line's TTFT - the engine's TTFT (spans)
  // It was the only request in flight at the proxy from its start to its first token (none before
  // it still in flight, none of its group started until its first token).
  bool alone = false;
  // A request not streamed (spans): its ttft_ms is the line's e2e less the engine's decode, its
  // outside_ms the line's e2e less the engine's, and the engine's decode per token after the first.
  bool not_streamed = false;
  std::optional<double> decode_per_token_ms;
  std::int64_t started_at_us = 0;   // the line's start; 0: unknown
  std::optional<double> in_flight;  // the line's in_flight_at_start
  // When the engine's prefill of it ended (its first token as the line dates it), wall µs; 0:
  // unknown. With prefill_ms, the window in which it was read (report/interference.hpp).
  std::int64_t prefill_end_us = 0;
  std::int64_t prompt_tokens = -1;  // the line's; -1: unknown
};

// TTFT split at the engine's own per-request prefill time (llama.cpp's timings.prompt_ms on the
// lines, or vLLM's spans), where most ok requests of a group carry it: what passed before the
// engine began the prompt (waiting for a slot, the engine's own work before the prompt, the network)
// and the prefill itself, and when the engine sent its response head relative to them
// (docs/REPORT.md "Evidence from the engine").
// With spans the wait is split further into the engine's queue and what lies outside the engine.
inline constexpr std::size_t kMinAloneRequests = 3;
// A TTFT that never came, where a bound needs a number: later than any real one (31 years).
inline constexpr double kNeverMs = 1e12;
struct EngineSplit {
  std::string source;                 // "llama.cpp timings.prompt_ms", "vLLM spans (...)"
  std::size_t n = 0;                  // ok requests with TTFT and the engine's prefill time
  std::size_t of = 0;                 // ok requests with TTFT
  Summary wait_ms;                    // TTFT - prefill
  Summary prefill_ms;                 // the engine's prefill
  std::optional<Summary> queue_ms;    // the engine's own queue time, where it says (spans)
  std::optional<Summary> outside_ms;  // TTFT - the engine's TTFT: network, proxy, HTTP layer (spans)
  // The wait of the requests that were alone at the proxy until their first token, where at least
  // kMinAloneRequests were: no request of the proxy's was ahead of them, so their wait is the
  // engine's own work before the prompt (reading and tokenizing the request, its prompt cache) and
  // the network, a floor under the wait for a slot (clients that bypass the proxy aside).
  std::optional<Summary> alone_wait_ms;
  // TTFT - TTFB: the head-to-first-token part, where the lines have a TTFB.
  std::optional<Summary> head_to_token_ms;
  // When the engine sent its head, decided from the run: "slot_start" (TTFT - TTFB is the prefill:
  // llama.cpp), "with_output" (TTFB ~ TTFT), "on_accept" (the head came before the wait for a slot
  // ended), "" when the run cannot tell (no TTFB, or no wait to tell them apart).
  std::string head_rule;
  // Built from requests not streamed (a group with no TTFT at all): the first token is when the
  // engine says it began decoding, e2e - timings.predicted_ms (the ttft_ms of its EngineTimes),
  // and no head rule (the head came with the whole body).
  bool not_streamed = false;
  // The requests that waited past the queueing threshold where the median did not (report/queued.hpp),
  // their wait measured as the queueing score measures it (the engine's queue time where every
  // request has one, else the wait before the prompt).
  std::optional<QueuedAtTimes> queued;
};

// The queueing candidate's threshold: a wait for a slot (or in the engine's queue) this long.
inline constexpr double kQueueThresholdMs = 500;
// Why a streamed request whose first event was a tool call has no TTFT or TPOT in the report.
inline constexpr std::string_view kToolCallFirstMeaning =
    "an engine holds a tool call's first tokens until it has parsed the function's name, so that first event came "
    "after part of the decode: left out of TTFT and TPOT";
// Why a streamed request that ended without any output has no TTFT or TPOT (Row::no_output).
inline constexpr std::string_view kNoOutputMeaning =
    "the engine generated tokens the stream did not show (an answer the model ended at once, a reasoning model's "
    "unstreamed reasoning, or a tool call cut by the length limit before its function's name, of which llama.cpp "
    "sends nothing): no TTFT or TPOT";

// The engine's own queue-time histogram, as the window's difference: how long the requests it
// finished in the window waited before it scheduled them.
struct EngineQueueTime {
  std::string source;  // "vllm:request_queue_time_seconds"
  double requests = 0;
  double mean_ms = 0;  // exact: the histogram's sum over its count
  // The bucket (lower, upper] the median falls in: an interpolated median would place a queue of
  // microseconds halfway up the first bucket (vLLM's first is 0.3 s).
  std::optional<std::pair<double, double>> p50_bucket_ms;
  // The requests that waited longer than the lowest bucket bound at or above kQueueThresholdMs
  // (vLLM's 0.5 s), and that bound; nullopt where no finite bound is that high.
  std::optional<double> over;
  double over_bound_ms = 0;
  std::string window;  // the scrapes' window, as EngineEvidence's
};

struct GroupStats {
  std::string key;
  std::size_t requests = 0;
  std::map<std::string, std::size_t> outcomes;
  std::map<std::string, std::size_t> token_sources;
  // What the lines' times rest on (proxy lines: kernel_rx | loop; lines that do not say are not
  // counted) and the proxy's own lateness per line (its largest read lag), where measured.
  std::map<std::string, std::size_t> timing_bases;
  std::optional<Summary> proxy_lag_ms;
  // The moments when the proxy read nothing, where lines were late by kProxyLagWarnMs and said
  // when (report/proxy_stalls.hpp).
  std::optional<ProxyStalls> proxy_stalls;
  std::int64_t window_start_us = 0, window_end_us = 0;
  double window_s = 0;
  double requests_per_s = 0;
  std::optional<double> output_tokens_per_s;  // sum of completion tokens over the window
  std::optional<Summary> ttft_ms, tpot_ms, itl_p95_ms, e2e_ms, ttfb_ms, prompt_tokens, in_flight;
  std::int64_t prompt_tokens_total = 0, completion_tokens_total = 0, cached_prompt_tokens_total = 0;
  std::optional<double> cached_share;  // of prompt tokens, where cached counts are known
  std::size_t streamed = 0, non_streamed = 0;
  // Of the streamed, those whose first event was a tool call: no TTFT or TPOT of theirs is measured
  // (Row::tool_call_first).
  std::size_t tool_call_first = 0;
  // Of the streamed, those that ended without any output although tokens were generated
  // (Row::no_output).
  std::size_t no_output = 0;
  // Streamed on a path of no API whose events the proxy reads (operation `other`: llama.cpp's own
  // /completion, say): their tokens may be known (the engine's timings), their TTFT never is.
  std::size_t streamed_unread = 0;
  double error_rate = 0;  // every outcome but ok
  // What the errors candidate judges: error_rate less the clients that left once output had begun
  // (disconnected_after_first_token: a stop button or the client's own time limit while the backend
  // was serving; nothing had failed). A client that left before its first token counts: it was not
  // served.
  double failure_rate = 0;
  // Streamed requests that ended before their first token because the client left
  // (client_disconnected) or its wait ran out (upstream_timeout): their TTFT is longer than the
  // wait, and the TTFT percentiles, over the requests that got one, leave them out. The waits
  // (request start to the end, ms); nullopt when there were none.
  std::optional<Summary> left_before_first_token_ms;
  // Where there were such requests: TTFT's quantiles with each counted at its wait (a lower bound of
  // each quantile) and at "never" (an upper bound; kNeverMs), for the SLOs on TTFT.
  std::optional<Summary> ttft_low_ms, ttft_high_ms;
  // Requests with an e2e given up (client_disconnected, upstream_timeout) at any moment, and the
  // e2e quantiles with them counted as never ending (e2e_ms counts them at their e2e: a lower
  // bound), for the SLOs on e2e.
  std::size_t e2e_given_up = 0;
  std::optional<Summary> e2e_high_ms;
  std::size_t disconnected_after_first_token = 0;  // client_disconnected once output had begun
  // Requests that stopped at their length limit with fewer tokens than the max_tokens they asked
  // for (Row::cut_short), and their completion tokens.
  std::size_t cut_short = 0;
  std::optional<Summary> cut_short_tokens;
  // The failed requests (every outcome but ok) by outcome, status and error type, most first.
  std::vector<FailureKind> failures;
  // Requests that named no model and got no answer, counted here with the only model the lines
  // name (model_of_unnamed).
  std::size_t unnamed_model_requests = 0;
  double busy_share = 0;  // union of request intervals / window
  std::optional<TtftFit> fit;
  std::optional<EngineSplit> engine_split;
  // Where no request was streamed (no TPOT measured) and llama.cpp's timings say: its decode time
  // over the tokens after the first (timings.predicted_ms / (completion_tokens - 1)), per request.
  std::optional<Summary> engine_tpot_ms;
  std::optional<double> tpot_in_flight_slope_ms;       // d(TPOT)/d(in_flight), when in_flight varies
  std::optional<double> tpot_in_flight_slope_ci95_ms;  // its 95% half-width (as TtftFit's), n > 2
  // Decode held up by other requests' prompts, where the engine's prefill times tell
  // (report/interference.hpp).
  std::optional<DecodeInterference> interference;
  // The requests whose decode passed the decode threshold where the median's did not
  // (report/slow_decode.hpp).
  std::optional<SlowDecode> slow_decode;
  // First tokens held behind longer prompts, band by band, where the engine's prompt windows tell
  // (report/held_prompts.hpp); the group's only, not its bands'.
  std::vector<HeldPrompts> held_prompts;
  // The engine's queue-time histogram over the report's window (engine-wide, the whole group's
  // only), where the scrapes had one: the queueing candidate's evidence without a per-request split,
  // and its requests that queued at times (report/queued.hpp).
  std::optional<EngineQueueTime> engine_queue_time;
  // Speculative decoding from the lines' own draft counts (report/speculation.hpp).
  std::optional<Speculation> speculation;
  std::vector<Candidate> ranking;        // best first
  std::vector<ApiStats> apis;            // per API, when the group's requests spoke more than one
  std::optional<TurnView> turns;         // by turn in a conversation, when two or more are named
  std::vector<PromptBand> prompt_bands;  // by prompt length, where the group mixes shapes
  bool one_operation = true;             // every request spoke the same API
};

// A queue or load gauge of the engine over the report's window (each scrape's value held until the
// next one).
struct EngineGauge {
  std::string source;  // the series: "vllm:num_requests_waiting"
  std::size_t samples = 0;
  double max = 0, mean = 0, share_above_zero = 0;  // mean: time-weighted; share: of the window's time
};

// What the engine's own counters said over the report's window (the proxy's `--scrape` file), where
// the report read them (docs/REPORT.md "Evidence from the engine"). Engine-wide: every group of the
// report reads the same numbers. A TPOT that depends on speculative acceptance is not a decode step
// of the same cost, so the decode candidate says so; the queue gauges and the queue-time histogram
// join (and, without a per-request split, decide) the queueing candidate.
struct EngineEvidence {
  std::string window;  // "12.0 s between scrapes 1 and 13"
  std::string engine;  // "vllm", "llama.cpp", ...
  std::optional<double> spec_acceptance_rate;
  std::optional<double> spec_mean_accepted_length;
  std::string spec_source;  // the series
  std::optional<EngineGauge> waiting, running;
  std::optional<EngineQueueTime> queue_time;
  std::optional<double> preemptions;  // over the window
  std::string preemptions_source;
  std::vector<KvSample> kv_usage;  // every scrape's KV usage, in time order (the cache cliff's context)
};

struct Options {
  GroupBy by = GroupBy::kModel;
  std::optional<std::int64_t> since_us, until_us;
  std::optional<EngineEvidence> engine;
  // The engine's spans joined to the lines (report --traces), by group key, and what they are:
  // a group whose lines carry no llama.cpp timings is split from these.
  std::map<std::string, std::vector<EngineTimes>, std::less<>> traced;
  std::string traced_source;
};

// The table's GroupBy must be opts.by (the key is taken when rows are made).
std::vector<GroupStats> analyse(const RowTable& table, const Options& opts);
std::vector<GroupStats> analyse(const std::vector<ledger::LedgerRecord>& records, const Options& opts);
bool in_window(const Row& r, const Options& opts);
// The non-generating requests inside the window, by operation.
std::vector<OtherStats> analyse_others(const RowTable& table, const Options& opts);
// The rows inside the window, by group key, in row order (what analyse() groups).
std::map<std::string_view, RowList> rows_by_group(const RowTable& table, const Options& opts);
// Grouped by model, where the rows name exactly one model beside requests that named none and got
// no answer (kUnknownModel: a client that may leave the name out, as llama.cpp's may, and left or
// failed before the response said it): that model, whose group those rows join in
// rows_by_group() and analyse(). nullopt otherwise.
std::optional<std::string_view> model_of_unnamed(const RowTable& table);
// Whether a request ended only because nobody waited longer for it: its client left
// (client_disconnected), or the client's own time limit ran out (upstream_timeout, a load
// generator's line). Its TTFT, where it had none, and its e2e are longer than what it waited.
bool given_up(const Row& r);
// What a streamed request given up before its first token (given_up, no TTFT) waited, its e2e: its
// TTFT was longer. nullopt for any other request.
std::optional<double> wait_before_first_token(const Row& r);

// Ordinary least squares y ~ x * beta (x rows include the intercept column). Pure and small:
// solves the normal equations with partial pivoting; nullopt when singular.
std::optional<std::vector<double>> least_squares(const std::vector<std::vector<double>>& x,
                                                 const std::vector<double>& y);

// --slo "ttft_p95_ms=1000,tpot_p95_ms=100,error_rate=0.01"
struct Slo {
  std::string name;
  double limit = 0;
};
Result<std::vector<Slo>> parse_slos(std::string_view text);
struct SloResult {
  std::string group, name;
  double limit = 0;
  std::optional<double> value;  // nullopt: not measurable from this ledger (then it is not a pass)
  bool violated = false;
  // The value is a lower bound (a TTFT quantile with requests given up before their first token
  // counted at their waits), and why; or why there is no value.
  bool at_least = false;
  std::string note;
};
std::vector<SloResult> evaluate_slos(const std::vector<GroupStats>& groups, const std::vector<Slo>& slos);

}  // namespace mpo::report
