// fak's serving-sweep rules as fak's own tests assert them (anthony-chaudhary/fak,
// internal/webbench/serving_sweep_test.go, the version with the throughput identity; read with
// the code search, rebuilt here, none of its code copied). Each case is built as fak's
// `syntheticSweepReport` builds its report (one track "ours", model qwen3.8, engine fak-native,
// capacity 8 from "fixture:declared", budgets TTFT p99 80 ms and ITL p99 8 ms, stats of one
// successful request per point, no samples), judged by our rules, then written as fak's writer
// writes it (no tool block, none of our additions) so that `sweep verify` reads it as fak's: it
// must verify, and a tampered copy must not. Invented figures, as fak's are.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "core/go_json.hpp"
#include "support/build_paths.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/receipt.hpp"
#include "sweep/verify.hpp"

namespace mpo::sweep {
namespace {

struct SyntheticPoint {
  double concurrency, throughput, ttft_p99 = 0, itl_p99 = 0;
};

const std::string kEngineReceipt = "sha256:" + std::string(64, '0');

TrackPoint synthetic_track_point(const Contract& c, const SyntheticPoint& sp) {
  TrackPoint tp;
  tp.track = c.track;
  tp.status = "measured";
  tp.measurement_status = "measured";
  tp.model = c.model;
  tp.engine = c.engine;
  tp.engine_receipt_digest = c.engine_receipt_digest;
  tp.batch_capacity = c.batch_capacity;
  tp.capacity_source = c.capacity_source;
  tp.stats.ok = 1;
  tp.stats.token_count_basis = "usage.completion_tokens";
  tp.stats.throughput_tok_s = ScalarMetric::of(sp.throughput, "usage.completion_tokens/s");
  tp.stats.goodput_rps.status = "measured";
  tp.stats.goodput_rps.value = sp.throughput / 10;
  tp.stats.ttft_ms.status = "measured";
  tp.stats.ttft_ms.p99 = sp.ttft_p99;
  tp.stats.itl_ms.status = "measured";
  tp.stats.itl_ms.p99 = sp.itl_p99;
  return tp;
}

// fak's syntheticSweepReport.
SweepReceipt synthetic(const std::vector<SyntheticPoint>& points) {
  SweepReceipt r;
  r.tool_name.clear();
  r.rules_generation = 2;
  r.model = "qwen3.8";
  r.workload_digest = "sha256:workload";
  r.workload_requests = 8;
  r.contracts.push_back(Contract{"ours", "qwen3.8", "fak-native", kEngineReceipt, 8, "fixture:declared"});
  r.sla.ttft_p99_ms = 80;
  r.sla.itl_p99_ms = 8;
  for (const auto& sp : points) {
    Point p;
    p.coordinate = sp.concurrency;
    p.workload_digest = r.workload_digest;
    p.tracks.push_back(synthetic_track_point(r.contracts[0], sp));
    r.points.push_back(std::move(p));
  }
  return r;
}

const TrackPoint& at(const SweepReceipt& r, double c, const std::string& track = "ours") {
  for (const auto& p : r.points) {
    if (p.coordinate != c) continue;
    for (const auto& tp : p.tracks)
      if (tp.track == track) return tp;
  }
  throw std::runtime_error("no such point");
}

// The evaluated receipt as fak's writer writes it: no tool, load or validity block, no evidence
// or samples, none of the stats fields fak's older ServingStats lacks, no boundary or saturation.
std::string fak_written(const SweepReceipt& r) {
  auto doc = receipt_json(r).as_object();
  for (const char* k : {"tool", "load", "validity"}) doc.erase(k);
  for (auto& p : doc["points"].as_array()) {
    for (auto& t : p.as_object()["tracks"].as_array()) {
      auto& tp = t.as_object();
      tp.erase("evidence");
      tp.erase("samples");
      auto& stats = tp["stats"].as_object();
      for (const char* k :
           {"goodput_tok_s", "wall_seconds", "goodput_slo_seconds", "successful_output_tokens_exact",
            "slo_successful_output_tokens_exact", "observed_max_in_flight", "observed_in_flight_basis"}) {
        stats.erase(k);
      }
    }
  }
  for (auto& t : doc["tracks"].as_array()) {
    t.as_object().erase("p99_boundary");
    t.as_object().erase("saturation");
  }
  return go_marshal_indent(doc);
}

// The receipt verifies as fak's (generation 2), and changing what a track summary says does not.
void verifies_as_fak(const SweepReceipt& r) {
  const std::string text = fak_written(r);
  const auto v = verify_sweep(text);
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("fak's rules of generation 2"), std::string::npos) << v.summary;
  auto doc = boost::json::parse(text).as_object();
  auto& summary = doc["tracks"].as_array()[0].as_object();
  summary["valid_points"] = summary["valid_points"].as_int64() + 1;
  const auto tampered = verify_sweep(go_marshal_indent(doc));
  EXPECT_FALSE(tampered.holds);
  EXPECT_NE(tampered.summary.find("tracks[ours].valid_points"), std::string::npos) << tampered.summary;
}

TEST(FakRules, SelectsTheCapacityValidPeakAndSlaKnee) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 24, 50, 7}, {8, 23, 120, 10}});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto& s = r.tracks.at(0);
  EXPECT_EQ(s.status, "measured");
  EXPECT_EQ(s.valid_points, 4);
  ASSERT_TRUE(s.peak);
  EXPECT_EQ(s.peak->coordinate, 4);
  EXPECT_EQ(s.peak->throughput_tok_s, 24);
  EXPECT_EQ(s.peak_status, "measured");
  EXPECT_FALSE(s.envelope_digest.empty());
  EXPECT_EQ(s.sla_status, "measured");
  ASSERT_TRUE(s.sla_knee);
  EXPECT_EQ(s.sla_knee->coordinate, 4);
  verifies_as_fak(r);
}

