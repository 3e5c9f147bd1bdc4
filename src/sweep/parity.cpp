// The implementation of sweep/parity.hpp. The single-point, multi-track comparison `fak.serving-
// parity.v1` (docs/FAK.md 6.5): the same workload at the same concurrency against each track's
// server, with the ours-vs-SGLang "tax".
#include "sweep/parity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/go_json.hpp"
#include "core/json.hpp"
#include "sweep/fold.hpp"
#include "sweep/typed_json.hpp"

namespace mpo::sweep {
namespace {

// One figure of the tax: the p50 of a latency, or a scalar's value; nullopt when not measured.
struct Figure {
  std::optional<double> value;
  std::optional<std::string> unit;
};
using FigureOf = Figure (*)(const ServingStats&);

Figure p50_of(const QuantileMetric& q) { return q.measured() ? Figure{q.p50, q.unit} : Figure{}; }
Figure value_of(const ScalarMetric& m) { return m.measured() ? Figure{m.value, m.unit} : Figure{}; }

boost::json::object tax(const ParityTrack* ours, const ParityTrack* raw) {
  boost::json::object o;
  o["status"] = "not_measured";
  o["ours_track"] = "ours";
  o["raw_track"] = "sglang";
  o["source_quantile"] = "p50";
  if (!ours || !ours->measured) {
    o["reason"] = "ours track missing";
    return o;
  }
  if (!raw || !raw->measured) {
    o["reason"] = "sglang raw track missing";
    return o;
  }
  boost::json::object metrics;
  bool any = false;
  const ServingStats none;
  const ServingStats& os = ours->stats ? *ours->stats : none;
  const ServingStats& rs = raw->stats ? *raw->stats : none;
  auto put = [&](std::string_view key, FigureOf figure) {
    boost::json::object m;
    const Figure fa = figure(os);
    const auto a = fa.value, b = figure(rs).value;
    if (!a || !b) {
      m["status"] = "not_measured";
      m["reason"] = fmt::format("{} not measured on {}", key, !a ? "ours" : "sglang");
    } else {
      any = true;
      m["status"] = "measured";
      if (fa.unit && !fa.unit->empty()) m["unit"] = *fa.unit;
      m["ours"] = *a;
      m["raw"] = *b;
      m["ours_minus_raw"] = *a - *b;
      if (*b != 0) m["ours_div_raw"] = *a / *b;
    }
    metrics[key] = std::move(m);
  };
  put("ttft_ms", [](const ServingStats& s) { return p50_of(s.ttft_ms); });
  put("itl_ms", [](const ServingStats& s) { return p50_of(s.itl_ms); });
  put("tpot_ms", [](const ServingStats& s) { return p50_of(s.tpot_ms); });
  put("end_to_end_ms", [](const ServingStats& s) { return p50_of(s.end_to_end_ms); });
  put("throughput_tok_s", [](const ServingStats& s) { return value_of(s.throughput_tok_s); });
  put("goodput_rps", [](const ServingStats& s) { return value_of(s.goodput_rps); });
  if (any)
    o["status"] = "measured";
  else
    o["reason"] = "no shared measured metrics";
  o["metrics"] = std::move(metrics);
  return o;
}

}  // namespace

Result<std::string> canonical_track(std::string_view name) {
  std::string t(name);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return c == '_' ? '-' : std::tolower(c); });
  for (const char* k : kParityTracks) {
    if (t == k) return t;
  }
  return make_error(errc::kParityTrack,
                    fmt::format("'{}' is not a track: use ours, sglang, vllm or fak-fronts-fleet", name));
}

