// `sweep verify`: every field a receipt states is re-derived from its own contents, and an edit to
// any of them is refused with the field's name, the written value and the re-derived one. Receipts
// are constructed (receipt_fixtures.hpp); the fak-shaped ones are ours with our additions removed.
#include "sweep/verify.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <functional>
#include <set>

#include "core/go_json.hpp"
#include "receipt_fixtures.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/fold.hpp"
#include "sweep/parity.hpp"

namespace mpo::sweep {
namespace {

using namespace fixtures;

TEST(SweepVerify, AReceiptReDerivesByteForByte) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  r.sla.ttft_p99_ms = 55;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const std::string text = receipt_text(r);
  const auto v = verify_sweep(text);
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("sweep verify: OK"), std::string::npos);
  // Parsing and writing again is the identity.
  auto back = parse_sweep_receipt(text);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(receipt_text(*back), text);
  const auto gate = gate_claim("ours: capacity-valid peak at 8", text);
  EXPECT_TRUE(gate.allowed) << gate.message;
  EXPECT_TRUE(gate_claim("ours SLA knee", text).allowed);
}

TEST(SweepVerify, TamperingIsNamed) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const std::string text = receipt_text(r);
  auto replace_first = [&](std::string from, std::string to) {
    std::string t = text;
    const auto pos = t.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    t.replace(pos, from.size(), to);
    return t;
  };
  // A sample made faster: the stats no longer follow from the samples.
  auto v = verify_sweep(replace_first("\"end_to_end_ms\": 1020", "\"end_to_end_ms\": 900"));
  EXPECT_FALSE(v.holds);
  EXPECT_NE(v.summary.find("points[concurrency 1].tracks[ours].stats.end_to_end_ms.p50: written 1020, re-derived 900"),
            std::string::npos)
      << v.summary;
  // A status flipped.
  auto t2 = r;
  t2.points[3].tracks[0].status = "invalid";
  t2.points[3].tracks[0].reason_code = "capacity_exceeded";
  v = verify_sweep(receipt_text(t2));
  EXPECT_FALSE(v.holds);
  EXPECT_NE(v.summary.find("points[concurrency 8].tracks[ours].status: written \"invalid\", re-derived \"valid\""),
            std::string::npos)
      << v.summary;
  // A figure in the summary edited.
  v = verify_sweep(replace_first("\"valid_points\": 4", "\"valid_points\": 5"));
  EXPECT_FALSE(v.holds);
  EXPECT_FALSE(gate_claim("ours serving peak", replace_first("\"valid_points\": 4", "\"valid_points\": 5")).allowed);
  // Not JSON at all.
  EXPECT_FALSE(verify_sweep("{").holds);
}

// stats.no_output (since the fifty-fourth session) re-derived from the samples: a receipt written
// before it, with such samples and no count, still verifies; a count that does not follow from them
// is refused by name.
TEST(SweepVerify, AnAnswerCountWrittenBeforeThisToolDerivedItIsNotRequiredButAWrongOneIsRefused) {
  auto r = scaling_sweep(8, {1, 2, 4});
  add_point(r, 8, 58, 1160, 100, [](std::vector<loadgen::Sample>& s) {
    s[0].ttft_ms.reset();  // a tool call cut before its name: the server counted tokens, nothing came
    s[0].itl_ms.clear();
    s[0].tpot_ms.reset();
    s[0].output_events = 0;
  });
  ASSERT_EQ(r.points[3].tracks[0].stats.no_output, 1);
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_TRUE(verify_sweep(receipt_text(r)).holds) << verify_sweep(receipt_text(r)).summary;
  r.points[3].tracks[0].stats.no_output.reset();  // as a receipt of an earlier build wrote it
  EXPECT_TRUE(verify_sweep(receipt_text(r)).holds) << verify_sweep(receipt_text(r)).summary;
  r.points[3].tracks[0].stats.no_output = 5;
  const auto v = verify_sweep(receipt_text(r));
  EXPECT_FALSE(v.holds);
  EXPECT_NE(v.summary.find("stats.no_output: written 5, re-derived 1"), std::string::npos) << v.summary;
}

