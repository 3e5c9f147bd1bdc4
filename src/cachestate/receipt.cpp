// The implementation of cachestate/receipt.hpp. Cache-state transition receipts (docs/FAK.md 4:
// vocabulary, fields, exclusion rules) and the report around them, `modelperfobs.cache-state.v1`;
// strict reading (unknown fields and trailing data rejected) and verification.
#include "cachestate/receipt.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <set>
#include <type_traits>
#include <variant>

#include "core/go_json.hpp"
#include "core/time.hpp"

namespace mpo::cachestate {
namespace {

// ---- writing ----

boost::json::value opt_u64(const std::optional<std::uint64_t>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

boost::json::object identity_json(const BackendIdentity& b) {
  return boost::json::object{{"name", b.name}, {"instance", b.instance}, {"revision", b.revision}};
}

// The flat records of a receipt (metric snapshots, probes) as lists of members: each list writes its
// record in its order and reads it strictly. An int64 member is a time (written as Go writes one).
template <class T>
using Member =
    std::variant<std::int64_t T::*, std::uint64_t T::*, std::optional<std::uint64_t> T::*, std::string T::*, bool T::*>;
template <class T>
struct Field {
  std::string_view key;
  Member<T> member;
};

// clang-format off
using Snap = MetricSnapshot;
constexpr Field<Snap> kSnapshotFields[] = {
    {"captured_at", &Snap::captured_at_us}, {"sample_sequence", &Snap::sample_sequence}, {"source", &Snap::source},
    {"counter_epoch", &Snap::counter_epoch}, {"requests", &Snap::requests}, {"reuse_hits", &Snap::reuse_hits},
    {"reused_tokens", &Snap::reused_tokens}, {"entries", &Snap::entries}, {"invalidations", &Snap::invalidations},
    {"expirations", &Snap::expirations}, {"evictions", &Snap::evictions}};
using Probe = ProbeObservation;
constexpr Field<Probe> kProbeFields[] = {
    {"started_at", &Probe::started_at_us}, {"completed_at", &Probe::completed_at_us},
    {"token_prefix_digest", &Probe::token_prefix_digest}, {"prompt_tokens", &Probe::prompt_tokens},
    {"reused", &Probe::reused}, {"reused_tokens", &Probe::reused_tokens},
    {"concurrent_requests", &Probe::concurrent_requests}};
// clang-format on

template <class T, std::size_t N>
boost::json::object record_json(const T& record, const Field<T> (&fields)[N]) {
  boost::json::object o;
  for (const auto& f : fields) {
    std::visit(
        [&](auto member) {
          const auto& v = record.*member;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::int64_t>) {
            o[f.key] = go_time(v);
          } else if constexpr (std::is_same_v<V, std::optional<std::uint64_t>>) {
            o[f.key] = opt_u64(v);
          } else {
            o[f.key] = v;
          }
        },
        f.member);
  }
  return o;
}

boost::json::object snapshot_json(const MetricSnapshot& m) { return record_json(m, kSnapshotFields); }
boost::json::object probe_json(const ProbeObservation& p) { return record_json(p, kProbeFields); }

// `fak`: in fak's shape (docs/FAK.md 4.3), without our fields.
boost::json::object receipt_json(const TransitionReceipt& r, bool fak) {
  boost::json::object o;
  o["schema"] = r.schema;
  o["backend_before"] = identity_json(r.backend_before);
  o["backend_after"] = identity_json(r.backend_after);
  o["layer"] = r.layer;
  o["transition"] = r.transition;
  boost::json::object m;
  m["name"] = r.mechanism.name;
  m["exit_ok"] = r.mechanism.exit_ok;
  if (!r.mechanism.detail.empty()) m["detail"] = r.mechanism.detail;
  if (!fak) {
    m["requests_sent"] = r.mechanism.requests_sent;
    m["reused_tokens"] = r.mechanism.reused_tokens;
  }
  o["mechanism"] = std::move(m);
  o["started_at"] = go_time(r.started_at_us);
  o["ended_at"] = go_time(r.ended_at_us);
  o["result"] = r.result;
  if (!r.reason.empty()) o["reason"] = r.reason;
  if (r.pre_metrics) o["pre_metrics"] = snapshot_json(*r.pre_metrics);
  if (r.post_metrics) o["post_metrics"] = snapshot_json(*r.post_metrics);
  if (!r.probes.empty()) {
    boost::json::array a;
    for (const auto& p : r.probes) a.push_back(probe_json(p));
    o["probes"] = std::move(a);
  }
  if (fak) return o;
  o["pinned_prefix_digest"] = r.pinned_prefix_digest;
  o["pinned_prefix_tokens"] = r.pinned_prefix_tokens;
  if (r.precondition) o["precondition"] = probe_json(*r.precondition);
  return o;
}

// ---- strict reading ----

using simdjson::dom::element;

class Reader {
 public:
  Reader(element e, std::string where, const std::vector<std::string_view>& allowed, std::string& err)
      : where_(std::move(where)), err_(err) {
    if (e.get_object().get(obj_) != simdjson::SUCCESS) {
      fail("is not an object");
      return;
    }
    for (auto field : obj_) {
      if (std::find(allowed.begin(), allowed.end(), field.key) == allowed.end()) {
        fail(fmt::format("has an unknown field \"{}\"", field.key));
        return;
      }
    }
  }
  bool has(std::string_view key) {
    element v;
    return ok() && obj_[key].get(v) == simdjson::SUCCESS && !v.is_null();
  }
  std::optional<element> get(std::string_view key, bool required = true) {
    element v;
    if (!ok()) return std::nullopt;
    if (obj_[key].get(v) != simdjson::SUCCESS) {
      if (required) fail(fmt::format("lacks \"{}\"", key));
      return std::nullopt;
    }
    return v;
  }
  std::string str(std::string_view key, bool required = true) {
    auto v = get(key, required);
    std::string_view s;
    if (!v) return {};
    if (v->get_string().get(s) != simdjson::SUCCESS) fail(fmt::format("\"{}\" is not a string", key));
    return std::string(s);
  }
  bool boolean(std::string_view key) {
    auto v = get(key);
    bool b = false;
    if (v && v->get_bool().get(b) != simdjson::SUCCESS) fail(fmt::format("\"{}\" is not a boolean", key));
    return b;
  }
  std::uint64_t u64(std::string_view key, bool required = true) {
    auto v = get(key, required);
    std::uint64_t u = 0;
    if (v && v->get_uint64().get(u) != simdjson::SUCCESS)
      fail(fmt::format("\"{}\" is not a non-negative integer", key));
    return u;
  }
  std::optional<std::uint64_t> opt_u64(std::string_view key) {
    auto v = get(key);
    if (!v || v->is_null()) return std::nullopt;
    std::uint64_t u = 0;
    if (v->get_uint64().get(u) != simdjson::SUCCESS) {
      fail(fmt::format("\"{}\" is not a non-negative integer or null", key));
      return std::nullopt;
    }
    return u;
  }
  std::int64_t time(std::string_view key) {
    const std::string s = str(key);
    if (!ok()) return 0;
    if (s == "0001-01-01T00:00:00Z") return 0;
    auto t = parse_rfc3339(s);
    if (!t) fail(fmt::format("\"{}\" is not an RFC 3339 time", key));
    return t ? *t : 0;
  }
  bool ok() const { return err_.empty(); }
  const std::string& where() const { return where_; }
  void fail(const std::string& what) {
    if (err_.empty()) err_ = where_ + " " + what;
  }

