// fak's ServingStats (docs/FAK.md 6.4) as a typed struct: what one track measured at one point of a
// sweep or parity run. Written in fak's field order; read leniently (fak's receipts may leave out
// optional members) and with any member we do not know kept as written, so a receipt read and
// written again says what it said. Pure.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::sweep {

inline constexpr std::string_view kMeasured = "measured";
inline constexpr std::string_view kNotMeasured = "not_measured";

// Nearest-rank latency quantiles in ms, or the reason there are none.
struct QuantileMetric {
  std::string status{kNotMeasured};  // measured | not_measured
  std::optional<std::string> unit;
  std::optional<double> p50, p90, p95, p99;
  std::optional<std::string> reason;
  bool measured() const { return status == kMeasured; }
};

// One figure with its unit, or the reason there is none (fak's ScalarMetric).
struct ScalarMetric {
  std::string status{kNotMeasured};
  std::optional<std::string> unit;
  std::optional<double> value;
  std::optional<std::string> reason, source;
  bool measured() const { return status == kMeasured; }
  // The value when measured.
  std::optional<double> measured_value() const { return measured() ? value : std::nullopt; }
  static ScalarMetric of(double value, std::string unit);
  static ScalarMetric missing(std::string reason);
};

struct ServingStats {
  std::int64_t requests = 0, ok = 0, failed = 0;
  QuantileMetric ttft_ms, itl_ms, tpot_ms, end_to_end_ms;
  ScalarMetric throughput_tok_s, goodput_rps, goodput_tok_s, prefix_cache_hit_rate;
  std::string token_count_basis;
  std::optional<double> wall_seconds, goodput_slo_seconds;
  std::optional<std::int64_t> successful_output_tokens_exact, slo_successful_output_tokens_exact;
  std::optional<std::int64_t> observed_max_in_flight;
  std::optional<std::string> observed_in_flight_basis;
  // Ours: the ok requests whose first event was a tool call, left out of ttft_ms (no first token
  // dated: REPORT.md "Tool calls first"); absent when none.
  std::optional<std::int64_t> tool_call_first;
  // Ours: the ok requests that ended without any output although the server counted tokens for them
  // (no first token: REPORT.md "Streams that ended without output"); absent when none.
  std::optional<std::int64_t> no_output;
  boost::json::object unknown;  // members of a read receipt this struct does not name, as written
};

boost::json::object stats_json(const ServingStats& s);
// Reads a receipt's `stats` object; a member of the wrong type is an error naming it.
Result<ServingStats> parse_serving_stats(const boost::json::object& o);

}  // namespace mpo::sweep
