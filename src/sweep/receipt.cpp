// The implementation of sweep/receipt.hpp. The sweep receipt `fak.serving-sweep.v1` as data
// (docs/FAK.md 6.6, field order kept), with what this project adds: rate (open-loop) sweeps, per-
// point samples and evidence (generator lateness, server counters, energy, confidence intervals),
// an e2e budget, the p99 SLA boundary, the saturation finding, and a validity block.
#include "sweep/receipt.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/typed_json.hpp"

namespace mpo::sweep {

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

void put_if(boost::json::object& o, std::string_view key, const std::optional<double>& v) {
  if (v) o[key] = *v;
}

// Keys in the order evaluate.cpp has always written them, so receipts stay byte for byte the same.
boost::json::object p99_boundary_json(const P99Boundary& b) {
  boost::json::object o;
  put_if(o, "rule", b.rule);
  put_if(o, "status", b.status);
  put_if(o, "coordinate", b.coordinate);
  put_if(o, "last_passing", b.last_passing);
  put_if(o, "reason", b.reason);
  put_if(o, "first_failing", b.first_failing);
  put_if(o, "confidence", b.confidence);
  put_if(o, "note", b.note);
  return o;
}

P99Boundary p99_boundary_from(const boost::json::object& o) {
  P99Boundary b;
  b.rule = str(o, "rule");
  b.status = str(o, "status");
  b.coordinate = json_double(o, "coordinate");
  b.last_passing = json_double(o, "last_passing");
  b.reason = str(o, "reason");
  b.first_failing = json_double(o, "first_failing");
  b.confidence = str(o, "confidence");
  b.note = str(o, "note");
  return b;
}

boost::json::object saturation_json(const Saturation& s) {
  boost::json::object o;
  put_if(o, "rule", s.rule);
  put_if(o, "status", s.status);
  put_if(o, "reason", s.reason);
  put_if(o, "knee", s.knee);
  put_if(o, "saturated_at", s.saturated_at);
  if (!s.rule.empty() || !s.signals.empty()) {  // a fak receipt has no saturation block at all
    boost::json::array signals;
    for (const auto& g : s.signals) {
      boost::json::object x;
      x["signal"] = g.signal;
      x["at"] = g.at;
      x["detail"] = g.detail;
      signals.push_back(std::move(x));
    }
    o["signals"] = std::move(signals);
  }
  return o;
}

Saturation saturation_from(const boost::json::object& o) {
  Saturation s;
  s.rule = str(o, "rule");
  s.status = str(o, "status");
  s.reason = str(o, "reason");
  s.knee = json_double(o, "knee");
  s.saturated_at = json_double(o, "saturated_at");
  if (const auto* signals = json_array(o, "signals")) {
    for (const auto& v : *signals) {
      if (!v.is_object()) continue;
      const auto& x = v.as_object();
      s.signals.push_back({str(x, "signal"), json_double(x, "at").value_or(0), str(x, "detail")});
    }
  }
  return s;
}

}  // namespace