TEST(FakRules, APartlyFailedPointIsMeasurementIncompleteAndAllowsNoClaim) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 50, 40, 7}, {8, 24, 120, 10}});
  r.points[2].tracks[0].stats.failed = 1;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(at(r, 4).status, "invalid");
  EXPECT_EQ(at(r, 4).reason_code, "measurement_incomplete");
  EXPECT_EQ(at(r, 4).stats.throughput_tok_s.value, 50);  // the observation is kept
  for (double c : {1, 2, 8}) EXPECT_EQ(at(r, c).status, "valid") << c;
  const auto& s = r.tracks.at(0);
  EXPECT_EQ(s.valid_points, 3);
  EXPECT_NE(s.reason.find("measurement_incomplete"), std::string::npos) << s.reason;
  EXPECT_NE(s.reason.find("failed"), std::string::npos) << s.reason;
  EXPECT_EQ(s.peak_status, "invalid");
  EXPECT_FALSE(s.peak);
  EXPECT_EQ(s.sla_status, "invalid");
  EXPECT_FALSE(s.sla_knee);
  const std::string text = fak_written(r);
  for (const char* claim : {"ours peak throughput is 50 tok/s", "ours SLA knee is concurrency 4"}) {
    const auto g = gate_claim(claim, text);
    EXPECT_FALSE(g.allowed) << claim;
    EXPECT_NE(g.message.find("measurement_incomplete"), std::string::npos) << g.message;
  }
  verifies_as_fak(r);
  // The same receipt claiming the point valid is refused for what it is.
  auto doc = boost::json::parse(text).as_object();
  auto& tp = doc["points"].as_array()[2].as_object()["tracks"].as_array()[0].as_object();
  tp["status"] = "valid";
  tp.erase("reason_code");
  tp.erase("reason");
  const auto v = verify_sweep(go_marshal_indent(doc));
  EXPECT_FALSE(v.holds);
  EXPECT_NE(v.summary.find("points[concurrency 4].tracks[ours].status: written \"valid\", re-derived \"invalid\""),
            std::string::npos)
      << v.summary;
}

TEST(FakRules, AMonotonicPeakAtTheLastPointBelowCapacityIsRightCensored) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 24, 50, 7}});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks.at(0).peak_status, "right_censored");
  ASSERT_TRUE(r.tracks.at(0).peak);
  EXPECT_EQ(r.tracks.at(0).peak->coordinate, 4);
  verifies_as_fak(r);
}

TEST(FakRules, AnUnmeasuredDeclaredPointMakesBothFindingsNotIdentifiable) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 24, 50, 7}});
  r.points[1].tracks[0].measurement_status = "not_measured";
  r.points[1].tracks[0].stats.ok = 0;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto& s = r.tracks.at(0);
  EXPECT_EQ(s.peak_status, "not_identifiable");
  EXPECT_FALSE(s.peak);
  EXPECT_EQ(s.sla_status, "not_identifiable");
  EXPECT_FALSE(s.sla_knee);
  verifies_as_fak(r);
}