TEST(SweepVerify, AFakReceiptWithAHardInvalidTrackAndNoEnvelopeDigestVerifies) {
  // fak writes no envelope_digest for a track with a hard invalidity (docs/FAK.md 6.8); ours used
  // to derive one and refuse every such receipt ("written summary differs").
  auto r = scaling_sweep(8, {1, 2, 4, 8, 16});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto doc = fak_shaped(r);
  for (const auto& t : doc.at("tracks").as_array()) ASSERT_FALSE(t.as_object().contains("envelope_digest"));
  const auto v = verify_sweep(go_marshal_indent(doc));
  EXPECT_TRUE(v.holds) << v.summary;
}

TEST(SweepVerify, AFakStyleReceiptWithoutSamplesReEvaluatesFromItsStats) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto doc = fak_shaped(r);
  const std::string fak_text = go_marshal_indent(doc);
  auto v = verify_sweep(fak_text);
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_EQ(v.notes.size(), 4u);  // each point: stats taken as written
  EXPECT_TRUE(gate_claim("ours capacity-valid peak", fak_text).allowed);
  // A fak receipt whose written summary disagrees with its points is refused.
  std::string bad = fak_text;
  const std::string from = "\"peak_status\": \"measured\"";
  bad.replace(bad.find(from), from.size(), "\"peak_status\": \"invalid\"");
  EXPECT_FALSE(verify_sweep(bad).holds);
}

// Every leaf of a document with the path verify names it by (points by coordinate, tracks and
// contracts by track name), and a way to edit it.
struct Leaf {
  std::string path;
  std::function<void(boost::json::value&)> edit;  // applied to the document's root
};

void collect(const boost::json::value& v, const std::string& path, std::vector<std::string>& keys_here,
             std::vector<std::pair<std::string, std::vector<std::string>>>& out, std::vector<std::string>& route) {
  (void)keys_here;
  if (v.is_object()) {
    for (const auto& kv : v.as_object()) {
      route.push_back(std::string(kv.key()));
      collect(kv.value(), path.empty() ? std::string(kv.key()) : path + "." + std::string(kv.key()), keys_here, out,
              route);
      route.pop_back();
    }
    return;
  }
  if (v.is_array()) {
    const auto& a = v.as_array();
    const std::string last = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string label = std::to_string(i);
      if (a[i].is_object()) {
        const auto& e = a[i].as_object();
        if (last == "points" && e.contains("concurrency")) label = "concurrency " + go_marshal(e.at("concurrency"));
        if ((last == "tracks" || last == "contracts") && e.contains("track"))
          label = std::string(e.at("track").as_string());
      }
      route.push_back("#" + std::to_string(i));
      collect(a[i], path + "[" + label + "]", keys_here, out, route);
      route.pop_back();
    }
    if (a.empty()) out.emplace_back(path, route);
    return;
  }
  out.emplace_back(path, route);
}

boost::json::value* walk(boost::json::value& root, const std::vector<std::string>& route) {
  boost::json::value* v = &root;
  for (const auto& step : route) {
    if (step[0] == '#')
      v = &v->as_array()[std::stoul(step.substr(1))];
    else
      v = &v->as_object()[step];
  }
  return v;
}

void tamper(boost::json::value& v) {
  if (v.is_string())
    v = std::string(v.as_string()) + "-edited";
  else if (v.is_bool())
    v = !v.as_bool();
  else if (v.is_int64())
    v = v.as_int64() + 1;
  else if (v.is_uint64())
    v = v.as_uint64() + 1;
  else if (v.is_double())
    v = v.as_double() * 1.5 + 1;
  else if (v.is_array())
    v.as_array().push_back("added");
  else if (v.is_object())
    v.as_object()["added"] = 1;
  else
    v = "edited";
}