boost::json::value receipt_json(const SweepReceipt& r) {
  boost::json::object o;
  o["schema"] = r.schema;
  o["generated_at"] = r.generated_at;
  o["machine_id"] = r.machine_id;
  o["model"] = r.model;
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
    for (const auto& tp : p.tracks) {
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
      tracks.push_back(std::move(t));
    }
    po["tracks"] = std::move(tracks);
    points.push_back(std::move(po));
  }
  o["points"] = std::move(points);
  boost::json::array summaries;
  for (const auto& s : r.tracks) {
    boost::json::object t;
    t["track"] = s.track;
    t["status"] = s.status;
    put_if(t, "reason", s.reason);
    t["valid_points"] = s.valid_points;
    put_if(t, "envelope_digest", s.envelope_digest);
    put_if(t, "peak_status", s.peak_status);
    put_if(t, "peak_reason", s.peak_reason);
    if (s.peak) t["peak"] = selection_json(r.mode, *s.peak);
    t["sla_status"] = s.sla_status;
    put_if(t, "sla_reason", s.sla_reason);
    if (s.sla_knee) t["sla_knee"] = selection_json(r.mode, *s.sla_knee);
    t["p99_boundary"] = p99_boundary_json(s.p99_boundary);
    t["saturation"] = saturation_json(s.saturation);
    summaries.push_back(std::move(t));
  }
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
  boost::json::object tool;
  tool["name"] = "modelperfobs";
  tool["version"] = r.tool_version;
  if (r.rules_generation > 1) tool["rules_generation"] = r.rules_generation;
  o["tool"] = std::move(tool);
  o["load"] = r.load ? write_with_unknown(*r.load) : boost::json::object();
  boost::json::object validity;
  validity["valid"] = r.valid;
  boost::json::array reasons, warnings;
  for (const auto& v : r.validity_reasons) reasons.push_back(boost::json::string(v));
  for (const auto& v : r.warnings) warnings.push_back(boost::json::string(v));
  validity["reasons"] = std::move(reasons);
  validity["warnings"] = std::move(warnings);
  o["validity"] = std::move(validity);
  return o;
}

std::string receipt_text(const SweepReceipt& r) { return go_marshal_indent(receipt_json(r)); }

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
          const auto& t = tv.as_object();
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
          if (const auto* s = json_object(t, "stats")) {
            auto stats = parse_serving_stats(*s);
            if (!stats) return stats.error();
            tp.stats = std::move(*stats);
          }
          if (const auto* e = json_object(t, "evidence")) {
            auto evidence = parse_point_evidence(*e);
            if (!evidence) return evidence.error();
            tp.evidence = std::move(*evidence);
          }
          if (const auto* ss = json_array(t, "samples")) {
            for (const auto& sv : *ss) {
              if (!sv.is_object()) return make_error(errc::kSweepJson, "a sample is not an object");
              auto s = loadgen::sample_from_json(sv.as_object());
              if (!s) return s.error();
              tp.samples.push_back(std::move(*s));
            }
          }
          p.tracks.push_back(std::move(tp));
        }
      }
      r.points.push_back(std::move(p));
    }
  }
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
      if (const auto* b = json_object(t, "p99_boundary")) s.p99_boundary = p99_boundary_from(*b);
      if (const auto* sat = json_object(t, "saturation")) s.saturation = saturation_from(*sat);
      r.tracks.push_back(std::move(s));
    }
  }
  r.artifact = str(o, "artifact");
  r.tool_name.clear();
  r.rules_generation = 1;
  if (const auto* tool = json_object(o, "tool")) {
    r.tool_name = str(*tool, "name");
    r.tool_version = str(*tool, "version");
    r.rules_generation = static_cast<int>(json_int(*tool, "rules_generation").value_or(1));
  }
  if (r.tool_name.empty()) {
    // A fak receipt that carries the newer codes or the newer honesty string was judged by the
    // newer rules.
    if (const auto* h = json_object(o, "honesty");
        h && str(*h, "comparable_point_rule").find("throughput unit") != std::string::npos) {
      r.rules_generation = 2;
    }
    for (const auto& p : r.points)
      for (const auto& tp : p.tracks)
        if (tp.reason_code.rfind("throughput_identity_", 0) == 0) r.rules_generation = 2;
  }
  if (const auto* load = json_object(o, "load")) {
    if (auto error = read_with_unknown(*load, "load", r.load.emplace())) return make_error(errc::kSweepJson, *error);
  }
  if (const auto* v = json_object(o, "validity")) {
    r.valid = json_bool(*v, "valid").value_or(false);
    if (const auto* a = json_array(*v, "reasons")) {
      for (const auto& x : *a)
        if (x.is_string()) r.validity_reasons.emplace_back(x.get_string());
    }
    if (const auto* a = json_array(*v, "warnings")) {
      for (const auto& x : *a)
        if (x.is_string()) r.warnings.emplace_back(x.get_string());
    }
  }
  return r;
}

}  // namespace mpo::sweep
