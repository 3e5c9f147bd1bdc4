// The implementation of sweep/receipt.hpp. The sweep receipt `fak.serving-sweep.v1` as data
// (docs/FAK.md 6.6, field order kept), with what this project adds: rate (open-loop) sweeps, per-
// point samples and evidence (generator lateness, server counters, energy, confidence intervals),
// an e2e budget, the p99 SLA boundary, the saturation finding, and a validity block.
#include "sweep/receipt.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/envelope.hpp"
#include "core/go_json.hpp"
#include "core/json.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/typed_json.hpp"

namespace mpo::sweep {

// Keys in the order evaluate.cpp has always written them, so receipts stay byte for byte the same;
// an unset string is left out.
constexpr auto json_fields(const P99Boundary*) {
  return std::tuple{field_omit_empty("rule", &P99Boundary::rule),
                    field_omit_empty("status", &P99Boundary::status),
                    field("coordinate", &P99Boundary::coordinate),
                    field("last_passing", &P99Boundary::last_passing),
                    field_omit_empty("reason", &P99Boundary::reason),
                    field("first_failing", &P99Boundary::first_failing),
                    field_omit_empty("confidence", &P99Boundary::confidence),
                    field_omit_empty("note", &P99Boundary::note)};
}
constexpr auto json_fields(const SaturationSignal*) {
  return std::tuple{field("signal", &SaturationSignal::signal), field("at", &SaturationSignal::at),
                    field("detail", &SaturationSignal::detail)};
}
// `signals` is written by saturation_json: always with a rule (an empty list says none fired), never
// without one (a fak receipt has no saturation block at all).
constexpr auto json_fields(const Saturation*) {
  return std::tuple{field_omit_empty("rule", &Saturation::rule), field_omit_empty("status", &Saturation::status),
                    field_omit_empty("reason", &Saturation::reason), field("knee", &Saturation::knee),
                    field("saturated_at", &Saturation::saturated_at)};
}

constexpr auto json_fields(const EngineIdentity*) {
  using I = EngineIdentity;
  return std::tuple{field("models", &I::models), field("owned_by", &I::owned_by),
                    field("metrics_engine", &I::metrics_engine), field("server_instance", &I::server_instance)};
}

constexpr auto json_fields(const ShardSetting*) {
  using S = ShardSetting;
  return std::tuple{field("index", &S::index), field("count", &S::count), field("start_at", &S::start_at),
                    field("point_period_s", &S::point_period_s), field("start_lateness_ms", &S::start_lateness_ms)};
}

constexpr auto json_fields(const ShardRecord*) {
  using R = ShardRecord;
  return std::tuple{field("index", &R::index),
                    field("file", &R::file),
                    field("receipt_sha256", &R::receipt_sha256),
                    field("machine_id", &R::machine_id),
                    field("generated_at", &R::generated_at),
                    field("start_lateness_ms", &R::start_lateness_ms),
                    field("clock_offset", &R::clock_offset)};
}

constexpr auto json_fields(const SweepLoad*) {
  using L = SweepLoad;
  return std::tuple{field("mode", &L::mode),
                    field("arrival", &L::arrival),
                    field("burstiness", &L::burstiness),
                    field("url", &L::url),
                    field("api", &L::api),
                    field("workload_source", &L::workload_source),
                    field("sessions", &L::sessions),
                    field("requests_per_point", &L::requests_per_point),
                    field("warmup_rule", &L::warmup_rule),
                    field("seed", &L::seed),
                    field("slo_ms", &L::slo_ms),
                    field("lateness_bound_ms", &L::lateness_bound_ms),
                    field("ignore_eos", &L::ignore_eos),
                    field("timeout_s", &L::timeout_s),
                    field("metrics_url", &L::metrics_url),
                    field("power", &L::power),
                    field("dcgm_url", &L::dcgm_url),
                    field("prompts", &L::prompts),
                    field("prompt_salt", &L::prompt_salt),
                    field("prompt_lengths", &L::prompt_lengths),
                    field("interrupted", &L::interrupted),
                    field("cache_reset", &L::cache_reset),
                    field("observed_engine_identity", &L::observed_engine_identity),
                    field("observed_engine_receipt_digest", &L::observed_engine_receipt_digest),
                    field("shard", &L::shard),
                    field("shards", &L::shards)};
}

boost::json::object engine_identity_json(const EngineIdentity& id) {
  boost::json::object o;
  write_fields_into(o, id);
  return o;
}

namespace {

boost::json::value coordinate_json(loadgen::LoadMode m, double v) {
  if (m == loadgen::LoadMode::kConcurrency && v == std::floor(v) && std::fabs(v) < 9e15) {
    return static_cast<std::int64_t>(v);
  }
  return v;
}

std::string str(const boost::json::object& o, std::string_view key) {
  return std::string(json_string(o, key).value_or(""));
}

void put_if(boost::json::object& o, std::string_view key, const std::string& v) {
  if (!v.empty()) o[key] = v;
}

boost::json::object selection_json(loadgen::LoadMode m, const Selection& s) {
  boost::json::object o;
  o[point_key(m)] = coordinate_json(m, s.coordinate);
  o["throughput_tok_s"] = s.throughput_tok_s;
  put_if(o, "throughput_unit", s.throughput_unit);
  put_if(o, "token_count_basis", s.token_count_basis);
  if (s.goodput_rps) o["goodput_rps"] = *s.goodput_rps;
  if (s.ttft_p99_ms) o["ttft_p99_ms"] = *s.ttft_p99_ms;
  if (s.itl_p99_ms) o["itl_p99_ms"] = *s.itl_p99_ms;
  if (s.e2e_p99_ms) o["end_to_end_p99_ms"] = *s.e2e_p99_ms;
  return o;
}

Selection selection_from(loadgen::LoadMode m, const boost::json::object& o) {
  Selection s;
  s.coordinate = json_double(o, point_key(m)).value_or(0);
  s.throughput_tok_s = json_double(o, "throughput_tok_s").value_or(0);
  s.throughput_unit = json_string(o, "throughput_unit").value_or("");
  s.token_count_basis = json_string(o, "token_count_basis").value_or("");
  s.goodput_rps = json_double(o, "goodput_rps");
  s.ttft_p99_ms = json_double(o, "ttft_p99_ms");
  s.itl_p99_ms = json_double(o, "itl_p99_ms");
  s.e2e_p99_ms = json_double(o, "end_to_end_p99_ms");
  return s;
}

boost::json::object contract_json(const Contract& c) {
  boost::json::object o;
  o["track"] = c.track;
  o["model"] = c.model;
  o["engine"] = c.engine;
  o["engine_receipt_digest"] = c.engine_receipt_digest;
  o["batch_capacity"] = c.batch_capacity;
  o["capacity_source"] = c.capacity_source;
  return o;
}

boost::json::object saturation_json(const Saturation& s) {
  boost::json::object o;
  write_fields_into(o, s);
  if (!s.rule.empty() || !s.signals.empty()) write_member(o, "signals", s.signals);
  return o;
}

// A track's p99 boundary and saturation (ours), read member by member; a member of the wrong type
// is an error naming it.
std::optional<std::string> read_findings(const boost::json::object& track, std::size_t index, TrackSummary& s) {
  JsonReader r(track, fmt::format("tracks[{}]", index));
  read_member(r, "p99_boundary", s.p99_boundary);
  if (const auto* sat = r.object("saturation")) {
    JsonReader nested(*sat, r.path("saturation"));
    read_fields(nested, s.saturation);
    read_member(nested, "signals", s.saturation.signals);
    r.adopt(nested);
  }
  if (!r.ok()) return r.error();
  return std::nullopt;
}

}  // namespace

namespace {

// One track's measurement at one point, in fak's order: status, contract, stats, evidence, samples.
boost::json::object track_point_json(const TrackPoint& tp) {
  boost::json::object t;
  t["track"] = tp.track;
  t["status"] = tp.status;
  put_if(t, "reason_code", tp.reason_code);
  put_if(t, "reason", tp.reason);
  put_if(t, "measurement_status", tp.measurement_status);
  t["model"] = tp.model;
  t["engine"] = tp.engine;
  t["engine_receipt_digest"] = tp.engine_receipt_digest;
  t["batch_capacity"] = tp.batch_capacity;
  t["capacity_source"] = tp.capacity_source;
  t["stats"] = stats_json(tp.stats);
  t["evidence"] = evidence_json(tp.evidence);
  boost::json::array samples;
  for (const auto& s : tp.samples) samples.push_back(loadgen::sample_json(s));
  t["samples"] = std::move(samples);
  return t;
}

// One track's summary: status, peak, SLA knee, and ours: the p99 boundary and saturation.
boost::json::object track_summary_json(loadgen::LoadMode mode, const TrackSummary& s) {
  boost::json::object t;
  t["track"] = s.track;
  t["status"] = s.status;
  put_if(t, "reason", s.reason);
  t["valid_points"] = s.valid_points;
  put_if(t, "envelope_digest", s.envelope_digest);
  put_if(t, "peak_status", s.peak_status);
  put_if(t, "peak_reason", s.peak_reason);
  if (s.peak) t["peak"] = selection_json(mode, *s.peak);
  t["sla_status"] = s.sla_status;
  put_if(t, "sla_reason", s.sla_reason);
  if (s.sla_knee) t["sla_knee"] = selection_json(mode, *s.sla_knee);
  write_member(t, "p99_boundary", s.p99_boundary);
  t["saturation"] = saturation_json(s.saturation);
  return t;
}

}  // namespace

boost::json::value receipt_json(const SweepReceipt& r) {
  boost::json::object o = receipt_head(r.schema, r.generated_at, r.machine_id, r.model);
  boost::json::object workload;
  workload["digest"] = r.workload_digest;
  workload["requests"] = r.workload_requests;
  boost::json::array coords;
  for (double v : r.coordinates) coords.push_back(coordinate_json(r.mode, v));
  workload[r.mode == loadgen::LoadMode::kConcurrency ? "concurrencies" : "rates"] = std::move(coords);
  o["workload"] = std::move(workload);
  boost::json::array contracts;
  for (const auto& c : r.contracts) contracts.push_back(contract_json(c));
  o["contracts"] = std::move(contracts);
  boost::json::object sla;
  if (r.sla.ttft_p99_ms > 0) sla["ttft_p99_ms"] = r.sla.ttft_p99_ms;
  if (r.sla.itl_p99_ms > 0) sla["itl_p99_ms"] = r.sla.itl_p99_ms;
  if (r.sla.e2e_p99_ms > 0) sla["e2e_p99_ms"] = r.sla.e2e_p99_ms;
  o["sla"] = std::move(sla);
  boost::json::array points;
  for (const auto& p : r.points) {
    boost::json::object po;
    po[point_key(r.mode)] = coordinate_json(r.mode, p.coordinate);
    po["workload_digest"] = p.workload_digest;
    boost::json::array tracks;
    for (const auto& tp : p.tracks) tracks.push_back(track_point_json(tp));
    po["tracks"] = std::move(tracks);
    points.push_back(std::move(po));
  }
  o["points"] = std::move(points);
  boost::json::array summaries;
  for (const auto& s : r.tracks) summaries.push_back(track_summary_json(r.mode, s));
  o["tracks"] = std::move(summaries);
  boost::json::object honesty;
  const bool newer = r.rules_generation >= 2;
  honesty["comparable_point_rule"] = newer ? kComparablePointRuleGeneration2 : kComparablePointRule;
  honesty["capacity_rule"] = kCapacityRule;
  honesty["peak_rule"] = newer ? kPeakRuleGeneration2 : kPeakRule;
  honesty["sla_knee_rule"] = kSlaKneeRule;
  honesty["unknown_rule"] = kUnknownRule;
  o["honesty"] = std::move(honesty);
  put_if(o, "artifact", r.artifact);
  boost::json::object tool = tool_object(r.tool_version);
  if (r.rules_generation > 1) tool["rules_generation"] = r.rules_generation;
  o["tool"] = std::move(tool);
  o["load"] = r.load ? write_with_unknown(*r.load) : boost::json::object();
  o["validity"] = validity_object({r.valid, r.validity_reasons, r.warnings}, true);
  return o;
}

std::string receipt_text(const SweepReceipt& r) { return go_marshal_indent(receipt_json(r)); }

namespace {

// One track's measurement at one point: its status, contract, stats, evidence and samples.
Result<TrackPoint> track_point_from(const boost::json::object& t) {
  TrackPoint tp;
  tp.track = str(t, "track");
  tp.status = str(t, "status");
  tp.reason_code = str(t, "reason_code");
  tp.reason = str(t, "reason");
  tp.measurement_status = str(t, "measurement_status");
  tp.model = str(t, "model");
  tp.engine = str(t, "engine");
  tp.engine_receipt_digest = str(t, "engine_receipt_digest");
  tp.batch_capacity = json_int(t, "batch_capacity").value_or(0);
  tp.capacity_source = str(t, "capacity_source");
  if (auto st = parse_json_member(t, "stats", parse_serving_stats, tp.stats); !st) return st.error();
  if (auto st = parse_json_member(t, "evidence", parse_point_evidence, tp.evidence); !st) return st.error();
  auto samples = loadgen::samples_from_json(t, errc::kSweepJson);
  if (!samples) return samples.error();
  tp.samples = std::move(*samples);
  return tp;
}

// The per-track summaries (status, peak, SLA knee, ours: the p99 boundary and saturation).
Status read_track_summaries(const boost::json::object& o, SweepReceipt& r) {
  if (const auto* ts = json_array(o, "tracks")) {
    for (const auto& v : *ts) {
      if (!v.is_object()) continue;
      const auto& t = v.as_object();
      TrackSummary s;
      s.track = str(t, "track");
      s.status = str(t, "status");
      s.reason = str(t, "reason");
      s.valid_points = json_int(t, "valid_points").value_or(0);
      s.envelope_digest = str(t, "envelope_digest");
      s.peak_status = str(t, "peak_status");
      s.peak_reason = str(t, "peak_reason");
      if (const auto* p = json_object(t, "peak")) s.peak = selection_from(r.mode, *p);
      s.sla_status = str(t, "sla_status");
      s.sla_reason = str(t, "sla_reason");
      if (const auto* k = json_object(t, "sla_knee")) s.sla_knee = selection_from(r.mode, *k);
      if (auto error = read_findings(t, r.tracks.size(), s)) return make_error(errc::kSweepJson, *error);
      r.tracks.push_back(std::move(s));
    }
  }
  return Ok{};
}

// Who wrote the receipt and by which rules: ours say so in `tool`; a fak receipt that carries the
// newer codes or the newer honesty string was judged by fak's newer rules.
void read_tool(const boost::json::object& o, SweepReceipt& r) {
  r.tool_name.clear();
  r.rules_generation = 1;
  if (const auto* tool = json_object(o, "tool")) {
    r.tool_name = str(*tool, "name");
    r.tool_version = str(*tool, "version");
    r.rules_generation = static_cast<int>(json_int(*tool, "rules_generation").value_or(1));
  }
  if (r.tool_name.empty()) {
    if (const auto* h = json_object(o, "honesty");
        h && str(*h, "comparable_point_rule").find("throughput unit") != std::string::npos) {
      r.rules_generation = 2;
    }
    for (const auto& p : r.points)
      for (const auto& tp : p.tracks)
        if (tp.reason_code.rfind("throughput_identity_", 0) == 0) r.rules_generation = 2;
  }
}

}  // namespace

Result<SweepReceipt> parse_sweep_receipt(std::string_view text) {
  auto doc = parse_exact_json(text);
  if (!doc) return doc.error();
  if (!doc->is_object()) return make_error(errc::kSweepJson, "a sweep receipt is a JSON object");
  const auto& o = doc->as_object();
  SweepReceipt r;
  r.schema = str(o, "schema");
  r.generated_at = str(o, "generated_at");
  r.machine_id = str(o, "machine_id");
  r.model = str(o, "model");
  if (const auto* w = json_object(o, "workload")) {
    r.workload_digest = str(*w, "digest");
    r.workload_requests = json_int(*w, "requests").value_or(0);
    const auto* rates = json_array(*w, "rates");
    r.mode = rates ? loadgen::LoadMode::kRate : loadgen::LoadMode::kConcurrency;
    const auto* coords = rates ? rates : json_array(*w, "concurrencies");
    if (coords) {
      for (const auto& v : *coords) {
        if (v.is_int64())
          r.coordinates.push_back(static_cast<double>(v.get_int64()));
        else if (v.is_double())
          r.coordinates.push_back(v.get_double());
        else
          return make_error(errc::kSweepJson, "workload coordinates must be numbers");
      }
    }
  }
  if (const auto* cs = json_array(o, "contracts")) {
    for (const auto& v : *cs) {
      if (!v.is_object()) return make_error(errc::kSweepJson, "a contract is not an object");
      const auto& c = v.as_object();
      r.contracts.push_back(Contract{str(c, "track"), str(c, "model"), str(c, "engine"),
                                     str(c, "engine_receipt_digest"), json_int(c, "batch_capacity").value_or(0),
                                     str(c, "capacity_source")});
    }
  }
  if (const auto* sla = json_object(o, "sla")) {
    r.sla.ttft_p99_ms = json_double(*sla, "ttft_p99_ms").value_or(0);
    r.sla.itl_p99_ms = json_double(*sla, "itl_p99_ms").value_or(0);
    r.sla.e2e_p99_ms = json_double(*sla, "e2e_p99_ms").value_or(0);
  }
  if (const auto* ps = json_array(o, "points")) {
    for (const auto& v : *ps) {
      if (!v.is_object()) return make_error(errc::kSweepJson, "a point is not an object");
      const auto& po = v.as_object();
      Point p;
      const auto c = json_double(po, point_key(r.mode));
      if (!c) return make_error(errc::kSweepJson, fmt::format("a point has no \"{}\"", point_key(r.mode)));
      p.coordinate = *c;
      p.workload_digest = str(po, "workload_digest");
      if (const auto* ts = json_array(po, "tracks")) {
        for (const auto& tv : *ts) {
          if (!tv.is_object()) return make_error(errc::kSweepJson, "a track point is not an object");
          auto tp = track_point_from(tv.as_object());
          if (!tp) return tp.error();
          p.tracks.push_back(std::move(*tp));
        }
      }
      r.points.push_back(std::move(p));
    }
  }
  if (auto st = read_track_summaries(o, r); !st) return st.error();
  r.artifact = str(o, "artifact");
  read_tool(o, r);
  if (const auto* load = json_object(o, "load")) {
    if (auto error = read_with_unknown(*load, "load", r.load.emplace())) return make_error(errc::kSweepJson, *error);
  }
  auto validity = read_validity(o);
  r.valid = validity.valid;
  r.validity_reasons = std::move(validity.reasons);
  r.warnings = std::move(validity.warnings);
  return r;
}

}  // namespace mpo::sweep