// Where tampering cannot be seen, and why (docs/SWEEP.md "What verify re-derives"): what the
// operator declared or the machine measured, which nothing else in the receipt depends on.
const std::set<std::string> kUnverifiableInputs = {
    "generated_at",  // when it was written
    "model",         // the requested model; the contract's and the points' model are checked
    "workload.requests",
    "tool.name",
    "tool.version",
    // `load`: how the points were driven, the run's settings (its slo_ms shows in goodput).
    "load.mode",
    "evidence.load.started_at",
    "evidence.load.ended_at",
    // Inputs whose consequences this receipt happens not to show: the bound decides
    // client_saturated only when a send was late; the seed moves the bootstrap intervals only when
    // the samples differ (here they are all equal).
    "evidence.generator.lateness_bound_ms",
    "evidence.confidence.seed",
    // What the workload declares shared: the prompts are not in the receipt (their digest is).
    "evidence.cache.prompts",
    "evidence.cache.declared_shared_share",
};

// Reduces a path to its shape: points[...] and tracks[...] dropped, samples[n] as one.
std::string shape(const std::string& path) {
  std::string out;
  for (std::size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '[') {
      i = path.find(']', i);
      continue;
    }
    out += path[i];
  }
  for (const std::string& prefix : {std::string("points.tracks."), std::string("contracts."), std::string("tracks.")}) {
    if (out.rfind(prefix, 0) == 0) return out.substr(prefix.size());
  }
  return out;
}

TEST(SweepVerify, EveryStatedFieldEditedIsRefusedByName) {
  auto r = scaling_sweep(4, {1, 2, 4});
  r.sla.ttft_p99_ms = 55;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const std::string text = receipt_text(r);
  ASSERT_TRUE(verify_sweep(text).holds);
  auto doc = parse_exact_json(text);
  ASSERT_TRUE(doc.ok());
  std::vector<std::pair<std::string, std::vector<std::string>>> leaves;
  std::vector<std::string> keys, route;
  collect(*doc, "", keys, leaves, route);
  std::size_t named = 0, through_consequences = 0;
  std::set<std::string> unseen;
  for (const auto& [path, steps] : leaves) {
    if (path.find(".samples[") != std::string::npos) continue;  // inputs: SamplesAreTheirStatsSource
    auto edited = *doc;
    tamper(*walk(edited, steps));
    const auto v = verify_sweep(go_marshal_indent(edited));
    bool names_it = false;
    for (const auto& p : v.problems) names_it = names_it || p.rfind(path + ":", 0) == 0;
    if (names_it) {
      ++named;
    } else if (!v.holds) {
      ++through_consequences;  // a declared input: refused for what it changes (a status, a digest)
    } else {
      unseen.insert(shape(path));
    }
  }
  EXPECT_EQ(unseen, kUnverifiableInputs);
  EXPECT_GT(named, 250u);
  EXPECT_GT(through_consequences, 10u);
}

TEST(SweepVerify, SamplesAreTheirStatsSource) {
  auto r = scaling_sweep(8, {1, 2});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  auto doc = receipt_json(r);
  auto& sample = doc.at("points").as_array()[1].at("tracks").as_array()[0].at("samples").as_array()[0].as_object();
  sample["ttft_ms"] = 4000.0;
  const auto v = verify_sweep(go_marshal_indent(doc));
  ASSERT_FALSE(v.holds);
  EXPECT_NE(std::find(v.problems.begin(), v.problems.end(),
                      "points[concurrency 2].tracks[ours].stats.ttft_ms.p99: written 52, re-derived 4000"),
            v.problems.end())
      << v.summary;
}

