#include "sweep/verify.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/fold.hpp"
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

// The first top-level key whose value differs, for a message.
std::string first_difference(const boost::json::object& a, const boost::json::object& b) {
  for (const auto& kv : a) {
    const auto* other = b.if_contains(kv.key());
    if (other == nullptr || go_marshal(*other) != go_marshal(kv.value())) return std::string(kv.key());
  }
  for (const auto& kv : b) {
    if (!a.contains(kv.key())) return std::string(kv.key());
  }
  return "(none)";
}

// Recomputes a track point's stats and evidence figures from its samples; names what differs.
void recompute(const SweepReceipt& r, const Point& p, TrackPoint& tp, VerifyOutcome* outp) {
  VerifyOutcome scratch;
  VerifyOutcome& out = outp ? *outp : scratch;
  const std::string where = fmt::format("track {} at {}", tp.track, coordinate_text(r, p.coordinate));
  if (tp.samples.empty()) {
    out.notes.push_back(where + ": no samples; its stats are taken as written");
    return;
  }
  FoldOptions fo;
  fo.slo_ms = json_double(r.load, "slo_ms").value_or(0);
  const auto* server = json_object(tp.evidence, "server");
  fo.prefix_cache_hit_rate = server ? prefix_hit_rate_metric(*server) : boost::json::value(nullptr);
  auto stats = fold_samples(tp.samples, fo);
  if (go_marshal(stats) != go_marshal(tp.stats)) {
    out.problems.push_back(fmt::format("{}: stats differ from what its samples give (first: {})", where,
                                       first_difference(stats, tp.stats)));
  }
  tp.stats = std::move(stats);
  auto check_block = [&](std::string_view key, boost::json::object fresh) {
    const auto* written = json_object(tp.evidence, key);
    if (written == nullptr || go_marshal(*written) != go_marshal(fresh)) {
      out.problems.push_back(fmt::format("{}: evidence.{} differs from what its samples give{}", where, key,
                                         written ? " (first: " + first_difference(fresh, *written) + ")" : ""));
    }
    tp.evidence[key] = std::move(fresh);
  };
  if (const auto* g = json_object(tp.evidence, "generator")) {
    GeneratorFigures fig;
    fig.lateness_bound_ms = json_double(*g, "lateness_bound_ms").value_or(0);
    fig.cpu_seconds = json_double(*g, "cpu_seconds").value_or(0);
    fig.wall_seconds = json_double(*g, "wall_seconds").value_or(0);
    check_block("generator", generator_evidence(tp.samples, fig));
  }
  if (const auto* c = json_object(tp.evidence, "confidence")) {
    check_block("confidence",
                confidence_evidence(tp.samples, static_cast<std::uint64_t>(json_int(*c, "seed").value_or(0))));
  }
  check_block("errors_by_class", errors_by_class(tp.samples));
  if (json_object(tp.evidence, "steady_state")) check_block("steady_state", steady_state_evidence(tp.samples));
}

}  // namespace

VerifyOutcome verify_sweep(std::string_view text) {
  VerifyOutcome out;
  auto parsed = parse_sweep_receipt(text);
  if (!parsed) {
    out.problems.push_back(parsed.error().message);
    out.summary = "sweep verify: REFUSED: " + parsed.error().message;
    return out;
  }
  SweepReceipt r = *parsed;
  rederive_from_samples(r, &out);
  const SweepReceipt before = r;
  if (auto st = evaluate_sweep(r); !st) out.problems.push_back(st.error().message);
  // Statuses and findings, for any receipt (fak's included).
  for (std::size_t i = 0; i < r.points.size() && i < before.points.size(); ++i) {
    for (std::size_t k = 0; k < r.points[i].tracks.size(); ++k) {
      const auto& a = before.points[i].tracks[k];
      const auto& b = r.points[i].tracks[k];
      if (a.status != b.status || a.reason_code != b.reason_code) {
        out.problems.push_back(fmt::format("track {} at {}: written as {}{}, re-evaluates to {}{}", a.track,
                                           coordinate_text(r, r.points[i].coordinate), a.status,
                                           a.reason_code.empty() ? "" : " (" + a.reason_code + ")", b.status,
                                           b.reason_code.empty() ? "" : " (" + b.reason_code + ")"));
      }
    }
  }
  const bool ours = parsed->tool_name == "modelperfobs";
  if (ours) {
    const std::string again = receipt_text(r);
    if (again != text) {
      // Name the first line that differs.
      std::size_t line = 1, i = 0;
      while (i < again.size() && i < text.size() && again[i] == text[i]) {
        if (text[i] == '\n') ++line;
        ++i;
      }
      out.problems.push_back(fmt::format("the receipt does not re-derive byte for byte: line {} differs", line));
    }
  } else {
    for (std::size_t i = 0; i < r.tracks.size() && i < parsed->tracks.size(); ++i) {
      const auto& a = parsed->tracks[i];
      const auto& b = r.tracks[i];
      if (a.status != b.status || a.peak_status != b.peak_status || a.sla_status != b.sla_status ||
          a.envelope_digest != b.envelope_digest) {
        out.problems.push_back(fmt::format("track {}: written summary differs from its re-evaluation", a.track));
      }
    }
  }
  out.holds = out.problems.empty();
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
    out.summary =
        fmt::format("sweep verify: OK: {} points, {} samples re-derived;{}", r.points.size(), samples, tracks);
  } else {
    out.summary = fmt::format("sweep verify: FAILED: {}{}", out.problems.front(),
                              out.problems.size() > 1 ? fmt::format(" (and {} more)", out.problems.size() - 1) : "");
  }
  return out;
}

void rederive_from_samples(SweepReceipt& r, VerifyOutcome* out) {
  for (auto& p : r.points) {
    for (auto& tp : p.tracks) recompute(r, p, tp, out);
  }
}

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
        return {false,
                fmt::format("parity claim refused: track {} is not measured with successful requests; "
                            "a parity-or-better claim requires measured vllm, sglang, and fak-fronts-fleet tracks",
                            need)};
      }
    }
    return {true, "serving claim gate: OK"};
  }
  enum class Kind { kNone, kPeak, kCapacityPeak, kSlaKnee } kind = Kind::kNone;
  if (has({"sla knee", "sla-knee", "p99 knee"}))
    kind = Kind::kSlaKnee;
  else if (has({"capacity-valid peak", "capacity valid peak"}))
    kind = Kind::kCapacityPeak;
  else if (has({"serving peak", "peak serving", "peak throughput"}))
    kind = Kind::kPeak;
  if (kind == Kind::kNone) return {true, "serving claim gate: OK (the text makes no parity or sweep claim)"};
  std::string track = "ours";
  static const std::regex word("[a-z0-9-]+");
  for (auto it = std::sregex_iterator(c.begin(), c.end(), word); it != std::sregex_iterator(); ++it) {
    const std::string w = it->str();
    if (w == "ours" || w == "vllm" || w == "sglang" || w == "fak-fronts-fleet") {
      track = w;
      break;
    }
  }
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
  if (kind == Kind::kSlaKnee) {
    if (!parsed->sla.any()) return {false, "serving SLA-knee claim requires a configured p99 TTFT or ITL budget"};
    if (s->sla_status != "measured" || !s->sla_knee) {
      return {false, fmt::format("serving SLA-knee claim for {} refused: {}", track,
                                 s->sla_reason.empty() ? "sla status is " + s->sla_status : s->sla_reason)};
    }
  }
  return {true, "serving claim gate: OK"};
}

}  // namespace mpo::sweep