 private:
  std::string where_;
  std::string& err_;
  simdjson::dom::object obj_;
};

BackendIdentity read_identity(element e, const std::string& where, std::string& err) {
  Reader r(e, where, {"name", "instance", "revision"}, err);
  return {r.str("name"), r.str("instance"), r.str("revision")};
}

// A record read strictly by its member list: every member required, no other member allowed.
template <class T, std::size_t N>
T read_record(element e, const std::string& where, const Field<T> (&fields)[N], std::string& err) {
  std::vector<std::string_view> keys;
  for (const auto& f : fields) keys.push_back(f.key);
  Reader r(e, where, keys, err);
  T record;
  for (const auto& f : fields) {
    std::visit(
        [&](auto member) {
          auto& v = record.*member;
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, std::int64_t>) {
            v = r.time(f.key);
          } else if constexpr (std::is_same_v<V, std::optional<std::uint64_t>>) {
            v = r.opt_u64(f.key);
          } else if constexpr (std::is_same_v<V, std::uint64_t>) {
            v = r.u64(f.key);
          } else if constexpr (std::is_same_v<V, bool>) {
            v = r.boolean(f.key);
          } else {
            v = r.str(f.key);
          }
        },
        f.member);
  }
  return record;
}

MetricSnapshot read_snapshot(element e, const std::string& where, std::string& err) {
  return read_record(e, where, kSnapshotFields, err);
}
ProbeObservation read_probe(element e, const std::string& where, std::string& err) {
  return read_record(e, where, kProbeFields, err);
}

// `fak`: a receipt fak wrote (docs/FAK.md 4.3), without our pinned-prefix and precondition fields.
TransitionReceipt read_receipt(element e, const std::string& where, std::string& err, bool fak) {
  std::vector<std::string_view> keys = {"schema",      "backend_before", "backend_after", "layer",  "transition",
                                        "mechanism",   "started_at",     "ended_at",      "result", "reason",
                                        "pre_metrics", "post_metrics",   "probes"};
  if (!fak) keys.insert(keys.end(), {"pinned_prefix_digest", "pinned_prefix_tokens", "precondition"});
  Reader r(e, where, keys, err);
  TransitionReceipt t;
  t.schema = r.str("schema");
  if (auto v = r.get("backend_before")) t.backend_before = read_identity(*v, where + ".backend_before", err);
  if (auto v = r.get("backend_after")) t.backend_after = read_identity(*v, where + ".backend_after", err);
  t.layer = r.str("layer");
  t.transition = r.str("transition");
  if (auto v = r.get("mechanism")) {
    std::vector<std::string_view> mkeys = {"name", "exit_ok", "detail"};
    if (!fak) mkeys.insert(mkeys.end(), {"requests_sent", "reused_tokens"});
    Reader m(*v, where + ".mechanism", mkeys, err);
    t.mechanism.name = m.str("name");
    t.mechanism.exit_ok = m.boolean("exit_ok");
    t.mechanism.detail = m.str("detail", false);
    if (!fak) {
      t.mechanism.requests_sent = m.u64("requests_sent");
      t.mechanism.reused_tokens = m.u64("reused_tokens");
    }
  }
  t.started_at_us = r.time("started_at");
  t.ended_at_us = r.time("ended_at");
  t.result = r.str("result");
  t.reason = r.str("reason", false);
  if (r.has("pre_metrics")) t.pre_metrics = read_snapshot(*r.get("pre_metrics"), where + ".pre_metrics", err);
  if (r.has("post_metrics")) t.post_metrics = read_snapshot(*r.get("post_metrics"), where + ".post_metrics", err);
  if (auto v = r.get("probes", false)) {
    simdjson::dom::array a;
    if (v->get_array().get(a) != simdjson::SUCCESS)
      r.fail("\"probes\" is not an array");
    else {
      std::size_t i = 0;
      for (element p : a) t.probes.push_back(read_probe(p, fmt::format("{}.probes[{}]", where, i++), err));
    }
  }
  if (fak) return t;
  t.pinned_prefix_digest = r.str("pinned_prefix_digest");
  t.pinned_prefix_tokens = r.u64("pinned_prefix_tokens");
  if (r.has("precondition")) t.precondition = read_probe(*r.get("precondition"), where + ".precondition", err);
  return t;
}

bool decreased(const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
  return a && b && *b < *a;
}

std::optional<std::uint64_t> delta(const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
  if (!a || !b || *b < *a) return std::nullopt;
  return *b - *a;
}

}  // namespace

