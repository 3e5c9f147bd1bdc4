#include "sweep/serving_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

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

// Typed reads of one member; `where` names it in errors ("stats.ttft_ms.p99").
struct Reader {
  const boost::json::object& o;
  std::string where;
  std::string error;

  const boost::json::value* find(std::string_view key) {
    const auto* v = o.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  void fail(std::string_view key, std::string_view what) {
    if (error.empty()) error = fmt::format("{}.{} is not {}", where, key, what);
  }
  void read(std::string_view key, std::string& out) {
    if (const auto* v = find(key)) {
      if (v->is_string())
        out = std::string(v->get_string());
      else
        fail(key, "a string");
    }
  }
  void read(std::string_view key, std::optional<std::string>& out) {
    std::string s;
    if (find(key)) {
      read(key, s);
      out = std::move(s);
    }
  }
  void read(std::string_view key, std::optional<double>& out) {
    if (const auto* v = find(key)) {
      if (v->is_number())
        out = v->to_number<double>();
      else
        fail(key, "a number");
    }
  }
  void read(std::string_view key, std::optional<std::int64_t>& out) {
    if (const auto* v = find(key)) {
      if (v->is_int64())
        out = v->get_int64();
      else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        out = static_cast<std::int64_t>(v->get_uint64());
      else
        fail(key, "an integer");
    }
  }
  void read(std::string_view key, std::int64_t& out) {
    std::optional<std::int64_t> v;
    read(key, v);
    if (v) out = *v;
  }
  const boost::json::object* object(std::string_view key) {
    const auto* v = find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) fail(key, "an object");
    return v->if_object();
  }
  void read(std::string_view key, QuantileMetric& q) {
    const auto* m = object(key);
    if (m == nullptr) return;
    Reader r{*m, where + "." + std::string(key), {}};
    r.read("status", q.status);
    r.read("unit", q.unit);
    r.read("p50", q.p50);
    r.read("p90", q.p90);
    r.read("p95", q.p95);
    r.read("p99", q.p99);
    r.read("reason", q.reason);
    if (error.empty()) error = r.error;
  }
  void read(std::string_view key, ScalarMetric& s) {
    const auto* m = object(key);
    if (m == nullptr) return;
    Reader r{*m, where + "." + std::string(key), {}};
    r.read("status", s.status);
    r.read("unit", s.unit);
    r.read("value", s.value);
    r.read("reason", s.reason);
    r.read("source", s.source);
    if (error.empty()) error = r.error;
  }
};

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
  Reader r{o, "stats", {}};
  r.read("requests", s.requests);
  r.read("ok", s.ok);
  r.read("failed", s.failed);
  r.read("ttft_ms", s.ttft_ms);
  r.read("itl_ms", s.itl_ms);
  r.read("tpot_ms", s.tpot_ms);
  r.read("end_to_end_ms", s.end_to_end_ms);
  r.read("throughput_tok_s", s.throughput_tok_s);
  r.read("goodput_rps", s.goodput_rps);
  r.read("goodput_tok_s", s.goodput_tok_s);
  r.read("prefix_cache_hit_rate", s.prefix_cache_hit_rate);
  r.read("token_count_basis", s.token_count_basis);
  r.read("wall_seconds", s.wall_seconds);
  r.read("goodput_slo_seconds", s.goodput_slo_seconds);
  r.read("successful_output_tokens_exact", s.successful_output_tokens_exact);
  r.read("slo_successful_output_tokens_exact", s.slo_successful_output_tokens_exact);
  r.read("observed_max_in_flight", s.observed_max_in_flight);
  r.read("observed_in_flight_basis", s.observed_in_flight_basis);
  if (!r.error.empty()) return make_error("sweep.stats", r.error);
  for (const auto& [k, v] : o) {
    if (std::find(kKnown.begin(), kKnown.end(), std::string_view(k)) == kKnown.end()) s.unknown[k] = v;
  }
  return s;
}

}  // namespace mpo::sweep