TEST(FakRules, APointAboveCapacityInvalidatesTheTracksClaims) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {16, 30, 200, 20}});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(at(r, 16).status, "invalid");
  EXPECT_EQ(at(r, 16).reason_code, "capacity_exceeded");
  EXPECT_EQ(r.tracks.at(0).status, "invalid");
  EXPECT_FALSE(r.tracks.at(0).peak);
  EXPECT_FALSE(r.tracks.at(0).sla_knee);
  EXPECT_TRUE(r.tracks.at(0).envelope_digest.empty());  // fak stops before the envelope
  verifies_as_fak(r);
}

TEST(FakRules, IdentityDriftIsRefusedWithoutZeroingTheObservation) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 24, 50, 7}});
  r.points[1].workload_digest = "sha256:changed";
  r.points[2].tracks[0].engine_receipt_digest = "sha256:other-engine";
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(at(r, 2).reason_code, "workload_identity_mismatch");
  EXPECT_EQ(at(r, 4).reason_code, "engine_identity_mismatch");
  const auto& s = r.tracks.at(0);
  EXPECT_EQ(s.status, "invalid");
  EXPECT_EQ(s.valid_points, 1);
  EXPECT_FALSE(s.peak);
  EXPECT_EQ(s.peak_status, "invalid");
  EXPECT_EQ(s.sla_status, "invalid");
  EXPECT_EQ(at(r, 2).stats.throughput_tok_s.value, 18);
  verifies_as_fak(r);
}

TEST(FakRules, UnknownCapacityCannotClaimAPeak) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}});
  r.contracts[0].batch_capacity = 0;
  r.contracts[0].capacity_source.clear();
  for (auto& p : r.points) {
    p.tracks[0].batch_capacity = 0;
    p.tracks[0].capacity_source.clear();
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks.at(0).status, "invalid");
  EXPECT_FALSE(r.tracks.at(0).peak);
  for (const auto& p : r.points) EXPECT_EQ(p.tracks[0].reason_code, "capacity_unknown");
  verifies_as_fak(r);
}

TEST(FakRules, WithoutBudgetsNoKneeIsInvented) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}});
  r.sla = {};
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_TRUE(r.tracks.at(0).peak);
  EXPECT_EQ(r.tracks.at(0).sla_status, "not_configured");
  EXPECT_FALSE(r.tracks.at(0).sla_knee);
  verifies_as_fak(r);
}

struct IdentityCase {
  const char *name, *unit, *basis, *code;
};

// fak's TestServingSweepThroughputIdentityRefusalPreservesMeasurements, case by case.
TEST(FakRules, ThroughputIdentityRefusalsKeepTheMeasurement) {
  for (const auto& c :
       {IdentityCase{"missing unit", "", "usage.completion_tokens", "throughput_identity_unknown"},
        IdentityCase{"missing basis", "usage.completion_tokens/s", "", "throughput_identity_unknown"},
        IdentityCase{"legacy token label", "tok/s", "usage.completion_tokens", "throughput_identity_unknown"},
        IdentityCase{"unknown basis", "unknown/s", "unknown", "throughput_identity_unknown"},
        IdentityCase{"mismatched pair", "stream_content_events/s", "usage.completion_tokens",
                     "throughput_identity_unknown"},
        IdentityCase{"mixed aggregate", "output_token_estimate/s", "mixed", "throughput_identity_unknown"},
        IdentityCase{"event drift", "stream_content_events/s", "stream_content_events", "throughput_identity_mismatch"},
        IdentityCase{"estimate drift", "estimated_content_tokens/s", "estimated_content_tokens",
                     "throughput_identity_mismatch"}}) {
    SCOPED_TRACE(c.name);
    auto r = synthetic({{1, 10}, {2, 90}});
    auto& stats = r.points[1].tracks[0].stats;
    stats.throughput_tok_s.unit = c.unit;
    if (std::string_view(c.unit).empty()) stats.throughput_tok_s.unit.reset();
    stats.token_count_basis = c.basis;
    const std::string before = boost::json::serialize(stats_json(stats));
    for (int iteration = 0; iteration < 2; ++iteration) {
      ASSERT_TRUE(evaluate_sweep(r).ok());
      EXPECT_EQ(at(r, 2).status, "invalid");
      EXPECT_EQ(at(r, 2).reason_code, c.code);
      EXPECT_EQ(boost::json::serialize(stats_json(r.points[1].tracks[0].stats)), before);
      const auto& s = r.tracks.at(0);
      EXPECT_EQ(s.status, "invalid");
      EXPECT_FALSE(s.peak);
      EXPECT_FALSE(s.sla_knee);
      EXPECT_EQ(s.peak_status, "invalid");
      EXPECT_EQ(s.sla_status, "invalid");
    }
    verifies_as_fak(r);
  }
}