std::string verify_receipt(const TransitionReceipt& r, Rules rules) {
  const bool ours = rules == Rules::kOurs;
  if (!r.pre_metrics || !r.post_metrics) return "metrics_missing";
  const auto& pre = *r.pre_metrics;
  const auto& post = *r.post_metrics;
  if (!(r.backend_before == r.backend_after)) return "backend_identity_changed";
  if (pre.captured_at_us < r.started_at_us || post.captured_at_us < pre.captured_at_us ||
      post.captured_at_us > r.ended_at_us || pre.sample_sequence == 0 || post.sample_sequence <= pre.sample_sequence) {
    return "stale_metrics";
  }
  if (pre.counter_epoch.empty() || post.counter_epoch != pre.counter_epoch || decreased(pre.requests, post.requests) ||
      decreased(pre.reuse_hits, post.reuse_hits) || decreased(pre.reused_tokens, post.reused_tokens) ||
      decreased(pre.invalidations, post.invalidations) || decreased(pre.expirations, post.expirations) ||
      decreased(pre.evictions, post.evictions)) {
    return "counter_reset";
  }
  if (r.probes.empty()) return "probe_missing";
  for (const auto& p : r.probes) {
    // Ours: a probe must carry the pinned prefix, and lie inside the snapshot window.
    if (p.token_prefix_digest.empty() || p.prompt_tokens == 0 ||
        (ours && p.token_prefix_digest != r.pinned_prefix_digest)) {
      return "probe_prefix_unpinned";
    }
    if (p.concurrent_requests != 0) return "concurrent_traffic_contamination";
    if (ours && (p.started_at_us < pre.captured_at_us || p.completed_at_us > post.captured_at_us ||
                 p.completed_at_us < p.started_at_us)) {
      return "probe_outside_window";
    }
  }
  if (ours && r.precondition && r.precondition->completed_at_us > pre.captured_at_us) {
    return "precondition_after_pre_metrics";
  }
  const auto requests = delta(pre.requests, post.requests);
  if (!requests) return "metrics_missing";  // without a request count concurrent traffic cannot be excluded
  if (*requests != r.probes.size() + r.mechanism.requests_sent) return "concurrent_traffic_contamination";
  std::uint64_t hits = 0, tokens = r.mechanism.reused_tokens;
  for (const auto& p : r.probes) {
    if (p.reused) ++hits, tokens += p.reused_tokens;
  }
  if (auto d = delta(pre.reuse_hits, post.reuse_hits); d && *d != hits) return "probe_metric_mismatch";
  if (auto d = delta(pre.reused_tokens, post.reused_tokens); d && *d != tokens) return "probe_metric_mismatch";
  const auto& last = r.probes.back();
  // A counter the backend publishes must move; one it does not is left to the probe (and said so
  // by its absence in the receipt).
  auto moved = [&](const std::optional<std::uint64_t>& a, const std::optional<std::uint64_t>& b) {
    if (!a || !b) return true;
    return *b > *a;
  };
  if (r.transition == "cold_start") {
    if (last.reused) return "reuse_observed_after_cold";
  } else if (r.transition == "warm_admit") {
    // Ours: admission proved, not just a repeat hit: the first probe misses, the second reuses it.
    if (r.probes.size() != 2 || r.probes.front().token_prefix_digest != last.token_prefix_digest || !last.reused ||
        last.reused_tokens == 0 || (ours && r.probes.front().reused)) {
      return "warm_probe_not_reused";
    }
  } else if (r.transition == "explicit_invalidate") {
    if (!moved(pre.invalidations, post.invalidations) || last.reused) return "invalidation_postcondition_failed";
  } else if (r.transition == "natural_expiry") {
    if (!pre.expirations || !post.expirations || *post.expirations <= *pre.expirations || last.reused) {
      return "expiry_postcondition_failed";
    }
  } else if (r.transition == "pressure_evict") {
    if (!moved(pre.evictions, post.evictions) || last.reused) return "eviction_postcondition_failed";
  } else {
    return "unknown_transition";
  }
  return "";
}