TEST(SweepVerify, AFakReceiptsEditedSummaryIsRefusedAndTheGateTrustsNothingElse) {
  // The defect: fak receipts passed verify after their peak and valid_points were edited.
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  auto doc = fak_shaped(r);
  ASSERT_TRUE(verify_sweep(go_marshal_indent(doc)).holds);
  struct Edit {
    std::string field, from, to;
  };
  for (const Edit& e :
       {Edit{"valid_points", "4", "5"}, Edit{"peak.concurrency", "8", "4"}, Edit{"peak.throughput_tok_s", "", "1e6"},
        Edit{"peak_status", "\"measured\"", "\"right_censored\""}, Edit{"envelope_digest", "", "\"sha256:00\""},
        Edit{"status", "\"measured\"", "\"invalid\""}}) {
    auto edited = doc;
    auto& t = edited.at("tracks").as_array()[0].as_object();
    boost::json::value* target = &t[e.field.substr(0, e.field.find('.'))];
    if (e.field.find('.') != std::string::npos) target = &target->as_object()[e.field.substr(e.field.find('.') + 1)];
    if (!e.from.empty()) {
      ASSERT_EQ(go_marshal(*target), e.from) << e.field;
    }
    *target = boost::json::parse(e.to);
    const std::string forged = go_marshal_indent(edited);
    const auto v = verify_sweep(forged);
    ASSERT_FALSE(v.holds) << e.field;
    EXPECT_EQ(v.problems.front().rfind("tracks[ours]." + e.field + ": written ", 0), 0u) << v.problems.front();
    EXPECT_NE(v.problems.front().find(", re-derived "), std::string::npos) << v.problems.front();
    const auto g = gate_claim("ours capacity-valid peak", forged);
    EXPECT_FALSE(g.allowed) << e.field;
    EXPECT_NE(g.message.find("does not re-evaluate cleanly"), std::string::npos) << g.message;
  }
  // A point's status edited on a fak receipt (no samples: its stats are taken as written, its
  // status is not).
  auto edited = doc;
  edited.at("points").as_array()[2].at("tracks").as_array()[0].as_object()["status"] = "invalid";
  const auto v = verify_sweep(go_marshal_indent(edited));
  ASSERT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(), "points[concurrency 4].tracks[ours].status: written \"invalid\", re-derived \"valid\"");
}

TEST(SweepVerify, AFieldOurReceiptsNeverWriteIsRefused) {
  auto r = scaling_sweep(8, {1, 2});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  auto doc = receipt_json(r);
  doc.at("tracks").as_array()[0].as_object()["peak_override"] = 16;
  const auto v = verify_sweep(go_marshal_indent(doc));
  ASSERT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(), "tracks[ours].peak_override: written 16, re-derived (absent)");
}

TEST(SweepVerify, AParityReceiptIsReDerived) {
  ParityReport p;
  p.generated_at = "2026-11-29T12:00:00Z";
  p.model = "m";
  p.requests = 4;
  p.concurrency = 2;
  p.slo_ms = 2000;
  p.workload_digest = sha256_digest("workload");
  p.tool_version = "test";
  for (const char* name : {"ours", "sglang"}) {
    ParityTrack t;
    t.track = name;
    t.measured = true;
    t.base_url = "http://127.0.0.1:1/v1";
    t.samples = samples(4, std::string(name) == "ours" ? 60 : 50, 1000, 10);
    FoldOptions fo;
    fo.slo_ms = 2000;
    t.stats = fold_samples(t.samples, fo);
    p.tracks.push_back(std::move(t));
  }
  const std::string text = go_marshal_indent(parity_json(p));
  auto v = verify_sweep(text);
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("parity receipt at concurrency 2, 8 samples re-derived"), std::string::npos) << v.summary;
  // The tax edited: ours looks as fast as SGLang.
  auto doc = parity_json(p);
  doc.at("ours_vs_sglang_tax").at("metrics").at("ttft_ms").as_object()["ours_minus_raw"] = 0;
  v = verify_sweep(go_marshal_indent(doc));
  ASSERT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(), "ours_vs_sglang_tax.metrics.ttft_ms.ours_minus_raw: written 0, re-derived 10");
  // A track's stats edited against its samples.
  doc = parity_json(p);
  doc.at("tracks").as_array()[1].at("stats").as_object()["ok"] = 40;
  v = verify_sweep(go_marshal_indent(doc));
  ASSERT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(), "tracks[sglang].stats.ok: written 40, re-derived 4");
  // fak's parity receipt (no samples, no tool block): stats as written, the tax re-derived.
  doc = parity_json(p);
  doc.as_object().erase("tool");
  for (auto& t : doc.at("tracks").as_array()) t.as_object().erase("samples");
  EXPECT_TRUE(verify_sweep(go_marshal_indent(doc)).holds);
  doc.at("ours_vs_sglang_tax").as_object()["status"] = "not_measured";
  EXPECT_FALSE(verify_sweep(go_marshal_indent(doc)).holds);
  // In fak's own shape (issue 39): its parity workload has no digest and labels its basis as its
  // version does (here, as fak's tests leave it: empty); its stats lack our newer fields; its
  // samples, when kept, are re-folded.
  doc = parity_json(p);
  doc.as_object().erase("tool");
  doc.at("workload").as_object().erase("digest");
  doc.at("workload").as_object()["token_count_basis"] = "";
  for (auto& t : doc.at("tracks").as_array()) {
    auto& stats = t.at("stats").as_object();
    for (const char* k : {"goodput_tok_s", "wall_seconds", "goodput_slo_seconds", "successful_output_tokens_exact",
                          "slo_successful_output_tokens_exact", "observed_max_in_flight", "observed_in_flight_basis"}) {
      stats.erase(k);
    }
  }
  v = verify_sweep(go_marshal_indent(doc));
  EXPECT_TRUE(v.holds) << v.summary;
  doc.at("tracks").as_array()[0].at("stats").as_object()["failed"] = 1;
  v = verify_sweep(go_marshal_indent(doc));
  EXPECT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(), "tracks[ours].stats.failed: written 1, re-derived 0");
}

