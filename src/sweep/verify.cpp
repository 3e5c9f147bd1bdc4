// The implementation of sweep/verify.hpp. `sweep verify`: re-derives a receipt from its own
// contents.
#include "sweep/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <set>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "core/json_diff.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/evidence.hpp"
#include "sweep/fold.hpp"
#include "sweep/parity.hpp"
#include "sweep/receipt.hpp"

namespace mpo::sweep {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string coordinate_text(const SweepReceipt& r, double v) {
  return fmt::format("{} {}", point_key(r.mode), go_float_text(v));
}

// Recomputes a track point's stats and evidence figures from its samples (what differs from the
// written ones is named by the field comparison in verify_sweep).
void recompute(const SweepReceipt& r, const Point& p, TrackPoint& tp, VerifyOutcome* out) {
  if (tp.samples.empty()) {
    if (out) {
      out->notes.push_back(fmt::format("track {} at {}: no samples; its stats are taken as written", tp.track,
                                       coordinate_text(r, p.coordinate)));
    }
    return;
  }
  FoldOptions fo;
  fo.slo_ms = r.load ? r.load->slo_ms.value_or(0) : 0;
  auto& e = tp.evidence;
  const boost::json::object* server = e.server ? &*e.server : nullptr;
  if (server) fo.prefix_cache_hit_rate = prefix_hit_rate_metric(*server);
  const bool states_no_output = tp.stats.no_output.has_value();
  tp.stats = fold_samples(tp.samples, fo);
  // A count this tool derives since the fifty-fourth session: a receipt written before it leaves it
  // out, and says nothing false by that (a count written is re-derived as any other).
  if (!states_no_output) tp.stats.no_output.reset();
  // How the point was driven is taken as written; what follows from the samples is re-derived.
  if (e.generator) {
    e.generator = generator_evidence(tp.samples, GeneratorFigures{e.generator->lateness_bound_ms,
                                                                  e.generator->cpu_seconds, e.generator->wall_seconds});
  }
  if (e.confidence) e.confidence = confidence_evidence(tp.samples, e.confidence->seed);
  e.errors_by_class = errors_by_class(tp.samples);
  if (e.tokens) e.tokens = token_evidence(tp.samples);
  if (e.steady_state) {  // by the rule the receipt was written with
    e.steady_state = e.steady_state->rule == kSteadyStateRuleByCompletions ? steady_state_by_completions(tp.samples)
                                                                           : steady_state_evidence(tp.samples);
  }
  if (e.load) {
    LoadFigures lf;
    lf.coordinate_key = point_key(r.mode);
    lf.coordinate = p.coordinate;
    lf.open_loop = r.mode == loadgen::LoadMode::kRate;
    lf.duration_s = e.load->duration_s.value_or(0);
    lf.started_at = e.load->started_at;
    lf.ended_at = e.load->ended_at;
    e.load = load_evidence(tp.samples, lf);
  }
  if (e.cache) {
    e.cache = cache_evidence(
        tp.samples, CacheDeclaration{e.cache->prompts, e.cache->declared_shared_share, e.cache->reset}, server);
  }
  if (e.server && e.server->contains("requests_sent"))
    (*e.server)["requests_sent"] = requests_reaching_server(tp.samples);
}

std::string last_key(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// How a receipt's arrays are matched: points by coordinate, tracks and contracts by track name.
std::string element_label(const std::string& path, const boost::json::object& e) {
  const std::string key = last_key(path);
  if (key == "points") {
    for (const char* k : {"concurrency", "rate_rps"}) {
      if (const auto* v = e.if_contains(k)) return fmt::format("{} {}", k, go_marshal(*v));
    }
  }
  if (key == "tracks" || key == "contracts") return std::string(json_string(e, "track").value_or(""));
  return "";
}

// What fak's writer never writes: our additions, compared only on our own receipts.
bool ours_only(const std::string& path) {
  if (path == "tool" || path == "load" || path == "validity") return true;
  const std::string key = last_key(path);
  return key == "evidence" || key == "samples" || key == "p99_boundary" || key == "saturation";
}

// Fields some of fak's versions do not write (docs/FAK.md 6.6): the newer stats of
// internal/webbench/serving_measurement.go, the throughput identity on a selection (generation
// 2), quantiles' p95.
bool absent_by_design(const std::string& path) {
  static const std::set<std::string> fields = {"goodput_tok_s",
                                               "wall_seconds",
                                               "goodput_slo_seconds",
                                               "successful_output_tokens_exact",
                                               "slo_successful_output_tokens_exact",
                                               "observed_max_in_flight",
                                               "observed_in_flight_basis",
                                               "p95",
                                               "end_to_end_p99_ms"};
  const std::string key = last_key(path);
  if (key == "throughput_unit" || key == "token_count_basis") {  // on a selection only
    return path.ends_with(".peak." + key) || path.ends_with(".sla_knee." + key);
  }
  return fields.count(key) != 0;
}

bool is_reason(const std::string& path) {
  const std::string key = last_key(path);
  return key == "reason" || key == "peak_reason" || key == "sla_reason";
}

// A fak receipt's differences less those that say nothing against it: fields the fak version that
// wrote it never writes (absent by design) and reasons in fak's own wording (the statuses and
// codes beside them are compared); what was set aside is counted in `notes`.
std::vector<JsonDifference> without_fak_wording(std::vector<JsonDifference> found, std::vector<std::string>* notes) {
  std::vector<JsonDifference> out;
  std::size_t absent = 0, worded = 0;
  for (auto& d : found) {
    if (d.written == "(absent)" && absent_by_design(d.path)) {
      ++absent;
    } else if (is_reason(d.path) && d.written != "(absent)" && d.derived != "(absent)") {
      ++worded;
    } else if (out.size() < JsonDiffOptions{}.max_differences) {
      out.push_back(std::move(d));
    }
  }
  if (notes && absent > 0) {
    notes->push_back(
        fmt::format("{} field(s) this tool derives are absent by design: the fak version that wrote the "
                    "receipt does not write them (docs/FAK.md 6.6)",
                    absent));
  }
  if (notes && worded > 0) {
    notes->push_back(fmt::format(
        "{} reason(s) are in fak's wording and not compared (the statuses and codes beside them are)", worded));
  }
  return out;
}

// A fak receipt whose written envelope digests are the newer rules' (they bind the throughput unit
// and token-count basis): it was written under generation 2.
bool newer_digests(const SweepReceipt& r) {
  SweepReceipt newer = r;
  newer.rules_generation = 2;
  bool any = false;
  for (const auto& t : r.tracks) {
    if (t.envelope_digest.empty()) continue;
    for (const auto& c : r.contracts) {
      if (c.track != t.track) continue;
      if (envelope_digest(newer, c) != t.envelope_digest) return false;
      any = true;
    }
  }
  return any;
}

}  // namespace

std::vector<JsonDifference> stated_differences(std::string_view text, const SweepReceipt& derived,
                                               std::vector<std::string>* notes) {
  auto written = parse_exact_json(text);
  if (!written) return {{"(document)", written.error().message, "a JSON object"}};
  const bool ours = derived.tool_name == "modelperfobs";
  JsonDiffOptions o;
  o.label = element_label;
  if (!ours) o.skip = ours_only;
  o.extra_written_fields_differ = ours;  // fak readers ignore fields they do not know
  if (!ours) o.max_differences = 1000;   // some are set aside below
  auto found = json_differences(*written, receipt_json(derived), o);
  if (ours) return found;
  return without_fak_wording(std::move(found), notes);
}

namespace {

VerifyOutcome refused(const Error& e) {
  VerifyOutcome out;
  out.problems.push_back(e.message);
  out.summary = "sweep verify: REFUSED: " + e.message;
  return out;
}

// Sets `holds` and, when it does not, the summary naming the first problem.
void conclude(VerifyOutcome& out) {
  out.holds = out.problems.empty();
  if (out.holds) return;
  out.summary = fmt::format("sweep verify: FAILED: {}{}", out.problems.front(),
                            out.problems.size() > 1 ? fmt::format(" (and {} more)", out.problems.size() - 1) : "");
}

// A parity receipt (docs/FAK.md 6.5): each track's stats re-folded from its samples (a track without
// samples keeps its written stats), the ours-vs-SGLang tax re-derived from the stats, every field
// compared.
VerifyOutcome verify_parity(std::string_view text) {
  VerifyOutcome out;
  auto parsed = parse_parity(text);
  if (!parsed) return refused(parsed.error());
  ParityReport r = *parsed;
  const auto doc = parse_exact_json(text);
  const bool ours = json_object(doc->as_object(), "tool") != nullptr;
  std::size_t samples = 0;
  for (auto& t : r.tracks) {
    samples += t.samples.size();
    if (t.samples.empty()) {
      if (t.measured) out.notes.push_back("track " + t.track + ": no samples; its stats are taken as written");
      continue;
    }
    FoldOptions fo;
    fo.slo_ms = r.slo_ms;
    // The written hit rate stands (a parity receipt keeps no server evidence to re-derive it from);
    // a stats block without one gets the fold's own "not measured".
    if (t.stats && (t.stats->prefix_cache_hit_rate.measured() || t.stats->prefix_cache_hit_rate.reason)) {
      fo.prefix_cache_hit_rate = t.stats->prefix_cache_hit_rate;
    }
    t.stats = fold_samples(t.samples, fo);
  }
  JsonDiffOptions o;
  o.label = element_label;
  o.extra_written_fields_differ = ours;
  if (!ours) {
    // fak's parity workload has no digest, and labels its token-count basis as its version does
    // ("stream_content_events", "sample.output_token_count_basis", or nothing).
    o.skip = [](const std::string& path) {
      return path == "tool" || last_key(path) == "samples" || path == "workload.digest" ||
             path == "workload.token_count_basis";
    };
    o.max_differences = 1000;
  }
  auto found = json_differences(*doc, parity_json(r), o);
  if (!ours) found = without_fak_wording(std::move(found), &out.notes);
  for (const auto& d : found) out.problems.push_back(describe(d));
  conclude(out);
  if (out.holds) {
    std::string tracks;
    for (const auto& t : r.tracks) tracks += fmt::format(" {} {}", t.track, t.measured ? "measured" : "not_measured");
    out.summary = fmt::format("sweep verify: OK: parity receipt at concurrency {}, {} samples re-derived;{}",
                              r.concurrency, samples, tracks);
  }
  return out;
}

}  // namespace

VerifyOutcome verify_sweep(std::string_view text) {
  if (auto doc = parse_exact_json(text);
      doc && doc->is_object() && json_string(doc->as_object(), "schema").value_or("") == kParitySchema) {
    return verify_parity(text);
  }
  VerifyOutcome out;
  auto parsed = parse_sweep_receipt(text);
  if (!parsed) return refused(parsed.error());
  SweepReceipt r = *parsed;
  rederive_from_samples(r, &out);
  if (r.tool_name.empty() && r.rules_generation == 1 && newer_digests(r)) r.rules_generation = 2;
  if (r.rules_generation < 1 || r.rules_generation > kRulesGeneration) {
    out.problems.push_back(fmt::format("tool.rules_generation: written {}, re-derived (none: this tool knows 1 to {})",
                                       r.rules_generation, kRulesGeneration));
  }
  if (auto st = evaluate_sweep(r); !st) out.problems.push_back(st.error().message);
  // Our p99 boundary's earlier rule (before failed requests counted against every budget): its
  // wording stands where the receipt has it; the boundary itself is compared as re-derived.
  for (std::size_t i = 0; i < r.tracks.size() && i < parsed->tracks.size(); ++i) {
    if (parsed->tracks[i].p99_boundary.rule == kP99BoundaryRuleBeforeFailures) {
      r.tracks[i].p99_boundary.rule = kP99BoundaryRuleBeforeFailures;
      out.notes.push_back(fmt::format(
          "track {}: its p99 boundary's rule is worded as before a failed request counted against every budget; "
          "the boundary is compared as today's rule derives it",
          r.tracks[i].track));
    }
  }
  // Every stated field against its re-derivation: statuses, codes, stats, evidence, summaries,
  // digests (fak's receipts: the fields fak writes).
  for (const auto& d : stated_differences(text, r, &out.notes)) out.problems.push_back(describe(d));
  const bool ours = parsed->tool_name == "modelperfobs";
  if (ours && out.problems.empty()) {
    const std::string again = receipt_text(r);
    if (again != text) {
      // The same fields, written differently (key order, spacing): name the first line that differs.
      std::size_t line = 1, i = 0;
      while (i < again.size() && i < text.size() && again[i] == text[i]) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      out.problems.push_back(fmt::format("the receipt does not re-derive byte for byte: line {} differs", line));
    }
  }
  conclude(out);
  std::size_t samples = 0;
  for (const auto& p : r.points)
    for (const auto& tp : p.tracks) samples += tp.samples.size();
  if (out.holds) {
    std::string tracks;
    for (const auto& t : r.tracks) {
      tracks += fmt::format(" {} {} valid={}", t.track, t.status, t.valid_points);
      if (t.peak) tracks += fmt::format(" peak={}", t.peak->coordinate);
      if (t.sla_knee) tracks += fmt::format(" sla-knee={}", t.sla_knee->coordinate);
    }
    out.summary = fmt::format("sweep verify: OK: {} points, {} samples re-derived, fak's rules of generation {};{}",
                              r.points.size(), samples, r.rules_generation, tracks);
  }
  return out;
}

void rederive_from_samples(SweepReceipt& r, VerifyOutcome* out) {
  for (auto& p : r.points) {
    for (auto& tp : p.tracks) recompute(r, p, tp, out);
  }
}

namespace {

enum class ClaimKind { kNone, kPeak, kCapacityPeak, kSlaKnee };

// A parity-or-better claim: a parity receipt with vllm, sglang and fak-fronts-fleet each measured.
GateOutcome gate_parity(const boost::json::object* root, const std::string& schema) {
  if (schema != "fak.serving-parity.v1") {
    return {false, "parity claim refused: the artifact is not a fak.serving-parity.v1 receipt"};
  }
  for (std::string_view need : {"vllm", "sglang", "fak-fronts-fleet"}) {
    bool ok = false;
    if (const auto* tracks = json_array(*root, "tracks")) {
      for (const auto& t : *tracks) {
        if (!t.is_object() || json_string(t.as_object(), "track").value_or("") != need) continue;
        const auto* stats = json_object(t.as_object(), "stats");
        ok = json_string(t.as_object(), "status").value_or("") == "measured" && stats &&
             json_int(*stats, "ok").value_or(0) > 0;
      }
    }
    if (!ok) {
      return {false, fmt::format("parity claim refused: track {} is not measured with successful requests; "
                                 "a parity-or-better claim requires measured vllm, sglang, and fak-fronts-fleet tracks",
                                 need)};
    }
  }
  return {true, "serving claim gate: OK"};
}

// A peak or SLA-knee claim for one track: a sweep receipt that re-evaluates cleanly and locates it.
GateOutcome gate_sweep_claim(std::string_view artifact_text, const std::string& schema, const std::string& track,
                             ClaimKind kind) {
  const auto refuse_peak = [&](const std::string& reason) {
    return GateOutcome{false, fmt::format("serving peak claim for {} refused: {}; rerun with at least two "
                                          "in-capacity identity-stable points",
                                          track, reason)};
  };
  if (schema != kSweepSchema) return refuse_peak("the artifact is not a fak.serving-sweep.v1 receipt");
  const auto v = verify_sweep(artifact_text);
  if (!v.holds) return refuse_peak("the receipt does not re-evaluate cleanly (" + v.problems.front() + ")");
  auto parsed = parse_sweep_receipt(artifact_text);
  const TrackSummary* s = nullptr;
  for (const auto& t : parsed->tracks)
    if (t.track == track) s = &t;
  if (s == nullptr) return refuse_peak("the receipt has no summary for this track");
  if (s->status != "measured")
    return refuse_peak("track status is " + s->status + (s->reason.empty() ? "" : " (" + s->reason + ")"));
  if (s->valid_points < 2) return refuse_peak("fewer than two valid points");
  if (!s->peak || s->peak_status != "measured") {
    std::string why = "peak is " + (s->peak_status.empty() ? std::string("absent") : s->peak_status);
    if (s->peak_status == "right_censored") {
      why += " (throughput was still rising at the largest tested point; test up to the declared batch capacity)";
    } else if (!s->peak_reason.empty()) {
      why += " (" + s->peak_reason + ")";
    }
    return refuse_peak(why);
  }
  if (kind == ClaimKind::kSlaKnee) {
    if (!parsed->sla.any()) return {false, "serving SLA-knee claim requires a configured p99 TTFT or ITL budget"};
    if (s->sla_status != "measured" || !s->sla_knee) {
      return {false, fmt::format("serving SLA-knee claim for {} refused: {}", track,
                                 s->sla_reason.empty() ? "sla status is " + s->sla_status : s->sla_reason)};
    }
  }
  return {true, "serving claim gate: OK"};
}

}  // namespace

GateOutcome gate_claim(std::string_view claim, std::string_view artifact_text) {
  const std::string c = lower(claim);
  auto has = [&](std::initializer_list<std::string_view> phrases) {
    return std::any_of(phrases.begin(), phrases.end(),
                       [&](std::string_view p) { return c.find(p) != std::string::npos; });
  };
  auto doc = parse_exact_json(artifact_text);
  const boost::json::object* root = doc && doc->is_object() ? &doc->as_object() : nullptr;
  const std::string schema = root ? std::string(json_string(*root, "schema").value_or("")) : "";
  if (has({"parity or better", "parity-or-better", "parity with vllm", "parity with sglang",
           "vllm/sglang/native parity"})) {
    return gate_parity(root, schema);
  }
  ClaimKind kind = ClaimKind::kNone;
  if (has({"sla knee", "sla-knee", "p99 knee"}))
    kind = ClaimKind::kSlaKnee;
  else if (has({"capacity-valid peak", "capacity valid peak"}))
    kind = ClaimKind::kCapacityPeak;
  else if (has({"serving peak", "peak serving", "peak throughput"}))
    kind = ClaimKind::kPeak;
  if (kind == ClaimKind::kNone) {
    return {true,
            "serving claim gate: OK (the text makes no parity or sweep claim), so nothing was judged: the gate knows "
            "'serving peak', 'capacity-valid peak', 'SLA knee' and 'parity or better' (docs/SWEEP.md)",
            false};
  }
  std::string track = "ours";
  static const std::regex word("[a-z0-9-]+");
  for (auto it = std::sregex_iterator(c.begin(), c.end(), word); it != std::sregex_iterator(); ++it) {
    const std::string w = it->str();
    if (w == "ours" || w == "vllm" || w == "sglang" || w == "fak-fronts-fleet") {
      track = w;
      break;
    }
  }
  return gate_sweep_claim(artifact_text, schema, track, kind);
}

}  // namespace mpo::sweep