std::string verdict_of(const std::vector<Arm>& arms) {
  bool any_proved = false;
  for (const auto& a : arms) {
    if (a.receipt.result == "proved")
      any_proved = true;
    else if (a.receipt.result != "unsupported")
      return "invalid_arms";
  }
  return any_proved ? "admitted" : "invalid_arms";
}

namespace {

// fak's ValidateStateReport (docs/FAK.md 4.7), under fak's exclusion rules.
std::vector<std::string> validate_fak_report(const Report& r) {
  std::vector<std::string> out;
  const auto& p = r.provenance;
  if (p.evidence_kind != "observed" && p.evidence_kind != "simulated") {
    out.push_back("provenance.evidence_kind is neither observed nor simulated");
  }
  if (p.scope.empty() || p.command.empty() || p.code_state.empty() || p.note.empty() || p.captured_at_us == 0) {
    out.push_back("provenance lacks scope, command, code_state, note or captured_at");
  }
  if (p.scope == "in_process_fak_workflow_cache" && p.external_backend_claims) {
    out.push_back("an in-process scope cannot claim external backend behaviour");
  }
  if (r.arms.empty()) out.push_back("no arm");
  std::map<std::string, bool> included;  // the later arm of a transition decides, as in fak
  bool all_included = true;
  for (const auto& a : r.arms) {
    const auto& t = a.receipt;
    const std::string where = fmt::format("arm {}", a.label.empty() ? "(unlabelled)" : a.label);
    if (a.label.empty()) out.push_back(where + ": no label");
    if (t.schema != kReceiptSchema) out.push_back(where + ": receipt schema is not " + std::string(kReceiptSchema));
    if (t.mechanism.name.empty() || t.backend_before.name.empty()) {
      out.push_back(where + ": no mechanism or backend name (fak refuses unsupported arms and early failures)");
    }
    if (t.started_at_us == 0 || t.ended_at_us < t.started_at_us) {
      out.push_back(where + ": times are missing or backwards");
    }
    if (a.measurement_included != (t.result == "proved")) {
      out.push_back(where + ": measurement_included disagrees with the result");
    }
    if (t.result == "proved") {
      if (const auto again = verify_receipt(t, Rules::kFak); !again.empty()) {
        out.push_back(where + ": written as proved, re-verifies under fak's rules as " + again);
      }
    }
    included[t.transition] = a.measurement_included;
    all_included = all_included && a.measurement_included;
  }
  for (const char* need : {"cold_start", "warm_admit", "explicit_invalidate", "pressure_evict"}) {
    if (!included[need]) out.push_back(fmt::format("no included {} arm", need));
  }
  if (all_included != (r.verdict == "admitted")) {
    out.push_back("verdict '" + r.verdict + "' does not follow from the arms");
  }
  return out;
}

}  // namespace