// fak's TestServingSweepHomogeneousThroughputPreservesAndBindsIdentity.
TEST(FakRules, OneBasisAtEveryPointIsMeasuredAndBoundIntoTheEnvelope) {
  std::set<std::string> digests;
  for (const std::string basis : {"usage.completion_tokens", "stream_content_events", "estimated_content_tokens"}) {
    SCOPED_TRACE(basis);
    auto r = synthetic({{1, 10}, {8, 90}});
    for (auto& p : r.points) {
      p.tracks[0].stats.token_count_basis = basis;
      p.tracks[0].stats.throughput_tok_s.unit = basis + "/s";
    }
    ASSERT_TRUE(evaluate_sweep(r).ok());
    const auto& s = r.tracks.at(0);
    EXPECT_EQ(s.status, "measured");
    EXPECT_EQ(s.peak_status, "measured");
    for (const auto& sel : {s.peak, s.sla_knee}) {
      ASSERT_TRUE(sel);
      EXPECT_EQ(sel->throughput_unit, basis + "/s");
      EXPECT_EQ(sel->token_count_basis, basis);
      EXPECT_EQ(sel->throughput_tok_s, 90);
    }
    EXPECT_TRUE(digests.insert(s.envelope_digest).second) << "the basis is bound into the envelope digest";
    verifies_as_fak(r);
  }
}

TEST(FakRules, AMixedAggregateAtEveryPointIsStillRefused) {
  auto r = synthetic({{1, 10}, {8, 90}});
  for (auto& p : r.points) {
    p.tracks[0].stats.token_count_basis = "mixed";
    p.tracks[0].stats.throughput_tok_s.unit = "output_token_estimate/s";
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto& s = r.tracks.at(0);
  EXPECT_EQ(s.status, "invalid");
  EXPECT_EQ(s.valid_points, 0);
  EXPECT_FALSE(s.peak);
  EXPECT_FALSE(s.sla_knee);
  verifies_as_fak(r);
}

TEST(FakRules, TheThroughputIdentityIsHeldPerTrack) {
  auto r = synthetic({{1, 10}, {8, 90}});
  Contract vllm = r.contracts[0];
  vllm.track = "vllm";
  r.contracts.push_back(vllm);
  for (auto& p : r.points) {
    auto tp = p.tracks[0];
    tp.track = "vllm";
    tp.stats.token_count_basis = "stream_content_events";
    tp.stats.throughput_tok_s.unit = "stream_content_events/s";
    p.tracks.push_back(std::move(tp));
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  ASSERT_EQ(r.tracks.size(), 2u);
  for (const auto& s : r.tracks) {
    EXPECT_EQ(s.status, "measured") << s.track;
    EXPECT_TRUE(s.peak) << s.track;
    EXPECT_EQ(s.valid_points, 2) << s.track;
  }
  verifies_as_fak(r);
}

// A receipt fak's older writer wrote (generation 1, none of the newer stats or selection fields)
// verifies: what it never wrote is absent by design, not tampering.
TEST(FakRules, AnOlderFakReceiptWithoutTheNewerFieldsVerifies) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}, {4, 24, 50, 7}, {8, 23, 120, 10}});
  r.rules_generation = 1;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  ASSERT_TRUE(r.tracks.at(0).peak);
  EXPECT_TRUE(r.tracks.at(0).peak->throughput_unit.empty());
  const auto v = verify_sweep(fak_written(r));
  EXPECT_TRUE(v.holds) << v.summary;
  EXPECT_NE(v.summary.find("fak's rules of generation 1"), std::string::npos) << v.summary;
  bool said = false;
  for (const auto& n : v.notes) said = said || n.find("absent by design") != std::string::npos;
  EXPECT_TRUE(said) << "the fields fak did not write are named as absent by design";
}