TEST(SweepCache, CarryoverIsJudgedFromTheResponsesOwnCachedTokens) {
  auto s = samples(4, 50, 1000, 10);
  for (auto& x : s) x.usage = loadgen::SampleUsage{200, 10, 210, 150};
  // Declared 10% shared: 20 tokens a request, plus the 16-token allowance; 150 cached is far above.
  auto e = cache_evidence(s, CacheDeclaration{"same_every_point", 0.10, std::nullopt}, nullptr);
  EXPECT_EQ(e.status, "measured");
  EXPECT_EQ(e.source, "usage.cached_tokens");
  EXPECT_DOUBLE_EQ(*e.cached_share, 0.75);
  EXPECT_DOUBLE_EQ(*e.limit_share, 0.10 + 16.0 / 200.0);
  EXPECT_EQ(e.carryover, true);
  // Declared 70% shared: within it.
  e = cache_evidence(s, CacheDeclaration{"distinct_per_point", 0.70, std::nullopt}, nullptr);
  EXPECT_EQ(e.carryover, false);
  // No cached_tokens in any response: the server's counters decide.
  for (auto& x : s) x.usage->cached_tokens.reset();
  boost::json::object server;
  server["prefix_cache_queries_delta"] = 800;
  server["prefix_cache_hits_delta"] = 640;
  server["prefix_cache_source"] = "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total";
  for (auto& x : s) x.http_status = 200;
  e = cache_evidence(s, CacheDeclaration{"same_every_point", 0.0, std::nullopt}, &server);
  EXPECT_EQ(e.source, "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total");
  EXPECT_DOUBLE_EQ(*e.cached_share, 0.8);
  EXPECT_EQ(e.carryover, true);
  // Neither: not known, and no verdict.
  e = cache_evidence(s, CacheDeclaration{"distinct_per_point", 0.0, std::nullopt}, nullptr);
  EXPECT_EQ(e.status, "not_measured");
  EXPECT_FALSE(e.carryover);
}

TEST(SweepCache, ACarriedOverPointIsInvalidAndTheGateRefusesTheTrack) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  for (std::size_t i = 1; i < r.points.size(); ++i) {
    auto& tp = r.points[i].tracks[0];
    for (auto& x : tp.samples) x.usage = loadgen::SampleUsage{200, 100, 300, 200};  // every prompt token cached
    tp.evidence.cache = cache_evidence(tp.samples, CacheDeclaration{"same_every_point", 0.0, std::nullopt}, nullptr);
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.points[0].tracks[0].status, "valid");
  EXPECT_EQ(r.points[1].tracks[0].reason_code, "cache_carryover");
  EXPECT_NE(r.points[1].tracks[0].reason.find("100.0% of the point's prompt tokens came from the prefix cache"),
            std::string::npos)
      << r.points[1].tracks[0].reason;
  EXPECT_EQ(r.tracks[0].status, "invalid");
  const std::string text = receipt_text(r);
  EXPECT_TRUE(verify_sweep(text).holds);
  EXPECT_FALSE(gate_claim("ours capacity-valid peak", text).allowed);
  // Editing the verdict away is refused: carryover follows from the samples.
  auto doc = receipt_json(r);
  doc.at("points").as_array()[1].at("tracks").as_array()[0].at("evidence").at("cache").as_object()["carryover"] = false;
  const auto v = verify_sweep(go_marshal_indent(doc));
  ASSERT_FALSE(v.holds);
  EXPECT_EQ(v.problems.front(),
            "points[concurrency 2].tracks[ours].evidence.cache.carryover: written false, re-derived true");
}