std::vector<std::string> stricter_than_fak(const Report& r) {
  std::vector<std::string> out;
  for (const auto& a : r.arms) {
    if (a.receipt.result != "proved") continue;
    // fak's receipts do not record the pinned prefix; every probe of a fak campaign carries the
    // same one (4.5), so the first probe's stands in and the others must equal it.
    TransitionReceipt t = a.receipt;
    if (t.pinned_prefix_digest.empty() && !t.probes.empty())
      t.pinned_prefix_digest = t.probes.front().token_prefix_digest;
    if (const auto ours = verify_receipt(t, Rules::kOurs); !ours.empty()) {
      std::string why;
      if (ours == "warm_probe_not_reused")
        why = ": its first probe was already a hit, so the arm did not show that it admitted the prefix";
      out.push_back(fmt::format("arm {}: proved under fak's rules, {} under ours{}", a.label, ours, why));
    }
  }
  return out;
}

std::vector<std::string> validate_report(const Report& r) {
  if (r.schema == kFakReportSchema) return validate_fak_report(r);
  std::vector<std::string> out;
  if (r.schema != kReportSchema) out.push_back(fmt::format("schema is '{}', not {}", r.schema, kReportSchema));
  if (r.provenance.evidence_kind != "observed" && r.provenance.evidence_kind != "simulated") {
    out.push_back("provenance.evidence_kind is neither observed nor simulated");
  }
  if (r.provenance.scope.empty() || r.provenance.command.empty() || r.provenance.note.empty() ||
      r.provenance.code_state.empty() || r.provenance.captured_at_us == 0) {
    out.push_back("provenance lacks scope, command, code_state, note or captured_at");
  }
  if (r.provenance.scope.rfind("in_process", 0) == 0 && r.provenance.external_backend_claims) {
    out.push_back("an in-process scope cannot claim external backend behaviour");
  }
  if (r.arms.empty()) out.push_back("no arm");
  std::set<std::string> seen;
  for (const auto& a : r.arms) {
    const auto& t = a.receipt;
    const std::string where = fmt::format("arm {}", a.label.empty() ? "(unlabelled)" : a.label);
    if (a.label.empty()) out.push_back(where + ": no label");
    if (!seen.insert(t.transition).second) out.push_back(where + ": transition " + t.transition + " appears twice");
    if (t.schema != kReceiptSchema) out.push_back(where + ": receipt schema is not " + std::string(kReceiptSchema));
    if (std::find(std::begin(kLayers), std::end(kLayers), t.layer) == std::end(kLayers))
      out.push_back(where + ": unknown layer " + t.layer);
    if (std::find(std::begin(kTransitions), std::end(kTransitions), t.transition) == std::end(kTransitions)) {
      out.push_back(where + ": unknown transition " + t.transition);
    }
    if (t.started_at_us == 0 || t.ended_at_us < t.started_at_us)
      out.push_back(where + ": times are missing or backwards");
    if (a.measurement_included != (t.result == "proved"))
      out.push_back(where + ": measurement_included disagrees with the result");
    if (t.result == "unsupported") continue;  // an honest unsupported arm needs no mechanism (fak 8.4 #27)
    if (t.mechanism.name.empty() || t.backend_before.name.empty())
      out.push_back(where + ": no mechanism or backend name");
    const std::string again = verify_receipt(t);
    if (t.result == "proved" && !again.empty()) out.push_back(where + ": written as proved, re-verifies as " + again);
    if (t.result == "transition_unproved" && (again.empty() || again != t.reason)) {
      out.push_back(where + ": written as transition_unproved (" + t.reason + "), re-verifies as " +
                    (again.empty() ? std::string("proved") : again));
    }
  }
  if (verdict_of(r.arms) != r.verdict) out.push_back("verdict '" + r.verdict + "' does not follow from the arms");
  return out;
}