// A real fak receipt (tests/fixtures/SOURCES.md: fak's live Qwen3.8 run, 2026-09-10), written by
// fak's older evaluator, which marked its concurrency 32 point (16 of 32 requests refused with HTTP
// 429) valid and claimed a peak there. fak's own fixed library re-reads that point as invalid
// (measurement_incomplete); so must verify, for that reason and nothing else: none of the fields
// fak's version did not write is held against it.
TEST(FakRules, ARealFakReceiptIsRefusedForItsIncompletePointAndNothingElse) {
  std::ifstream in(
      std::string(mpo::test::source_dir()) + "/tests/fixtures/fak/fak_modular-10078-live_serving-sweep_receipt.json",
      std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  const auto v = verify_sweep(text.str());
  EXPECT_FALSE(v.holds);
  ASSERT_FALSE(v.problems.empty());
  EXPECT_EQ(v.problems.front(), "points[concurrency 32].tracks[ours].status: written \"valid\", re-derived \"invalid\"")
      << v.summary;
  bool code = false;
  for (const auto& p : v.problems) {
    code = code || p == "points[concurrency 32].tracks[ours].reason_code: written (absent), re-derived "
                        "\"measurement_incomplete\"";
    // Only the point and what follows from it (the track's summary) are named.
    EXPECT_TRUE(p.rfind("points[concurrency 32].", 0) == 0 || p.rfind("tracks[ours].", 0) == 0) << p;
    EXPECT_EQ(p.find("goodput_tok_s"), std::string::npos) << p;
  }
  EXPECT_TRUE(code) << v.summary;
  bool absent_by_design = false;
  for (const auto& n : v.notes) absent_by_design = absent_by_design || n.find("absent by design") != std::string::npos;
  EXPECT_TRUE(absent_by_design);
  // Its other five points are valid as written, and the re-evaluation leaves no peak to claim.
  auto r = parse_sweep_receipt(text.str());
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(evaluate_sweep(*r).ok());
  for (double c : {1, 2, 4, 8, 16}) EXPECT_EQ(at(*r, c).status, "valid") << c;
  EXPECT_EQ(at(*r, 32).reason_code, "measurement_incomplete");
  EXPECT_EQ(r->tracks.at(0).status, "invalid");
  EXPECT_FALSE(gate_claim("ours serving peak is 5.2 tok/s", text.str()).allowed);
  // The same receipt with the point written as fak's fixed library writes it verifies.
  auto doc = boost::json::parse(text.str()).as_object();
  auto fixed = receipt_json(*r).as_object();
  fixed.erase("tool");
  fixed.erase("load");
  fixed.erase("validity");
  for (auto& p : fixed["points"].as_array()) {
    for (auto& t : p.as_object()["tracks"].as_array()) {
      t.as_object().erase("evidence");
      t.as_object().erase("samples");
      for (const char* k :
           {"goodput_tok_s", "wall_seconds", "goodput_slo_seconds", "successful_output_tokens_exact",
            "slo_successful_output_tokens_exact", "observed_max_in_flight", "observed_in_flight_basis"}) {
        t.as_object()["stats"].as_object().erase(k);
      }
    }
  }
  for (auto& t : fixed["tracks"].as_array()) {
    t.as_object().erase("p99_boundary");
    t.as_object().erase("saturation");
  }
  const auto again = verify_sweep(go_marshal_indent(fixed));
  EXPECT_TRUE(again.holds) << again.summary;
}

// Ours: removing a field of ours stays tampering.
TEST(FakRules, RemovingAFieldFromOurOwnReceiptIsStillRefused) {
  auto r = synthetic({{1, 10, 20, 5}, {2, 18, 30, 6}});
  r.tool_name = "modelperfobs";
  ASSERT_TRUE(evaluate_sweep(r).ok());
  auto doc = receipt_json(r).as_object();
  ASSERT_TRUE(verify_sweep(go_marshal_indent(doc)).holds);
  doc["points"].as_array()[0].as_object()["tracks"].as_array()[0].as_object()["stats"].as_object().erase(
      "goodput_tok_s");
  const auto v = verify_sweep(go_marshal_indent(doc));
  EXPECT_FALSE(v.holds);
  EXPECT_NE(v.summary.find("goodput_tok_s: written (absent)"), std::string::npos) << v.summary;
}

}  // namespace
}  // namespace mpo::sweep
