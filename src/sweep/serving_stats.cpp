// The implementation of sweep/serving_stats.hpp. fak's ServingStats (docs/FAK.md 6.4) as a typed
// struct: what one track measured at one point of a sweep or parity run.
#include "sweep/serving_stats.hpp"

#include "sweep/typed_json.hpp"

namespace mpo::sweep {

// Members in fak's order (docs/FAK.md 6.4); typed_json.hpp writes and reads them.
constexpr auto json_fields(const QuantileMetric*) {
  using Q = QuantileMetric;
  return std::tuple{field("status", &Q::status), field("unit", &Q::unit), field("p50", &Q::p50),
                    field("p90", &Q::p90),       field("p95", &Q::p95),   field("p99", &Q::p99),
                    field("reason", &Q::reason)};
}

constexpr auto json_fields(const ScalarMetric*) {
  using M = ScalarMetric;
  return std::tuple{field("status", &M::status), field("unit", &M::unit), field("value", &M::value),
                    field("reason", &M::reason), field("source", &M::source)};
}

constexpr auto json_fields(const ServingStats*) {
  using S = ServingStats;
  return std::tuple{field("requests", &S::requests),
                    field("ok", &S::ok),
                    field("failed", &S::failed),
                    field("ttft_ms", &S::ttft_ms),
                    field("itl_ms", &S::itl_ms),
                    field("tpot_ms", &S::tpot_ms),
                    field("end_to_end_ms", &S::end_to_end_ms),
                    field("throughput_tok_s", &S::throughput_tok_s),
                    field("goodput_rps", &S::goodput_rps),
                    field("goodput_tok_s", &S::goodput_tok_s),
                    field("prefix_cache_hit_rate", &S::prefix_cache_hit_rate),
                    field("token_count_basis", &S::token_count_basis),
                    field("wall_seconds", &S::wall_seconds),
                    field("goodput_slo_seconds", &S::goodput_slo_seconds),
                    field("successful_output_tokens_exact", &S::successful_output_tokens_exact),
                    field("slo_successful_output_tokens_exact", &S::slo_successful_output_tokens_exact),
                    field("observed_max_in_flight", &S::observed_max_in_flight),
                    field("observed_in_flight_basis", &S::observed_in_flight_basis),
                    field("tool_call_first", &S::tool_call_first),
                    field("no_output", &S::no_output)};
}

ScalarMetric ScalarMetric::of(double value, std::string unit) {
  ScalarMetric s;
  s.status = kMeasured;
  s.unit = std::move(unit);
  s.value = value;
  return s;
}

ScalarMetric ScalarMetric::missing(std::string reason) {
  ScalarMetric s;
  s.reason = std::move(reason);
  return s;
}

boost::json::object stats_json(const ServingStats& s) { return write_with_unknown(s); }

Result<ServingStats> parse_serving_stats(const boost::json::object& o) {
  return parse_with_unknown<ServingStats>(o, "stats", errc::kSweepStats);
}

}  // namespace mpo::sweep