std::string report_text(const Report& r) {
  const bool fak = r.schema == kFakReportSchema;  // written back in fak's own shape
  boost::json::object o;
  o["schema"] = r.schema;
  if (!fak) o["created_at"] = go_time(r.created_at_us);
  o["verdict"] = r.verdict;
  boost::json::object p;
  p["evidence_kind"] = r.provenance.evidence_kind;
  p["scope"] = r.provenance.scope;
  p["external_backend_claims"] = r.provenance.external_backend_claims;
  p["command"] = r.provenance.command;
  if (fak) {
    p["go_version"] = r.provenance.go_version;
    p["goos"] = r.provenance.goos;
    p["goarch"] = r.provenance.goarch;
    if (!r.provenance.code_revision.empty()) p["code_revision"] = r.provenance.code_revision;
  } else {
    p["tool_version"] = r.provenance.tool_version;
  }
  p["code_state"] = r.provenance.code_state;
  p["captured_at"] = go_time(r.provenance.captured_at_us);
  p["note"] = r.provenance.note;
  o["provenance"] = std::move(p);
  if (!fak) o["pinned_prefix_digest"] = r.pinned_prefix_digest;
  boost::json::array arms;
  for (const auto& a : r.arms) {
    boost::json::object j;
    j["label"] = a.label;
    j["measurement_included"] = a.measurement_included;
    if (!a.invalid_reason.empty()) j["invalid_reason"] = a.invalid_reason;
    j["transition_receipt"] = receipt_json(a.receipt, fak);
    arms.push_back(std::move(j));
  }
  o["arms"] = std::move(arms);
  return go_marshal_indent(o);
}

