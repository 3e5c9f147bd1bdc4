#include "sweep/serving_stats.hpp"

#include <array>

#include "sweep/typed_json.hpp"

namespace mpo::sweep {
namespace {

void put(boost::json::object& o, std::string_view key, const std::optional<std::string>& v) {
  if (v) o[key] = *v;
}
void put(boost::json::object& o, std::string_view key, const std::optional<double>& v) {
  if (v) o[key] = *v;
}
void put(boost::json::object& o, std::string_view key, const std::optional<std::int64_t>& v) {
  if (v) o[key] = *v;
}

boost::json::object quantile_json(const QuantileMetric& q) {
  boost::json::object o;
  o["status"] = q.status;
  put(o, "unit", q.unit);
  put(o, "p50", q.p50);
  put(o, "p90", q.p90);
  put(o, "p95", q.p95);
  put(o, "p99", q.p99);
  put(o, "reason", q.reason);
  return o;
}

boost::json::object scalar_json(const ScalarMetric& s) {
  boost::json::object o;
  o["status"] = s.status;
  put(o, "unit", s.unit);
  put(o, "value", s.value);
  put(o, "reason", s.reason);
  put(o, "source", s.source);
  return o;
}

void read(JsonReader& r, std::string_view key, QuantileMetric& q) {
  const auto* m = r.object(key);
  if (m == nullptr) return;
  JsonReader in(*m, r.path(key));
  in.read("status", q.status);
  in.read("unit", q.unit);
  in.read("p50", q.p50);
  in.read("p90", q.p90);
  in.read("p95", q.p95);
  in.read("p99", q.p99);
  in.read("reason", q.reason);
  r.adopt(in);
}

void read(JsonReader& r, std::string_view key, ScalarMetric& s) {
  const auto* m = r.object(key);
  if (m == nullptr) return;
  JsonReader in(*m, r.path(key));
  in.read("status", s.status);
  in.read("unit", s.unit);
  in.read("value", s.value);
  in.read("reason", s.reason);
  in.read("source", s.source);
  r.adopt(in);
}

constexpr std::array<std::string_view, 18> kKnown = {"requests",
                                                     "ok",
                                                     "failed",
                                                     "ttft_ms",
                                                     "itl_ms",
                                                     "tpot_ms",
                                                     "end_to_end_ms",
                                                     "throughput_tok_s",
                                                     "goodput_rps",
                                                     "goodput_tok_s",
                                                     "prefix_cache_hit_rate",
                                                     "token_count_basis",
                                                     "wall_seconds",
                                                     "goodput_slo_seconds",
                                                     "successful_output_tokens_exact",
                                                     "slo_successful_output_tokens_exact",
                                                     "observed_max_in_flight",
                                                     "observed_in_flight_basis"};

}  // namespace

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

boost::json::object stats_json(const ServingStats& s) {
  boost::json::object o;
  o["requests"] = s.requests;
  o["ok"] = s.ok;
  o["failed"] = s.failed;
  o["ttft_ms"] = quantile_json(s.ttft_ms);
  o["itl_ms"] = quantile_json(s.itl_ms);
  o["tpot_ms"] = quantile_json(s.tpot_ms);
  o["end_to_end_ms"] = quantile_json(s.end_to_end_ms);
  o["throughput_tok_s"] = scalar_json(s.throughput_tok_s);
  o["goodput_rps"] = scalar_json(s.goodput_rps);
  o["goodput_tok_s"] = scalar_json(s.goodput_tok_s);
  o["prefix_cache_hit_rate"] = scalar_json(s.prefix_cache_hit_rate);
  o["token_count_basis"] = s.token_count_basis;
  put(o, "wall_seconds", s.wall_seconds);
  put(o, "goodput_slo_seconds", s.goodput_slo_seconds);
  put(o, "successful_output_tokens_exact", s.successful_output_tokens_exact);
  put(o, "slo_successful_output_tokens_exact", s.slo_successful_output_tokens_exact);
  put(o, "observed_max_in_flight", s.observed_max_in_flight);
  put(o, "observed_in_flight_basis", s.observed_in_flight_basis);
  for (const auto& [k, v] : s.unknown) o[k] = v;
  return o;
}

Result<ServingStats> parse_serving_stats(const boost::json::object& o) {
  ServingStats s;
  JsonReader r(o, "stats");
  r.read("requests", s.requests);
  r.read("ok", s.ok);
  r.read("failed", s.failed);
  read(r, "ttft_ms", s.ttft_ms);
  read(r, "itl_ms", s.itl_ms);
  read(r, "tpot_ms", s.tpot_ms);
  read(r, "end_to_end_ms", s.end_to_end_ms);
  read(r, "throughput_tok_s", s.throughput_tok_s);
  read(r, "goodput_rps", s.goodput_rps);
  read(r, "goodput_tok_s", s.goodput_tok_s);
  read(r, "prefix_cache_hit_rate", s.prefix_cache_hit_rate);
  r.read("token_count_basis", s.token_count_basis);
  r.read("wall_seconds", s.wall_seconds);
  r.read("goodput_slo_seconds", s.goodput_slo_seconds);
  r.read("successful_output_tokens_exact", s.successful_output_tokens_exact);
  r.read("slo_successful_output_tokens_exact", s.slo_successful_output_tokens_exact);
  r.read("observed_max_in_flight", s.observed_max_in_flight);
  r.read("observed_in_flight_basis", s.observed_in_flight_basis);
  if (!r.ok()) return make_error("sweep.stats", r.error());
  s.unknown = unknown_members(o, kKnown);
  return s;
}

}  // namespace mpo::sweep