// fak's newer rules (generation 2): a point's throughput must say what it counts, one basis for all
// its samples and the same as the track's other points; the unit and basis are bound into the
// envelope digest. Receipts of the older generation are judged by the rules they were written
// under.
TEST(SweepRules, ThroughputIdentityIsJudgedByTheGenerationTheReceiptWasWrittenUnder) {
  auto mixed = [] {
    auto r = scaling_sweep(8, {1, 2, 4, 8});
    auto& tp = r.points[2].tracks[0];  // concurrency 4: one sample estimated, the rest exact
    tp.samples[0].output_token_count_basis = "estimated_content_tokens";
    tp.samples[0].output_tokens_exact.reset();
    FoldOptions fo;
    fo.slo_ms = 2000;
    tp.stats = fold_samples(tp.samples, fo);
    return r;
  };
  auto newer = mixed();
  ASSERT_TRUE(evaluate_sweep(newer).ok());
  // A mixed aggregate records no composition to compare: unknown, as fak's validServingSweepThroughputPair.
  EXPECT_EQ(newer.points[2].tracks[0].reason_code, "throughput_identity_unknown");
  EXPECT_EQ(newer.tracks[0].status, "invalid");
  EXPECT_TRUE(verify_sweep(receipt_text(newer)).holds);

  auto older = mixed();
  older.rules_generation = 1;
  ASSERT_TRUE(evaluate_sweep(older).ok());
  EXPECT_EQ(older.points[2].tracks[0].status, "valid");  // generation 1 knows no throughput identity
  EXPECT_EQ(older.tracks[0].status, "measured");
  // The same receipt as fak's older writer wrote it: read as generation 1, and it verifies.
  const std::string fak_old = go_marshal_indent(fak_shaped(older));
  auto v = verify_sweep(fak_old);
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("fak's rules of generation 1"), std::string::npos) << v.summary;

  // Every point on one basis: both generations measure the track, with different digests.
  auto exact = scaling_sweep(8, {1, 2, 4, 8});
  auto exact_old = exact;
  exact_old.rules_generation = 1;
  ASSERT_TRUE(evaluate_sweep(exact).ok() && evaluate_sweep(exact_old).ok());
  EXPECT_NE(exact.tracks[0].envelope_digest, exact_old.tracks[0].envelope_digest);
  // fak's newer writer: recognised by its digest, verified as generation 2.
  v = verify_sweep(go_marshal_indent(fak_shaped(exact)));
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("fak's rules of generation 2"), std::string::npos) << v.summary;
  v = verify_sweep(go_marshal_indent(fak_shaped(exact_old)));
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("fak's rules of generation 1"), std::string::npos) << v.summary;

  // A point in another basis than the track's first valid one: mismatch; a unit missing: unknown.
  auto other = scaling_sweep(8, {1, 2, 4, 8});
  for (auto& x : other.points[3].tracks[0].samples) {
    x.output_token_count_basis = "stream_content_events";
    x.output_tokens_exact.reset();
  }
  FoldOptions fo;
  fo.slo_ms = 2000;
  other.points[3].tracks[0].stats = fold_samples(other.points[3].tracks[0].samples, fo);
  other.points[1].tracks[0].stats.throughput_tok_s.unit.reset();
  other.points[1].tracks[0].samples.clear();  // stats as written (a fak receipt without samples)
  ASSERT_TRUE(evaluate_sweep(other).ok());
  EXPECT_EQ(other.points[3].tracks[0].reason_code, "throughput_identity_mismatch");
  EXPECT_NE(
      other.points[3].tracks[0].reason.find("where the track's first valid point has 'usage.completion_tokens/s'"),
      std::string::npos)
      << other.points[3].tracks[0].reason;
  EXPECT_EQ(other.points[1].tracks[0].reason_code, "throughput_identity_unknown");
}

}  // namespace
}  // namespace mpo::sweep
