// The implementation of sweep/evaluate.hpp. Judging a sweep from its own contents (docs/FAK.md
// 6.7-6.8, and ours): each track point's validity (first failure wins), and per track the peak, the
// SLA knee, the p99 SLA boundary and the saturation finding.
#include "sweep/evaluate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "sweep/fold.hpp"
#include "sweep/warnings.hpp"

namespace mpo::sweep {
namespace {

std::optional<double> p99(const QuantileMetric& q) { return q.measured() ? q.p99 : std::nullopt; }

// What a point's throughput is counted in (fak's throughput identity, rules generation 2).
struct ThroughputIdentity {
  std::string unit, basis;
  bool sample_basis_missing = false;  // a successful measured sample that names no basis
};

ThroughputIdentity throughput_identity(const TrackPoint& tp) {
  ThroughputIdentity id;
  id.unit = tp.stats.throughput_tok_s.unit.value_or("");
  id.basis = tp.stats.token_count_basis;
  for (const auto& s : tp.samples) {
    if (!s.warmup && s.ok && s.output_token_count_basis.empty()) id.sample_basis_missing = true;
  }
  return id;
}

bool known_basis(std::string_view b) {
  return b == "usage.completion_tokens" || b == "stream_content_events" || b == "estimated_content_tokens";
}

// The throughput identity each track's points are held to (fak, generation 2): that of the track's
// first valid point, in coordinate order; filled as the points are judged.
using References = std::map<std::string, ThroughputIdentity>;

void set(TrackPoint& tp, std::string status, std::string code, std::string reason) {
  tp.status = std::move(status);
  tp.reason_code = std::move(code);
  tp.reason = std::move(reason);
}

// A point's status, code and reason (fak's point evaluation, then ours): the first check that finds
// a problem decides.
struct Judgement {
  std::string status, code, reason;
};
using Check = std::optional<Judgement>;

// The contract, the workload, the model and the engine the point ran against.
Check identity_problem(const SweepReceipt& r, const Point& p, const TrackPoint& tp, const Contract* c) {
  if (c == nullptr) return Judgement{"invalid", "contract_missing", "no contract declared for track " + tp.track};
  if (p.workload_digest != r.workload_digest) {
    return Judgement{"invalid", "workload_identity_mismatch", "point workload digest differs from the report's"};
  }
  if (tp.model != c->model) {
    return Judgement{"invalid", "model_identity_mismatch",
                     fmt::format("point model '{}' differs from the contract's '{}'", tp.model, c->model)};
  }
  for (const auto& s : tp.samples) {
    if (s.ok && !s.response_model.empty() && s.response_model != c->model) {
      return Judgement{
          "invalid", "model_identity_mismatch",
          fmt::format("the server answered request {} as model '{}', not '{}'", s.id, s.response_model, c->model)};
    }
  }
  if (c->engine.empty() || !is_sha256_digest(c->engine_receipt_digest)) {
    return Judgement{"invalid", "engine_identity_unknown",
                     "the contract's engine is blank or its engine receipt is not sha256:<64 hex>"};
  }
  if (tp.engine != c->engine || tp.engine_receipt_digest != c->engine_receipt_digest) {
    return Judgement{"invalid", "engine_identity_mismatch",
                     "point engine or engine receipt differs from the contract's"};
  }
  return std::nullopt;
}

// The declared batch capacity, and the point within it.
Check capacity_problem(const SweepReceipt& r, const Point& p, const TrackPoint& tp, const Contract& c) {
  const std::string coord = go_float_text(p.coordinate);
  if (c.batch_capacity <= 0 || c.capacity_source.empty()) {
    return Judgement{"invalid", "capacity_unknown",
                     "batch capacity or its source is not declared (--batch-capacity N --capacity-source LABEL)"};
  }
  if (tp.batch_capacity != c.batch_capacity || tp.capacity_source != c.capacity_source) {
    return Judgement{"invalid", "capacity_identity_mismatch",
                     "point capacity or capacity source differs from the contract's"};
  }
  if (r.mode == loadgen::LoadMode::kConcurrency && p.coordinate > static_cast<double>(c.batch_capacity)) {
    return Judgement{"invalid", "capacity_exceeded",
                     fmt::format("concurrency {} is above the declared batch capacity {}", coord, c.batch_capacity)};
  }
  if (r.mode == loadgen::LoadMode::kRate) {
    const auto in_flight = tp.stats.observed_max_in_flight;
    if (in_flight && *in_flight > c.batch_capacity) {
      return Judgement{
          "invalid", "capacity_exceeded",
          fmt::format("{} requests were in flight at once at {} req/s, above the declared batch capacity {}",
                      *in_flight, coord, c.batch_capacity)};
    }
  }
  return std::nullopt;
}

// What the server and its cache say of the point: a restart, traffic not ours, a cache filled earlier.
Check server_problem(const TrackPoint& tp) {
  if (const auto& server = tp.evidence.server) {
    if (json_bool(*server, "restarted").value_or(false)) {
      return Judgement{"invalid", "engine_restarted",
                       "the engine restarted or its counters reset during the point: " +
                           std::string(json_string(*server, "reset_reason").value_or("counters went down"))};
    }
    const auto delta = json_double(*server, "requests_delta");
    const auto sent = json_double(*server, "requests_sent");
    if (delta && sent && *delta > *sent) {
      return Judgement{"invalid", "foreign_traffic",
                       fmt::format("the server finished {} requests during the point, this sweep sent {}",
                                   go_float_text(*delta), go_float_text(*sent))};
    }
  }
  if (const auto& cache = tp.evidence.cache; cache && cache->carryover.value_or(false)) {
    return Judgement{
        "invalid", "cache_carryover",
        fmt::format("{:.1f}% of the point's prompt tokens came from the prefix cache ({}), above the {:.1f}% "
                    "its prompts share: the point measured a cache an earlier point, an earlier run or other "
                    "traffic filled. Rerun with a prompt salt of its own (sweep draws one per run unless "
                    "--prompt-salt none) and without --same-prompts-every-point, or empty the cache before "
                    "each point with --reset-cache-between-points (llama.cpp: start it with --slot-save-path "
                    "DIR and --cache-ram 0)",
                    100 * cache->cached_share.value_or(0), cache->source.value_or("?"),
                    100 * cache->limit_share.value_or(0))};
  }
  return std::nullopt;
}

// The load generator kept its schedule (each shard's on its own, for a merged point).
Check generator_problem(const TrackPoint& tp) {
  const auto& gen = tp.evidence.generator;
  const auto lateness = gen ? gen->send_lateness_p99_ms : std::nullopt;
  const auto bound = gen ? std::optional<double>(gen->lateness_bound_ms) : std::nullopt;
  if (lateness && bound && *bound > 0 && *lateness > *bound) {
    return Judgement{"invalid", "client_saturated",
                     fmt::format("the load generator sent late: p99 send lateness {} ms is over its bound {} ms",
                                 go_float_text(*lateness), go_float_text(*bound))};
  }
  if (bound && *bound > 0) {
    // A merged point (`sweep merge`): each shard's generator is judged on its own requests, so one
    // saturated client is not hidden among the others' punctual sends.
    std::map<int, std::vector<double>> by_shard;
    for (const auto& s : tp.samples) {
      if (s.shard && !s.warmup) by_shard[*s.shard].push_back(loadgen::send_lateness_ms(s));
    }
    if (by_shard.size() > 1) {
      for (auto& [shard, late] : by_shard) {
        std::sort(late.begin(), late.end());
        const double p99 = nearest_rank(late, 0.99);
        if (p99 > *bound) {
          return Judgement{
              "invalid", "client_saturated",
              fmt::format("shard {}'s load generator sent late: p99 send lateness {} ms is over its bound {} ms", shard,
                          go_float_text(p99), go_float_text(*bound))};
        }
      }
    }
  }
  return std::nullopt;
}

// Every request measured, and a throughput to state.
Check measurement_problem(const TrackPoint& tp) {
  const auto failed = tp.stats.failed;
  const auto ok = tp.stats.ok;
  if (tp.measurement_status == "measured" && failed > 0) {
    return Judgement{"invalid", "measurement_incomplete", fmt::format("{} of the point's requests failed", failed)};
  }
  if (tp.measurement_status != "measured" || ok <= 0) {
    return Judgement{"not_measured", "measurement_missing",
                     tp.reason.empty() || tp.status == "valid" ? "the point has no successful measurement" : tp.reason};
  }
  const auto thr = tp.stats.throughput_tok_s.measured_value();
  if (!thr || *thr <= 0) return Judgement{"not_measured", "throughput_missing", "token throughput was not measured"};
  return std::nullopt;
}

// fak's validServingSweepThroughputPair: a known basis and its own unit, else unknown; a valid pair
// other than the track's first valid point's is a mismatch (internal/webbench/serving_sweep.go).
Check throughput_identity_problem(const TrackPoint& tp, References& references) {
  const auto id = throughput_identity(tp);
  if (!known_basis(id.basis) || id.unit != id.basis + "/s") {
    return Judgement{
        "invalid", "throughput_identity_unknown",
        fmt::format("the throughput's unit '{}' and token-count basis '{}' are not a recognised pair "
                    "(usage.completion_tokens, stream_content_events or estimated_content_tokens, with that "
                    "basis + '/s' as the unit)",
                    id.unit, id.basis)};
  }
  if (id.sample_basis_missing) {
    return Judgement{
        "invalid", "throughput_identity_mismatch",
        fmt::format("a successful sample names no token-count basis where the point counts '{}'", id.basis)};
  }
  const auto ref = references.find(tp.track);
  if (ref != references.end() && (ref->second.unit != id.unit || ref->second.basis != id.basis)) {
    return Judgement{
        "invalid", "throughput_identity_mismatch",
        fmt::format("throughput in '{}', where the track's first valid point has '{}'", id.unit, ref->second.unit)};
  }
  references.emplace(tp.track, id);
  return std::nullopt;
}

void evaluate_point(const SweepReceipt& r, const Point& p, TrackPoint& tp, const Contract* c, References& references) {
  Check problem = identity_problem(r, p, tp, c);
  if (!problem) problem = capacity_problem(r, p, tp, *c);
  if (!problem) problem = server_problem(tp);
  if (!problem) problem = generator_problem(tp);
  if (!problem) problem = measurement_problem(tp);
  if (!problem && r.rules_generation >= 2) problem = throughput_identity_problem(tp, references);
  if (problem) return set(tp, std::move(problem->status), std::move(problem->code), std::move(problem->reason));
  set(tp, "valid", "", "");
}

Selection selection_of(const Point& p, const TrackPoint& tp) {
  Selection s;
  s.coordinate = p.coordinate;
  s.throughput_tok_s = tp.stats.throughput_tok_s.measured_value().value_or(0);
  s.goodput_rps = tp.stats.goodput_rps.measured_value();
  s.ttft_p99_ms = p99(tp.stats.ttft_ms);
  s.itl_p99_ms = p99(tp.stats.itl_ms);
  s.e2e_p99_ms = p99(tp.stats.end_to_end_ms);
  return s;
}

// Whether the point's p99 request, its requests ranked by latency with the failed ones last (a
// failed request met no latency budget: a timeout, a request cut or refused), is one that failed:
// nearest rank ceil(0.99 n) beyond the successful ones.
bool p99_request_failed(const ServingStats& s) {
  if (s.failed <= 0) return false;
  const auto n = s.ok + s.failed;
  const auto rank = (99 * n + 99) / 100;  // ceil(0.99 n)
  return rank > s.ok;
}

// Which budgets a point meets; nullopt when a constrained metric is missing. Its successful
// requests' p99 against each budget, unless the p99 request is a failed one (p99_request_failed),
// which meets none.
std::optional<bool> meets(const SlaBudgets& b, const TrackPoint& tp) {
  bool ok = true;
  const bool failed_at_p99 = p99_request_failed(tp.stats);
  auto check = [&](double budget, const QuantileMetric& q) -> bool {
    if (budget <= 0) return true;
    if (failed_at_p99) {
      ok = false;
      return true;
    }
    const auto v = p99(q);
    if (!v) return false;
    ok = ok && *v <= budget;
    return true;
  };
  if (!check(b.ttft_p99_ms, tp.stats.ttft_ms) || !check(b.itl_p99_ms, tp.stats.itl_ms) ||
      !check(b.e2e_p99_ms, tp.stats.end_to_end_ms)) {
    return std::nullopt;
  }
  return ok;
}

std::string censoring(const SweepReceipt& r, const Contract& c, double coordinate) {
  const bool lower_closed = r.mode == loadgen::LoadMode::kConcurrency && r.coordinates.front() == 1;
  const bool upper_closed =
      r.mode == loadgen::LoadMode::kConcurrency && r.coordinates.back() == static_cast<double>(c.batch_capacity);
  if (coordinate == r.coordinates.front() && !lower_closed) return "left_censored";
  if (coordinate == r.coordinates.back() && !upper_closed) return "right_censored";
  return "measured";
}

// Latency facts stay comparable on a point that is only invalid for capacity reasons.
bool latency_comparable(const TrackPoint& tp) {
  return tp.status == "valid" || tp.reason_code == "capacity_exceeded" || tp.reason_code == "capacity_unknown";
}

// The p99 boundary reads those, and a point whose requests failed in part too: what its failures
// say about the budgets is meets()'s to decide (skipping it put the boundary beyond a point whose
// requests timed out waiting for their first token, seen against the real llama-server).
bool boundary_comparable(const TrackPoint& tp) {
  return latency_comparable(tp) || tp.reason_code == "measurement_incomplete";
}

P99Boundary p99_boundary(const SweepReceipt& r, const std::vector<std::pair<const Point*, const TrackPoint*>>& pts) {
  P99Boundary o;
  if (!r.sla.any()) {
    o.status = "not_configured";
    o.reason = "no p99 latency budget configured";
    return o;
  }
  o.rule = kP99BoundaryRule;
  std::optional<double> last_pass, first_fail;
  bool robust = true, reentry = false;
  std::string missing;
  if (pts.size() < r.coordinates.size()) missing = "a declared point this track has no result for";
  for (const auto& [p, tp] : pts) {
    // A point that was not measured is a gap, not a point to skip: the boundary could lie before it
    // (fak: an unmeasured point leaves the knee not identifiable). After the first failing point it
    // no longer matters.
    if (tp->status == "not_measured") {
      if (missing.empty() && !first_fail) missing = go_float_text(p->coordinate);
      continue;
    }
    if (!boundary_comparable(*tp)) continue;
    const auto m = meets(r.sla, *tp);
    if (!m) {
      if (missing.empty() && !first_fail) missing = go_float_text(p->coordinate);
      continue;
    }
    if (first_fail) {
      if (*m) reentry = true;
      continue;
    }
    if (!*m) {
      first_fail = p->coordinate;
      continue;
    }
    last_pass = p->coordinate;
    // Robust when the upper end of each bootstrap interval is within its budget too.
    robust = true;
    const auto& conf = tp->evidence.confidence;
    auto check = [&](double budget, std::optional<BootstrapInterval> ConfidenceEvidence::*interval) {
      if (budget <= 0) return;
      const auto& ci = conf ? (*conf).*interval : std::nullopt;
      if (!ci || ci->high > budget) robust = false;
    };
    check(r.sla.ttft_p99_ms, &ConfidenceEvidence::ttft_p99_ms);
    check(r.sla.itl_p99_ms, &ConfidenceEvidence::itl_p99_ms);
    check(r.sla.e2e_p99_ms, &ConfidenceEvidence::end_to_end_p99_ms);
  }
  if (!missing.empty()) {
    o.status = "not_identifiable";
    o.reason = "a constrained p99 is missing at " + missing;
    return o;
  }
  if (!last_pass) {
    o.status = "not_identifiable";
    o.reason = first_fail ? "the lowest comparable point already misses a budget; test lower load"
                          : "no latency-comparable point";
    o.first_failing = first_fail;
    return o;
  }
  o.status = first_fail ? "measured" : "right_censored";
  o.coordinate = last_pass;
  o.last_passing = last_pass;
  if (first_fail)
    o.first_failing = first_fail;
  else
    o.reason = "every tested point meets the budgets; the boundary lies above the highest one";
  o.confidence = robust ? "robust" : "marginal";
  if (reentry) o.note = "a point above the first failing one meets the budgets again; the curve is not monotone";
  return o;
}

// Saturation is a fact about the server: other clients' traffic (foreign_traffic) does not hide it.
bool saturation_comparable(const TrackPoint& tp) {
  return latency_comparable(tp) || tp.reason_code == "foreign_traffic";
}

Saturation saturation(const SweepReceipt& r, const Contract& c,
                      const std::vector<std::pair<const Point*, const TrackPoint*>>& pts) {
  std::vector<SaturationSignal> signals;
  std::optional<double> saturated_at, knee;
  const Point* prev = nullptr;
  const TrackPoint* prev_tp = nullptr;
  std::optional<double> prev_waiting;
  for (const auto& pt : pts) {
    const Point* p = pt.first;  // not a structured binding: clang 14 cannot capture those
    const TrackPoint* tp = pt.second;
    if (!saturation_comparable(*tp)) continue;
    const auto thr = tp->stats.throughput_tok_s.measured_value();
    if (!thr) continue;
    auto fire = [&](std::string_view name, std::string detail) {
      signals.push_back({std::string(name), p->coordinate, std::move(detail)});
      if (!saturated_at) {
        saturated_at = p->coordinate;
        if (prev) knee = prev->coordinate;
      }
    };
    if (prev_tp) {
      const auto prev_thr = prev_tp->stats.throughput_tok_s.measured_value();
      const auto t0 = p99(prev_tp->stats.ttft_ms), t1 = p99(tp->stats.ttft_ms);
      if (prev_thr && *prev_thr > 0 && t0 && t1) {
        const double gain = (*thr - *prev_thr) / *prev_thr;
        const bool plateau = gain < kPlateauGain;
        if (plateau && *t1 > *t0) {
          fire("throughput_plateau",
               fmt::format("throughput gain {:.1f}% from {} (below {:.0f}%) while TTFT p99 rose from {} to {} ms",
                           gain * 100, go_float_text(prev->coordinate), kPlateauGain * 100, go_float_text(*t0),
                           go_float_text(*t1)));
        }
      }
    }
    if (r.mode == loadgen::LoadMode::kRate) {
      const auto& load = tp->evidence.load;
      const auto offered = load ? load->offered_rate_rps : std::nullopt;
      const auto achieved = load ? load->achieved_rate_rps : std::nullopt;
      if (offered && achieved && *offered > 0 && *achieved / *offered < kRateShortfall) {
        fire("rate_shortfall", fmt::format("achieved {:.3f} of the offered {} req/s ({:.1f}%)", *achieved,
                                           go_float_text(*offered), *achieved / *offered * 100));
      }
    }
    // A request waits for one scheduler step on arrival even on an idle server: only a queue that
    // averages at least one request over the point's samples, grew since the last point, and (when
    // the server publishes it and a capacity is declared) stands while the batch is full counts.
    const auto waiting = tp->evidence.server_number("waiting_capacity_mean");
    const auto running = tp->evidence.server_number("running_max");
    const auto kv = tp->evidence.server_number("kv_usage_peak");
    // Full: as many sequences running as the declared batch capacity, or the KV cache exhausted.
    const bool full =
        c.batch_capacity <= 0 || !running || *running >= static_cast<double>(c.batch_capacity) || (kv && *kv >= 0.95);
    if (waiting && *waiting >= 1 && full && (!prev_waiting || *waiting > *prev_waiting)) {
      fire("server_queue_capacity",
           fmt::format("on average {:.1f} requests waited for capacity at the server (up to {})", *waiting,
                       go_float_text(tp->evidence.server_number("waiting_capacity_max").value_or(*waiting))));
    }
    if (waiting) prev_waiting = *waiting;
    prev = p;
    prev_tp = tp;
  }
  Saturation o;
  o.rule = fmt::format(
      "saturated at the first point where throughput gains less than {:.0f}% over the previous point while "
      "TTFT p99 rises, the achieved rate falls below {:.0f}% of the offered one (open loop), or the server's "
      "queue for capacity averages at least one request, grows, and stands while the batch is full (running at the "
      "declared capacity, or KV cache usage at 95% or more); the knee is the point before it",
      kPlateauGain * 100, kRateShortfall * 100);
  if (!saturated_at) {
    o.status = "not_observed";
    o.reason = "no saturation signal fired over the tested points";
  } else {
    o.status = knee ? "measured" : "left_censored";
    o.knee = knee;
    o.saturated_at = saturated_at;
  }
  o.signals = std::move(signals);
  return o;
}

using TrackPoints = std::vector<std::pair<const Point*, const TrackPoint*>>;

// Why no extremum can be located over the track's points (status, reason), as fak's sweepcert
// `prepare` decides it: every declared coordinate needs its point, and each point in coordinate
// order must be measured and carry the metrics the finding reads (throughput, and the p99 of each
// budget in `sla`). nullopt: it can be located.
std::optional<std::pair<std::string, std::string>> unlocatable(const SweepReceipt& r, const TrackPoints& pts,
                                                               const SlaBudgets& sla) {
  if (pts.size() != r.coordinates.size()) return std::pair{"not_identifiable", "missing declared sweep point"};
  for (const auto& [p, tp] : pts) {
    if (tp->status == "invalid") return std::pair{"invalid", "invalid point: " + tp->reason_code};
    if (tp->status != "valid") {
      return std::pair{"not_identifiable", "a declared point was not measured; transition remains an interval/unknown"};
    }
    if (!tp->stats.throughput_tok_s.measured_value() || !meets(sla, *tp)) {
      return std::pair{"not_identifiable", "required observation was not measured"};
    }
  }
  return std::nullopt;
}

// The point of highest throughput among those `eligible` admits, the lower coordinate on a tie.
template <class Eligible>
const TrackPoints::value_type* highest_throughput(const TrackPoints& pts, Eligible eligible) {
  const TrackPoints::value_type* best = nullptr;
  for (const auto& pt : pts) {
    if (!eligible(*pt.second)) continue;
    const double v = pt.second->stats.throughput_tok_s.measured_value().value_or(0);
    const double b = best ? best->second->stats.throughput_tok_s.measured_value().value_or(0) : 0;
    if (!best || v > b || (v == b && pt.first->coordinate < best->first->coordinate)) best = &pt;
  }
  return best;
}

// A point chosen as the peak or the knee, with the throughput identity fak's newer rules state.
Selection selected(const SweepReceipt& r, const std::pair<const Point*, const TrackPoint*>& pt) {
  Selection sel = selection_of(*pt.first, *pt.second);
  if (r.rules_generation >= 2) {
    sel.throughput_unit = pt.second->stats.throughput_tok_s.unit.value_or("");
    sel.token_count_basis = pt.second->stats.token_count_basis;
  }
  return sel;
}

// Peak: fak's ObservedExtremum over throughput.
void locate_peak(const SweepReceipt& r, const Contract& c, const TrackPoints& pts, TrackSummary& s) {
  if (const auto blocked = unlocatable(r, pts, {})) {
    s.peak_status = blocked->first;
    s.peak_reason = blocked->second;
  } else {
    const auto* best = highest_throughput(pts, [](const TrackPoint&) { return true; });
    s.peak = selected(r, *best);
    s.peak_status = censoring(r, c, best->first->coordinate);
    if (s.peak_status == "right_censored") {
      s.peak_reason =
          "throughput is highest at the largest tested point, below the declared capacity; "
          "test up to the declared capacity to locate the peak";
    } else if (s.peak_status == "left_censored") {
      s.peak_reason = "throughput is highest at the lowest tested point and the axis does not start at 1";
    }
  }
}

// SLA knee: fak's ConstrainedExtremum, the budgets' p99 metrics required at every point.
void locate_sla_knee(const SweepReceipt& r, const Contract& c, const TrackPoints& pts, TrackSummary& s) {
  if (!r.sla.any()) {
    s.sla_status = "not_configured";
    s.sla_reason = "no p99 latency budget configured; no SLA knee claimed";
    return;
  }
  if (const auto blocked = unlocatable(r, pts, r.sla)) {
    s.sla_status = blocked->first;
    s.sla_reason = blocked->second;
    return;
  }
  const auto* knee = highest_throughput(pts, [&](const TrackPoint& tp) { return meets(r.sla, tp).value_or(false); });
  if (!knee) {
    s.sla_status = "not_identifiable";
    s.sla_reason = "no measured point satisfies every declared constraint";
    return;
  }
  s.sla_knee = selected(r, *knee);
  s.sla_status = censoring(r, c, knee->first->coordinate);
  if (s.sla_status == "right_censored") {
    s.sla_reason = "the knee is at the largest tested point, below the declared capacity";
  } else if (s.sla_status == "left_censored") {
    s.sla_reason = "the knee is at the lowest tested point and the axis does not start at 1";
  }
}

TrackSummary summarize(const SweepReceipt& r, const Contract& c) {
  TrackSummary s;
  s.track = c.track;
  s.envelope_digest = envelope_digest(r, c);
  TrackPoints pts;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.track == c.track) pts.emplace_back(&p, &tp);
    }
  }
  const TrackPoint* hard = nullptr;
  const TrackPoint* first_bad = nullptr;
  for (const auto& [p, tp] : pts) {
    if (tp->status == "valid")
      ++s.valid_points;
    else if (!first_bad)
      first_bad = tp;
    if (tp->status == "invalid" && is_hard_code(tp->reason_code) && !hard) hard = tp;
  }
  s.p99_boundary = p99_boundary(r, pts);
  s.saturation = saturation(r, c, pts);
  if (hard) {
    // fak stops at the hard invalidity before it builds the envelope (docs/FAK.md 6.8, step 1): such a
    // track has no envelope digest, and a digest here would fail every fak receipt with one.
    s.envelope_digest.clear();
    s.status = "invalid";
    s.reason = hard->reason_code + ": " + hard->reason;
    s.peak_status = "invalid";
    s.peak_reason = s.reason;
    s.sla_status = "invalid";
    s.sla_reason = "identity, capacity, or measurement invalidity prevents a sweep claim";
    return s;
  }
  if (s.valid_points < 2) {
    s.status = "not_measured";
    s.reason = "fewer than two comparable valid points";
    if (first_bad) s.reason += ": " + first_bad->reason;
    s.peak_status = "not_identifiable";
    s.peak_reason = s.reason;
    if (r.sla.any()) {
      s.sla_status = "not_identifiable";
      s.sla_reason = s.reason;
    } else {
      s.sla_status = "not_configured";
      s.sla_reason = "no p99 latency budget configured; no SLA knee claimed";
    }
    return s;
  }
  s.status = "measured";
  locate_peak(r, c, pts, s);
  locate_sla_knee(r, c, pts, s);
  return s;
}

}  // namespace