Result<Report> parse_report(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  element root;
  if (auto e = parser.parse(padded).get(root); e) {
    return make_error(errc::kCacheStateJson, std::string("not one JSON document: ") + simdjson::error_message(e));
  }
  std::string err;
  std::string_view schema;
  simdjson::dom::object top;
  const bool fak = root.get_object().get(top) == simdjson::SUCCESS &&
                   top["schema"].get_string().get(schema) == simdjson::SUCCESS && schema == kFakReportSchema;
  Reader r(root, "the report",
           fak ? std::vector<std::string_view>{"schema", "verdict", "provenance", "arms"}
               : std::vector<std::string_view>{"schema", "created_at", "verdict", "provenance", "pinned_prefix_digest",
                                               "arms"},
           err);
  Report out;
  out.schema = r.str("schema");
  if (!fak) out.created_at_us = r.time("created_at");
  out.verdict = r.str("verdict");
  if (auto v = r.get("provenance")) {
    Reader p(*v, "provenance",
             fak ? std::vector<std::string_view>{"evidence_kind", "scope", "external_backend_claims", "command",
                                                 "go_version", "goos", "goarch", "code_revision", "code_state",
                                                 "captured_at", "note"}
                 : std::vector<std::string_view>{"evidence_kind", "scope", "external_backend_claims", "command",
                                                 "tool_version", "code_state", "captured_at", "note"},
             err);
    out.provenance.evidence_kind = p.str("evidence_kind");
    out.provenance.scope = p.str("scope");
    out.provenance.external_backend_claims = p.boolean("external_backend_claims");
    out.provenance.command = p.str("command");
    if (fak) {
      out.provenance.go_version = p.str("go_version");
      out.provenance.goos = p.str("goos");
      out.provenance.goarch = p.str("goarch");
      out.provenance.code_revision = p.str("code_revision", false);
    } else {
      out.provenance.tool_version = p.str("tool_version");
    }
    out.provenance.code_state = p.str("code_state");
    out.provenance.captured_at_us = p.time("captured_at");
    out.provenance.note = p.str("note");
  }
  if (!fak) out.pinned_prefix_digest = r.str("pinned_prefix_digest");
  if (auto v = r.get("arms")) {
    simdjson::dom::array a;
    if (v->get_array().get(a) != simdjson::SUCCESS)
      r.fail("\"arms\" is not an array");
    else {
      std::size_t i = 0;
      for (element e : a) {
        const std::string where = fmt::format("arms[{}]", i++);
        Reader ar(e, where, {"label", "measurement_included", "invalid_reason", "transition_receipt"}, err);
        Arm arm;
        arm.label = ar.str("label");
        arm.measurement_included = ar.boolean("measurement_included");
        arm.invalid_reason = ar.str("invalid_reason", false);
        if (auto t = ar.get("transition_receipt"))
          arm.receipt = read_receipt(*t, where + ".transition_receipt", err, fak);
        out.arms.push_back(std::move(arm));
      }
    }
  }
  if (!err.empty()) return make_error(errc::kCacheStateField, err);
  return out;
}

}  // namespace mpo::cachestate