boost::json::value parity_json(const ParityReport& r) {
  std::vector<ParityTrack> tracks;
  for (const char* name : kParityTracks) {
    auto it = std::find_if(r.tracks.begin(), r.tracks.end(), [&](const ParityTrack& t) { return t.track == name; });
    if (it != r.tracks.end()) {
      tracks.push_back(*it);
    } else {
      ParityTrack t;
      t.track = name;
      t.reason = "no base URL configured for this track";
      tracks.push_back(std::move(t));
    }
  }
  boost::json::object o = receipt_head(kParitySchema, r.generated_at, r.machine_id, r.model);
  boost::json::object workload;
  workload["requests"] = r.requests;
  workload["concurrency"] = r.concurrency;
  workload["slo_ms"] = r.slo_ms;
  workload["token_count_basis"] = "sample.output_token_count_basis";
  workload["digest"] = r.workload_digest;
  o["workload"] = std::move(workload);
  boost::json::array ts;
  const ParityTrack* ours = nullptr;
  const ParityTrack* raw = nullptr;
  for (const auto& t : tracks) {
    if (t.track == "ours") ours = &t;
    if (t.track == "sglang") raw = &t;
    boost::json::object j;
    j["track"] = t.track;
    j["status"] = t.measured ? "measured" : "not_measured";
    if (!t.reason.empty()) j["reason"] = t.reason;
    if (!t.base_url.empty()) j["base_url"] = t.base_url;
    if (!t.samples.empty()) {
      boost::json::array samples;
      for (const auto& s : t.samples) samples.push_back(loadgen::sample_json(s));
      j["samples"] = std::move(samples);
    }
    FoldOptions none;
    none.slo_ms = r.slo_ms;
    j["stats"] = stats_json(t.stats ? *t.stats : fold_samples({}, none));
    ts.push_back(std::move(j));
  }
  o["tracks"] = std::move(ts);
  o["ours_vs_sglang_tax"] = tax(ours, raw);
  boost::json::object honesty;
  honesty["identical_workload"] = true;
  honesty["absent_as"] = "not_measured";
  honesty["required_tracks"] = boost::json::array{"vllm", "sglang", "fak-fronts-fleet"};
  honesty["parity_claim_gate"] =
      "A parity-or-better claim requires a serving parity artifact with measured vllm, sglang, and fak-fronts-fleet "
      "tracks.";
  o["honesty"] = std::move(honesty);
  if (!r.artifact.empty()) o["artifact"] = r.artifact;
  boost::json::object tool;
  tool["name"] = "modelperfobs";
  tool["version"] = r.tool_version;
  o["tool"] = std::move(tool);
  return o;
}

Result<ParityReport> parse_parity(std::string_view text) {
  auto doc = parse_exact_json(text);
  if (!doc) return doc.error();
  if (!doc->is_object()) return make_error(errc::kParityJson, "a parity receipt is a JSON object");
  const auto& o = doc->as_object();
  if (json_string(o, "schema").value_or("") != kParitySchema) {
    return make_error(errc::kParityJson, fmt::format("schema is not {}", kParitySchema));
  }
  ParityReport r;
  auto str = [](const boost::json::object& x, std::string_view k) {
    return std::string(json_string(x, k).value_or(""));
  };
  r.generated_at = str(o, "generated_at");
  r.machine_id = str(o, "machine_id");
  r.model = str(o, "model");
  r.artifact = str(o, "artifact");
  if (const auto* w = json_object(o, "workload")) {
    r.requests = json_int(*w, "requests").value_or(0);
    r.concurrency = json_int(*w, "concurrency").value_or(0);
    r.slo_ms = json_double(*w, "slo_ms").value_or(0);
    r.workload_digest = str(*w, "digest");
  }
  if (const auto* tool = json_object(o, "tool")) r.tool_version = str(*tool, "version");
  if (const auto* ts = json_array(o, "tracks")) {
    for (const auto& v : *ts) {
      if (!v.is_object()) return make_error(errc::kParityJson, "a track is not an object");
      const auto& t = v.as_object();
      ParityTrack pt;
      pt.track = str(t, "track");
      pt.measured = str(t, "status") == "measured";
      pt.reason = str(t, "reason");
      pt.base_url = str(t, "base_url");
      if (auto st = parse_json_member(t, "stats", parse_serving_stats, pt.stats); !st) return st.error();
      auto samples = loadgen::samples_from_json(t, errc::kParityJson);
      if (!samples) return samples.error();
      pt.samples = std::move(*samples);
      r.tracks.push_back(std::move(pt));
    }
  }
  return r;
}

}  // namespace mpo::sweep