bool is_hard_code(std::string_view code) {
  static const std::set<std::string_view> hard = {"contract_missing",
                                                  "workload_identity_mismatch",
                                                  "model_identity_mismatch",
                                                  "engine_identity_unknown",
                                                  "engine_identity_mismatch",
                                                  "capacity_unknown",
                                                  "capacity_identity_mismatch",
                                                  "capacity_exceeded",
                                                  "measurement_incomplete",
                                                  "engine_restarted",
                                                  "foreign_traffic",
                                                  "cache_carryover",
                                                  "client_saturated",
                                                  "throughput_identity_unknown",
                                                  "throughput_identity_mismatch"};
  return hard.count(code) != 0;
}

const char* axis_name(loadgen::LoadMode m) {
  return m == loadgen::LoadMode::kConcurrency ? "serving_concurrency" : "serving_rate";
}
const char* axis_unit(loadgen::LoadMode m) { return m == loadgen::LoadMode::kConcurrency ? "requests" : "requests/s"; }
const char* point_key(loadgen::LoadMode m) { return m == loadgen::LoadMode::kConcurrency ? "concurrency" : "rate_rps"; }

std::string envelope_digest(const SweepReceipt& r, const Contract& c) {
  auto or_missing = [](const std::string& v) { return v.empty() ? std::string("<missing>") : v; };
  std::string configuration =
      "track=" + c.track + ";ttft=" + go_float_text(r.sla.ttft_p99_ms) + ";itl=" + go_float_text(r.sla.itl_p99_ms);
  if (r.sla.e2e_p99_ms > 0) configuration += ";e2e=" + go_float_text(r.sla.e2e_p99_ms);
  std::map<std::string, std::string> bindings = {
      {"model", or_missing(c.model)},
      {"workload", or_missing(r.workload_digest)},
      {"engine", or_missing(c.engine) + "/" + or_missing(c.engine_receipt_digest)},
      {"configuration", configuration},
      {"capacity", std::to_string(c.batch_capacity) + "/" + or_missing(c.capacity_source)},
      {"reset_order", "ascending-concurrency;declared-track-order;no-reset"},
      {"environment", or_missing(r.machine_id)},
  };
  if (r.rules_generation >= 2) {
    // The first valid point's (fak's servingSweepEvidence), "<missing>" when none is valid.
    const TrackPoint* first = nullptr;
    for (const auto& p : r.points) {
      for (const auto& tp : p.tracks) {
        if (!first && tp.track == c.track && tp.status == "valid") first = &tp;
      }
    }
    const auto id = first ? std::optional(throughput_identity(*first)) : std::nullopt;
    bindings["throughput_unit"] = id && !id->unit.empty() ? id->unit : "<missing>";
    bindings["token_count_basis"] = id && !id->basis.empty() ? id->basis : "<missing>";
  }
  boost::json::array coords;
  for (double v : r.coordinates) coords.push_back(v);
  boost::json::object axis;
  axis["name"] = axis_name(r.mode);
  axis["unit"] = axis_unit(r.mode);
  axis["coordinates"] = std::move(coords);
  axis["lower_closed"] =
      r.mode == loadgen::LoadMode::kConcurrency && !r.coordinates.empty() && r.coordinates.front() == 1;
  axis["upper_closed"] = r.mode == loadgen::LoadMode::kConcurrency && !r.coordinates.empty() &&
                         r.coordinates.back() == static_cast<double>(c.batch_capacity);
  boost::json::array b;
  for (const auto& [name, value] : bindings) {
    boost::json::object o;
    o["name"] = name;
    o["value"] = value;
    b.push_back(std::move(o));
  }
  boost::json::object env;
  env["schema"] = kEnvelopeSchema;
  env["axis"] = std::move(axis);
  env["bindings"] = std::move(b);
  return sha256_digest(go_marshal(env));
}

