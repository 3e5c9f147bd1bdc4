// The implementation of sweep/point_evidence.hpp. The evidence block of one track at one point of a
// sweep (ours; fak's receipts have none), as typed structs: how the point was driven (`load`), how
// late the load generator sent (`generator`), bootstrap intervals on the p99s (`confidence`),
// failures by class, the steady-state window's throughput, and whether the prefix cache carried
// over from an earlier point (`cache`).
#include "sweep/point_evidence.hpp"

#include <cmath>

#include "sweep/typed_json.hpp"

namespace mpo::sweep {

// Members in the order the runner has always written them; typed_json.hpp writes and reads them.
// `load` leads with its coordinate under the axis's own key ("concurrency" | "rate_rps").
constexpr auto json_fields(const LoadEvidence*) {
  using L = LoadEvidence;
  return std::tuple{field("warmup_requests", &L::warmup_requests),
                    field("measured_requests", &L::measured_requests),
                    field("duration_s", &L::duration_s),
                    field("offered_rate_rps", &L::offered_rate_rps),
                    field("achieved_rate_rps", &L::achieved_rate_rps),
                    field("started_at", &L::started_at),
                    field("ended_at", &L::ended_at)};
}

constexpr auto json_fields(const GeneratorEvidence*) {
  using G = GeneratorEvidence;
  return std::tuple{field("lateness_bound_ms", &G::lateness_bound_ms),
                    field("send_lateness_p50_ms", &G::send_lateness_p50_ms),
                    field("send_lateness_p99_ms", &G::send_lateness_p99_ms),
                    field("send_lateness_max_ms", &G::send_lateness_max_ms),
                    field("cpu_seconds", &G::cpu_seconds),
                    field("wall_seconds", &G::wall_seconds),
                    field("cpu_share", &G::cpu_share)};
}

constexpr auto json_fields(const BootstrapInterval*) {
  return std::tuple{field("low", &BootstrapInterval::low), field("high", &BootstrapInterval::high)};
}

constexpr auto json_fields(const ConfidenceEvidence*) {
  using C = ConfidenceEvidence;
  return std::tuple{field("method", &C::method),
                    field("resamples", &C::resamples),
                    field("level", &C::level),
                    field("seed", &C::seed),
                    field("ttft_p99_ms", &C::ttft_p99_ms),
                    field("itl_p99_ms", &C::itl_p99_ms),
                    field("end_to_end_p99_ms", &C::end_to_end_p99_ms)};
}

constexpr auto json_fields(const SteadyStateEvidence*) {
  using S = SteadyStateEvidence;
  return std::tuple{field("rule", &S::rule),
                    field("window_start_offset_ms", &S::window_start_offset_ms),
                    field("window_end_offset_ms", &S::window_end_offset_ms),
                    field("completed_requests", &S::completed_requests),
                    field("output_tokens", &S::output_tokens),
                    field("status", &S::status),
                    field("reason", &S::reason),
                    field("throughput_tok_s", &S::throughput_tok_s)};
}

constexpr auto json_fields(const TokenEvidence*) {
  using T = TokenEvidence;
  return std::tuple{field("requests", &T::requests),     field("input_min", &T::input_min),
                    field("input_p50", &T::input_p50),   field("input_max", &T::input_max),
                    field("output_min", &T::output_min), field("output_p50", &T::output_p50),
                    field("output_max", &T::output_max), field("max_tokens_asked", &T::max_tokens_asked),
                    field("cut_short", &T::cut_short)};
}

constexpr auto json_fields(const CacheReset*) {
  return std::tuple{field("status", &CacheReset::status), field("method", &CacheReset::method),
                    field("error", &CacheReset::error)};
}

constexpr auto json_fields(const CacheEvidence*) {
  using C = CacheEvidence;
  return std::tuple{field("prompts", &C::prompts),
                    field("declared_shared_share", &C::declared_shared_share),
                    field("allowance_tokens_per_request", &C::allowance_tokens_per_request),
                    field("reset", &C::reset),
                    field("status", &C::status),
                    field("source", &C::source),
                    field("requests", &C::requests),
                    field("prompt_tokens", &C::prompt_tokens),
                    field("cached_tokens", &C::cached_tokens),
                    field("cached_share", &C::cached_share),
                    field("limit_share", &C::limit_share),
                    field("carryover", &C::carryover),
                    field("server_cached_share", &C::server_cached_share),
                    field("reason", &C::reason)};
}

// `load` is written and read by these (its coordinate's key depends on the axis), found by
// argument-dependent lookup from the field walk below.
static void write_member(boost::json::object& o, std::string_view key, const LoadEvidence& l) {
  boost::json::object out;
  if (l.coordinate_key == "concurrency" && l.coordinate == std::floor(l.coordinate) && std::abs(l.coordinate) < 1e15)
    out[l.coordinate_key] = static_cast<std::int64_t>(l.coordinate);
  else
    out[l.coordinate_key] = l.coordinate;
  write_fields_into(out, l);
  o[key] = std::move(out);
}

static void read_member(JsonReader& r, std::string_view key, std::optional<LoadEvidence>& out) {
  const auto* m = r.object(key);
  if (m == nullptr) return;
  JsonReader in(*m, r.path(key));
  auto& l = out.emplace();
  for (const char* axis : {"concurrency", "rate_rps"}) {
    if (m->contains(axis)) {
      l.coordinate_key = axis;
      in.read(axis, l.coordinate);
      break;
    }
  }
  read_fields(in, l);
  r.adopt(in);
}

constexpr auto json_fields(const PointEvidence*) {
  using E = PointEvidence;
  return std::tuple{field("load", &E::load),
                    field("generator", &E::generator),
                    field("confidence", &E::confidence),
                    field("errors_by_class", &E::errors_by_class),
                    field("steady_state", &E::steady_state),
                    field("server", &E::server),
                    field("energy", &E::energy),
                    field("cache", &E::cache),
                    field("tokens", &E::tokens)};
}

std::optional<double> PointEvidence::server_number(std::string_view key) const {
  if (!server) return std::nullopt;
  const auto* v = server->if_contains(key);
  return v && v->is_number() ? std::optional<double>(v->to_number<double>()) : std::nullopt;
}

boost::json::object evidence_json(const PointEvidence& e) { return write_with_unknown(e); }

Result<PointEvidence> parse_point_evidence(const boost::json::object& o) {
  return parse_with_unknown<PointEvidence>(o, "evidence", errc::kSweepEvidence);
}

}  // namespace mpo::sweep
