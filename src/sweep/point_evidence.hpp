// The evidence block of one track at one point of a sweep (ours; fak's receipts have none), as
// typed structs: how the point was driven (`load`), how late the load generator sent
// (`generator`), bootstrap intervals on the p99s (`confidence`), failures by class, the
// steady-state window's throughput, and whether the prefix cache carried over from an earlier
// point (`cache`). Each is derived from the point's samples (fold.hpp builds them, `sweep verify`
// rebuilds them). Two members stay JSON objects on purpose: `server` (what the engine's /metrics
// showed around the point, keyed by the catalogs' canonical signals: which keys exist depends on
// the engine, evidence.hpp) and `energy` (what the power meter or DCGM said). Written in the order
// the runner always wrote them; unknown members of a read receipt are kept. Pure.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace mpo::sweep {

struct LoadEvidence {
  std::string coordinate_key;  // "concurrency" | "rate_rps"
  double coordinate = 0;       // written as an integer when it is one and the key is "concurrency"
  std::int64_t warmup_requests = 0, measured_requests = 0;
  std::optional<double> duration_s;
  std::optional<double> offered_rate_rps;   // open loop: measured requests over their scheduled span
  std::optional<double> achieved_rate_rps;  // measured requests from first send to last completion
  std::string started_at, ended_at;         // RFC 3339 wall times of the point
};

struct GeneratorEvidence {
  double lateness_bound_ms = 0;
  std::optional<double> send_lateness_p50_ms, send_lateness_p99_ms, send_lateness_max_ms;
  double cpu_seconds = 0, wall_seconds = 0;
  std::optional<double> cpu_share;
};

struct BootstrapInterval {
  double low = 0, high = 0;
};
struct ConfidenceEvidence {
  std::string method;
  std::int64_t resamples = 0;
  double level = 0;
  std::uint64_t seed = 0;
  std::optional<BootstrapInterval> ttft_p99_ms, itl_p99_ms, end_to_end_p99_ms;
};

struct SteadyStateEvidence {
  std::string rule;
  std::optional<double> window_start_offset_ms, window_end_offset_ms;
  std::optional<std::int64_t> completed_requests, output_tokens;
  std::string status;  // measured | not_measured
  std::optional<std::string> reason;
  std::optional<double> throughput_tok_s;
};

// The prompt and output tokens the point's measured requests actually had, as the server counted
// them (usage): what was asked for (--input-tokens 64) is not always what was sent.
struct TokenEvidence {
  std::int64_t requests = 0;  // measured requests whose usage gave the counts
  std::optional<std::int64_t> input_min, input_p50, input_max;
  std::optional<std::int64_t> output_min, output_p50, output_max;
  // The largest max_tokens those requests asked for, and how many of their answers stopped at the
  // length limit short of it (ledger::answer_cut_short: the engine's context cut them). Absent
  // where the samples do not say what they asked for (receipts written before they did).
  std::optional<std::int64_t> max_tokens_asked, cut_short;
};

// How the prefix cache was reset before the point (--reset-cache-between-points).
struct CacheReset {
  std::string status;  // ok | failed
  std::optional<std::string> method, error;
};

struct CacheEvidence {
  std::string prompts;  // distinct_per_point | same_every_point
  double declared_shared_share = 0;
  std::int64_t allowance_tokens_per_request = 0;
  std::optional<CacheReset> reset;
  std::string status;  // measured | not_measured
  std::optional<std::string> source;
  std::optional<std::int64_t> requests;
  std::optional<double> prompt_tokens, cached_tokens, cached_share, limit_share;
  std::optional<bool> carryover;
  std::optional<double> server_cached_share;
  std::optional<std::string> reason;
};

struct PointEvidence {
  std::optional<LoadEvidence> load;
  std::optional<GeneratorEvidence> generator;
  std::optional<ConfidenceEvidence> confidence;
  std::optional<std::map<std::string, std::int64_t>> errors_by_class;
  std::optional<SteadyStateEvidence> steady_state;
  std::optional<boost::json::object> server;  // evidence.hpp: server_evidence
  std::optional<boost::json::object> energy;  // evidence.hpp: energy_from_power / energy_from_dcgm
  std::optional<CacheEvidence> cache;
  std::optional<TokenEvidence> tokens;
  boost::json::object unknown;  // members of a read receipt this struct does not name, as written

  // A number of the server block (nullopt when there is no block or no such number).
  std::optional<double> server_number(std::string_view key) const;
};

boost::json::object evidence_json(const PointEvidence& e);
// Reads a receipt's `evidence` object; a member of the wrong type is an error naming it.
Result<PointEvidence> parse_point_evidence(const boost::json::object& o);

}  // namespace mpo::sweep