Status evaluate_sweep(SweepReceipt& r) {
  if (r.schema.empty()) r.schema = kSweepSchema;
  if (r.schema != kSweepSchema) {
    return make_error(errc::kSweepSchema, fmt::format("schema is '{}', not {}", r.schema, kSweepSchema));
  }
  std::set<std::string> tracks;
  for (const auto& c : r.contracts) {
    if (!tracks.insert(c.track).second) {
      return make_error(errc::kSweepContract, "duplicate contract for track " + c.track);
    }
  }
  std::set<double> coords;
  for (const auto& p : r.points) {
    if (!(p.coordinate > 0) || !std::isfinite(p.coordinate)) {
      return make_error(errc::kSweepPoint,
                        fmt::format("point {} is not a positive {}", go_float_text(p.coordinate), point_key(r.mode)));
    }
    if (!coords.insert(p.coordinate).second) {
      return make_error(errc::kSweepPoint, fmt::format("duplicate point {}", go_float_text(p.coordinate)));
    }
  }
  r.coordinates.assign(coords.begin(), coords.end());
  std::sort(r.points.begin(), r.points.end(),
            [](const Point& a, const Point& b) { return a.coordinate < b.coordinate; });
  References references;
  for (auto& p : r.points) {
    for (auto& tp : p.tracks) {
      const auto it =
          std::find_if(r.contracts.begin(), r.contracts.end(), [&](const Contract& c) { return c.track == tp.track; });
      evaluate_point(r, p, tp, it == r.contracts.end() ? nullptr : &*it, references);
    }
  }
  r.tracks.clear();
  for (const auto& c : r.contracts) {
    if (r.coordinates.empty()) break;
    r.tracks.push_back(summarize(r, c));
  }
  r.validity_reasons.clear();
  std::set<std::string> seen;
  for (const auto& p : r.points) {
    for (const auto& tp : p.tracks) {
      if (tp.status != "valid" && !tp.reason_code.empty() && seen.insert(tp.track + ":" + tp.reason_code).second) {
        r.validity_reasons.push_back(
            fmt::format("{} at {} {}: {}", tp.reason_code, point_key(r.mode), go_float_text(p.coordinate), tp.reason));
      }
    }
  }
  r.warnings = receipt_warnings(r);
  if (r.load && r.load->interrupted) {  // said first: it explains the rest
    r.validity_reasons.insert(r.validity_reasons.begin(), "interrupted: " + *r.load->interrupted);
  }
  r.valid = r.validity_reasons.empty() && !r.tracks.empty() &&
            std::all_of(r.tracks.begin(), r.tracks.end(), [](const TrackSummary& t) { return t.status == "measured"; });
  if (r.coordinates.size() < 2) {
    r.validity_reasons.push_back("fewer than two points: a sweep needs at least two distinct coordinates");
    r.valid = false;
  }
  return Ok{};
}

}  // namespace mpo::sweep
