// Sweep evaluation, findings, verification and the claim gate, on constructed receipts (invented
// figures chosen so every rule has one clear outcome).
#include "sweep/evaluate.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "core/go_json.hpp"
#include "receipt_fixtures.hpp"
#include "sweep/fold.hpp"
#include "sweep/render.hpp"
#include "sweep/verify.hpp"

namespace mpo::sweep {
namespace {

using namespace fixtures;

const TrackPoint& at(const SweepReceipt& r, double c) {
  for (const auto& p : r.points)
    if (p.coordinate == c) return p.tracks[0];
  throw std::runtime_error("no point");
}

TEST(SweepEvaluate, PeakAtDeclaredCapacityIsMeasured) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  ASSERT_EQ(r.tracks.size(), 1u);
  const auto& t = r.tracks[0];
  EXPECT_EQ(t.status, "measured");
  EXPECT_EQ(t.valid_points, 4);
  ASSERT_TRUE(t.peak);
  EXPECT_EQ(t.peak->coordinate, 8);
  EXPECT_EQ(t.peak_status, "measured");  // 8 == capacity: the axis is upper-closed
  EXPECT_EQ(t.sla_status, "not_configured");
  EXPECT_TRUE(r.valid);
  EXPECT_TRUE(is_sha256_digest(t.envelope_digest));
}

TEST(SweepEvaluate, PeakBelowCapacityIsRightCensoredAndTheGateSaysWhy) {
  auto r = scaling_sweep(16, {1, 2, 4, 8});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks[0].peak_status, "right_censored");
  const auto gate = gate_claim("ours reaches a capacity-valid peak", receipt_text(r));
  EXPECT_FALSE(gate.allowed);
  EXPECT_NE(gate.message.find("right_censored"), std::string::npos) << gate.message;
  EXPECT_NE(gate.message.find("declared batch capacity"), std::string::npos) << gate.message;
}

TEST(SweepEvaluate, PointsAboveCapacityAreInvalidButSaturationIsStillNamed) {
  auto r = scaling_sweep(8, {1, 2, 4, 8, 16});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(at(r, 16).status, "invalid");
  EXPECT_EQ(at(r, 16).reason_code, "capacity_exceeded");
  EXPECT_EQ(at(r, 8).status, "valid");
  const auto& t = r.tracks[0];
  EXPECT_EQ(t.status, "invalid");
  EXPECT_EQ(t.peak_status, "invalid");
  EXPECT_EQ(t.sla_reason, "identity, capacity, or measurement invalidity prevents a sweep claim");
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(t.envelope_digest, "");  // as fak: a hard invalidity comes before the envelope
  EXPECT_EQ(receipt_text(r).find("envelope_digest"), std::string::npos);
  EXPECT_EQ(t.saturation.status, "measured");
  EXPECT_EQ(t.saturation.knee, 8);
  EXPECT_EQ(t.saturation.saturated_at, 16);
  EXPECT_EQ(t.saturation.signals.at(0).signal, "throughput_plateau");
}

TEST(SweepEvaluate, AGrowingServerQueueNamesSaturationButAOneStepWaitDoesNot) {
  auto r = scaling_sweep(16, {1, 2, 4, 8});
  r.contracts[0].batch_capacity = 4;
  for (auto& p : r.points) p.tracks[0].batch_capacity = 4;
  auto server = [](double mean, double max, double running) {
    return boost::json::object{
        {"waiting_capacity_mean", mean}, {"waiting_capacity_max", max}, {"running_max", running}};
  };
  r.points[0].tracks[0].evidence.server = server(0, 0, 1);
  r.points[1].tracks[0].evidence.server = server(1.5, 2, 2);  // arrivals waiting for a step, batch not full
  (*r.points[1].tracks[0].evidence.server)["kv_usage_peak"] = 0.5;
  r.points[2].tracks[0].evidence.server = server(3.5, 6, 4);
  r.points[3].tracks[0].evidence.server = server(7, 9, 4);
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto& sat = r.tracks[0].saturation;
  EXPECT_EQ(sat.knee, 2);
  EXPECT_EQ(sat.saturated_at, 4);
  EXPECT_EQ(sat.signals.at(0).signal, "server_queue_capacity");
  // A KV cache at its limit is a full batch too, whatever the running count.
  (*r.points[1].tracks[0].evidence.server)["kv_usage_peak"] = 1.0;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks[0].saturation.saturated_at, 2);
}

// Issue 20: with speculative decoding, TPOT depends on acceptance; acceptance that moves across
// points by 10 points or more is said, and the markdown carries the per-point table.
TEST(SweepEvaluate, AcceptanceThatMovesAcrossPointsIsAWarning) {
  auto r = scaling_sweep(16, {1, 2, 4, 8});
  const double rates[] = {0.70, 0.68, 0.62, 0.55};
  for (std::size_t i = 0; i < r.points.size(); ++i) {
    r.points[i].tracks[0].evidence.server =
        boost::json::object{{"spec_acceptance_rate", rates[i]}, {"spec_mean_accepted_length", 1 + 3 * rates[i]}};
  }
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto warned = [&] {
    return std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
      return w.find("speculative decoding accepted 55.0% to 70.0%") != std::string::npos;
    });
  };
  EXPECT_TRUE(warned());
  const std::string md = sweep_markdown(r);
  EXPECT_NE(md.find("## Speculative decoding"), std::string::npos);
  EXPECT_NE(md.find("| 8 | ours | 55.0% | 2.65 |"), std::string::npos) << md;
  (*r.points[3].tracks[0].evidence.server)["spec_acceptance_rate"] = 0.65;  // spread 5 points
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_FALSE(warned());
  for (auto& p : r.points) p.tracks[0].evidence.server.reset();  // no speculation: no section
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(sweep_markdown(r).find("Speculative decoding"), std::string::npos);
}

TEST(SweepEvaluate, SlaKneeAndP99Boundary) {
  auto r = scaling_sweep(8, {1, 2, 4, 8});
  r.sla.ttft_p99_ms = 55;  // 51, 52, 54 pass; 58 fails
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const auto& t = r.tracks[0];
  ASSERT_TRUE(t.sla_knee);
  EXPECT_EQ(t.sla_knee->coordinate, 4);
  EXPECT_EQ(t.sla_status, "measured");
  EXPECT_EQ(t.p99_boundary.status, "measured");
  EXPECT_EQ(t.p99_boundary.coordinate, 4);
  EXPECT_EQ(t.p99_boundary.first_failing, 8);
  EXPECT_EQ(t.p99_boundary.confidence, "robust");  // identical samples: a zero-width interval

  r.sla.ttft_p99_ms = 10;  // nothing passes
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks[0].sla_status, "not_identifiable");
  EXPECT_EQ(r.tracks[0].sla_reason, "no measured point satisfies every declared constraint");
  EXPECT_EQ(r.tracks[0].p99_boundary.status, "not_identifiable");
  const auto gate = gate_claim("ours SLA knee at 4", receipt_text(r));
  EXPECT_FALSE(gate.allowed);
  EXPECT_NE(gate.message.find("SLA-knee claim for ours refused"), std::string::npos) << gate.message;
}

// Against the real llama-server (one slot, `--timeout 1s`, a 800 ms TTFT budget): at concurrency 4
// half the requests timed out before their first token, the other half's TTFT p99 was within the
// budget, and the boundary was written right-censored at 4, "robust". A failed request meets no
// budget: the point's p99 request is a failed one, so 4 is where the budget fails.
TEST(SweepEvaluate, RequestsThatFailedAtAPointCountAgainstItsP99Budget) {
  auto with_timeouts = [](int failed, double capacity) {
    auto r = scaling_sweep(static_cast<std::int64_t>(capacity), {1, 2, 4});
    r.sla.ttft_p99_ms = 200;  // every successful request meets it
    auto& tp = r.points[2].tracks[0];
    for (int i = 0; i < failed; ++i) {
      auto& s = tp.samples[static_cast<std::size_t>(i)];
      s = loadgen::Sample{};
      s.id = "r" + std::to_string(i);
      s.ok = false;
      s.error = "header: no complete response within the timeout (1 s)";
      s.error_class = "timeout";
      s.end_to_end_ms = 1000;
    }
    FoldOptions fo;
    fo.slo_ms = 2000;
    tp.stats = fold_samples(tp.samples, fo);
    tp.evidence.errors_by_class = errors_by_class(tp.samples);
    EXPECT_TRUE(evaluate_sweep(r).ok());
    return r;
  };
  // Above the declared capacity (2): invalid for capacity, its latency read as before, and now its
  // failures with it.
  auto over = with_timeouts(2, 2);
  EXPECT_EQ(at(over, 4).reason_code, "capacity_exceeded");
  EXPECT_EQ(over.tracks[0].p99_boundary.status, "measured");
  EXPECT_EQ(over.tracks[0].p99_boundary.coordinate, 2);
  EXPECT_EQ(over.tracks[0].p99_boundary.first_failing, 4);
  // Within capacity: the point is invalid for its failures (measurement_incomplete), which used to
  // take it out of the boundary's reading altogether, leaving "every tested point passes".
  auto within = with_timeouts(2, 16);
  EXPECT_EQ(at(within, 4).reason_code, "measurement_incomplete");
  EXPECT_EQ(within.tracks[0].p99_boundary.status, "measured");
  EXPECT_EQ(within.tracks[0].p99_boundary.first_failing, 4);
  EXPECT_NE(within.tracks[0].p99_boundary.rule.find("a failed request meeting no budget"), std::string::npos);
  // A receipt written under the earlier wording verifies where the boundary is the same.
  auto earlier = scaling_sweep(16, {1, 2, 4});
  earlier.sla.ttft_p99_ms = 200;
  ASSERT_TRUE(evaluate_sweep(earlier).ok());
  std::string text = receipt_text(earlier);
  const std::string now = kP99BoundaryRule;
  text.replace(text.find(now), now.size(), kP99BoundaryRuleBeforeFailures);
  const auto v = verify_sweep(text);
  EXPECT_TRUE(v.holds) << v.summary;
  ASSERT_FALSE(v.notes.empty());
  EXPECT_NE(v.notes.back().find("worded as before a failed request counted"), std::string::npos);
  // Under the earlier wording, the point with timeouts no longer re-derives: its boundary was wrong.
  std::string wrong = receipt_text(within);
  wrong.replace(wrong.find(now), now.size(), kP99BoundaryRuleBeforeFailures);
  const auto w = wrong.find(R"("status": "measured")", wrong.find("p99_boundary"));
  ASSERT_NE(w, std::string::npos);
  wrong.replace(w, std::string(R"("status": "measured")").size(), R"("status": "right_censored")");
  EXPECT_FALSE(verify_sweep(wrong).holds);
}

TEST(SweepEvaluate, AnUnmeasuredPointLeavesTheKneeAndTheBoundaryNotIdentifiable) {
  // fak (docs/FAK.md 6.8 step 5): every point must have the constrained metrics measured. Skipping
  // the point gave a right-censored knee beyond it, where the budget may already have failed.
  auto r = scaling_sweep(16, {1, 2, 4, 8});
  r.sla.ttft_p99_ms = 200;                              // every measured point passes
  r.points[1].tracks[0].measurement_status = "failed";  // concurrency 2 was not measured
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(at(r, 2).status, "not_measured");
  const auto& t = r.tracks[0];
  // fak's sweepcert: an unmeasured declared point leaves both findings not identifiable.
  EXPECT_EQ(t.peak_status, "not_identifiable");
  EXPECT_FALSE(t.peak);
  EXPECT_EQ(t.sla_status, "not_identifiable");
  EXPECT_EQ(t.sla_reason, "a declared point was not measured; transition remains an interval/unknown");
  EXPECT_FALSE(t.sla_knee);
  EXPECT_EQ(t.p99_boundary.status, "not_identifiable");
  EXPECT_EQ(t.p99_boundary.reason, "a constrained p99 is missing at 2");
  EXPECT_FALSE(gate_claim("ours SLA knee at 8", receipt_text(r)).allowed);

  // A point of the sweep where a second track has no result at all: the same for that track.
  auto two = scaling_sweep(16, {1, 2, 4, 8});
  two.sla.ttft_p99_ms = 200;
  two.contracts.push_back(two.contracts[0]);
  two.contracts[1].track = "vllm";
  for (std::size_t i = 0; i + 1 < two.points.size(); ++i) {  // not at 8
    auto copy = two.points[i].tracks[0];
    copy.track = "vllm";
    two.points[i].tracks.push_back(std::move(copy));
  }
  ASSERT_TRUE(evaluate_sweep(two).ok());
  ASSERT_EQ(two.tracks.size(), 2u);
  EXPECT_EQ(two.tracks[0].sla_status, "right_censored");  // complete: the knee at 8, below capacity 16
  EXPECT_EQ(two.tracks[1].sla_status, "not_identifiable");
  EXPECT_EQ(two.tracks[1].sla_reason, "missing declared sweep point");
  EXPECT_EQ(two.tracks[1].peak_status, "not_identifiable");
  EXPECT_EQ(two.tracks[1].p99_boundary.status, "not_identifiable");
}

struct CodeCase {
  const char* code;
  const char* status;
  std::function<void(SweepReceipt&)> spoil;
};

TEST(SweepEvaluate, EveryInvalidationCodeFiresOnItsCause) {
  const std::vector<CodeCase> cases = {
      {"contract_missing", "invalid", [](SweepReceipt& r) { r.points[1].tracks[0].track = "vllm"; }},
      {"workload_identity_mismatch", "invalid",
       [](SweepReceipt& r) { r.points[1].workload_digest = sha256_digest("x"); }},
      {"model_identity_mismatch", "invalid", [](SweepReceipt& r) { r.points[1].tracks[0].model = "other"; }},
      {"model_identity_mismatch", "invalid",
       [](SweepReceipt& r) { r.points[1].tracks[0].samples[0].response_model = "served-alias"; }},
      {"engine_identity_unknown", "invalid",
       [](SweepReceipt& r) { r.contracts[0].engine_receipt_digest = "rcpt_c3b5dc1b4e0f"; }},
      {"engine_identity_mismatch", "invalid", [](SweepReceipt& r) { r.points[1].tracks[0].engine = "sglang"; }},
      {"capacity_unknown", "invalid", [](SweepReceipt& r) { r.contracts[0].capacity_source.clear(); }},
      {"capacity_identity_mismatch", "invalid", [](SweepReceipt& r) { r.points[1].tracks[0].batch_capacity = 9; }},
      {"engine_restarted", "invalid",
       [](SweepReceipt& r) {
         r.points[1].tracks[0].evidence.server =
             boost::json::object{{"restarted", true}, {"reset_reason", "process start time changed"}};
       }},
      {"foreign_traffic", "invalid",
       [](SweepReceipt& r) {
         r.points[1].tracks[0].evidence.server = boost::json::object{{"requests_delta", 5}, {"requests_sent", 2}};
       }},
      {"client_saturated", "invalid",
       [](SweepReceipt& r) { r.points[1].tracks[0].evidence.generator->send_lateness_p99_ms = 3.5; }},
      {"measurement_incomplete", "invalid", [](SweepReceipt& r) { r.points[1].tracks[0].stats.failed = 1; }},
      {"measurement_missing", "not_measured",
       [](SweepReceipt& r) { r.points[1].tracks[0].measurement_status = "failed"; }},
      {"throughput_missing", "not_measured",
       [](SweepReceipt& r) { r.points[1].tracks[0].stats.throughput_tok_s = ScalarMetric{}; }},
  };
  for (const auto& c : cases) {
    auto r = scaling_sweep(8, {1, 2, 4, 8});
    c.spoil(r);
    ASSERT_TRUE(evaluate_sweep(r).ok()) << c.code;
    const auto& tp = r.points[1].tracks[0];
    EXPECT_EQ(tp.reason_code, c.code) << tp.reason;
    EXPECT_EQ(tp.status, c.status) << c.code;
    EXPECT_FALSE(tp.reason.empty());
    if (std::string(c.code) == "contract_missing") {
      EXPECT_EQ(r.tracks[0].peak_status, "not_identifiable");  // ours lost a declared point
    } else if (std::string(c.status) == "invalid") {
      EXPECT_EQ(r.tracks[0].status, "invalid") << c.code;
    } else {
      EXPECT_EQ(r.tracks[0].peak_status, "not_identifiable") << c.code;  // a declared point is missing
    }
    EXPECT_FALSE(r.valid) << c.code;
  }
}

TEST(SweepEvaluate, ReportLevelErrors) {
  auto r = scaling_sweep(8, {1, 2});
  r.points[1].coordinate = 1;
  EXPECT_FALSE(evaluate_sweep(r).ok());
  r = scaling_sweep(8, {1, 2});
  r.contracts.push_back(r.contracts[0]);
  EXPECT_FALSE(evaluate_sweep(r).ok());
  r = scaling_sweep(8, {1, 2});
  r.schema = "fak.serving-parity.v1";
  EXPECT_FALSE(evaluate_sweep(r).ok());
}

TEST(SweepEvaluate, FewerThanTwoValidPointsIsNotMeasured) {
  auto r = scaling_sweep(8, {1, 2});
  r.points[1].tracks[0].measurement_status = "failed";
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks[0].status, "not_measured");
  EXPECT_EQ(r.tracks[0].reason.rfind("fewer than two comparable valid points: ", 0), 0u) << r.tracks[0].reason;
  EXPECT_EQ(r.tracks[0].peak_status, "not_identifiable");
}

// Four requests sent at 0, 100, 200, 300 ms, each taking 150 ms with 10 tokens (the first at 10
// ms, the other nine evenly to 150 ms): the window is [0, 300] ms. Inside it the first two
// requests' 20 tokens came, and 1 + 9 x (300 - 210) / 140 of the third's, still running at the
// last send; the fourth's first token came at 310 ms. Receipts of the old rule counted only the
// two completed requests' tokens (the third's 6.8 lost), and are verified by it.
TEST(SweepFold, SteadyStateCountsTheTokensThatCameWhileLoadIsApplied) {
  std::vector<loadgen::Sample> s = samples(4, 10, 150, 10);
  for (int i = 0; i < 4; ++i) s[i].sent_offset_ms = s[i].scheduled_offset_ms = 100.0 * i;
  const auto o = steady_state_evidence(s);
  EXPECT_EQ(o.status, "measured");
  EXPECT_EQ(o.rule, kSteadyStateRule);
  EXPECT_EQ(o.completed_requests, 2);
  const double third = 1 + 9 * (300.0 - 210.0) / 140.0;
  EXPECT_EQ(o.output_tokens, std::llround(20 + third));
  EXPECT_DOUBLE_EQ(*o.throughput_tok_s, (20 + third) / 0.3);
  const auto old = steady_state_by_completions(s);
  EXPECT_EQ(old.rule, kSteadyStateRuleByCompletions);
  EXPECT_EQ(old.completed_requests, 2);
  EXPECT_DOUBLE_EQ(*old.throughput_tok_s, 20 / 0.3);
  // One request: no window.
  EXPECT_EQ(steady_state_evidence(samples(1, 10, 150, 10)).status, "not_measured");
  EXPECT_EQ(steady_state_by_completions(samples(1, 10, 150, 10)).status, "not_measured");
}

// A closed loop of 16 requests at once, 8 more as the first 8 end (a sweep of 24 requests at
// concurrency 16, whose steady tok/s read 131.7 against 352.1 over the whole point): 64 tokens
// each, the first at 100 ms, the first 16 ending at 1,000, 1,100, ... 2,500 ms, the later 8 sent
// as the first 8 end and taking 1,900 ms. Only 8 requests complete in the window (0 to 1,700 ms),
// but all 24 were generating in it: the rate is the tokens that came in it, counted here token by
// token, and the old rule's is under half of it.
TEST(SweepFold, SteadyStateOfAFewRequestsASlotIsTheRateTheyCameAt) {
  std::vector<loadgen::Sample> s = samples(24, 100, 1900, 64);
  for (int i = 0; i < 16; ++i) s[i].end_to_end_ms = 1000 + 100.0 * i;
  for (int i = 16; i < 24; ++i) s[i].sent_offset_ms = s[i].scheduled_offset_ms = s[i - 16].end_to_end_ms;
  const double from = 0, to = 1700;
  double came = 0;  // token by token: the first at its TTFT, the 63 others evenly to the end
  for (const auto& x : s) {
    const double first = x.sent_offset_ms + 100, end = x.sent_offset_ms + x.end_to_end_ms;
    for (int k = 0; k < 64; ++k) {
      const double at = first + (end - first) * k / 63.0;
      came += at >= from && at <= to;
    }
  }
  const auto o = steady_state_evidence(s);
  ASSERT_EQ(o.status, "measured");
  EXPECT_EQ(o.completed_requests, 8);
  EXPECT_NEAR(*o.throughput_tok_s, came / 1.7, 0.02 * came / 1.7);
  EXPECT_LT(*steady_state_by_completions(s).throughput_tok_s, 0.55 * *o.throughput_tok_s);  // 301 against 588
}

TEST(SweepGate, ParityClaimsNeedTheThreeTracks) {
  const std::string parity = R"({"schema":"fak.serving-parity.v1","tracks":[
    {"track":"vllm","status":"measured","stats":{"ok":3}},
    {"track":"sglang","status":"not_measured","stats":{"ok":0}}]})";
  const auto g = gate_claim("We reach parity with vLLM", parity);
  EXPECT_FALSE(g.allowed);
  EXPECT_NE(g.message.find("sglang"), std::string::npos);
  EXPECT_TRUE(gate_claim("nothing to see", parity).allowed);
}

}  // namespace
}  // namespace mpo::sweep

namespace mpo::sweep {
namespace {

// The points table says how long the prompts and outputs were as the server counted them: asked
// for 100 approximate tokens, llama.cpp's vocabulary made 286 of them (thirty-ninth session).
TEST(SweepMarkdown, ThePointsTableSaysTheTokensTheServerCounted) {
  auto r = fixtures::scaling_sweep(8, {1, 2});
  TokenEvidence t;
  t.requests = 8;
  t.input_min = 282, t.input_p50 = 286, t.input_max = 300;
  t.output_min = t.output_p50 = t.output_max = 400;
  r.points[0].tracks[0].evidence.tokens = t;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const std::string md = sweep_markdown(r);
  EXPECT_NE(md.find("| failed | tokens in / out p50 | tok/s |"), std::string::npos) << md;
  EXPECT_NE(md.find(" | 286 / 400 | "), std::string::npos) << md;
  // A point whose requests gave no usage says so, not a zero.
  const auto second = md.find("\n| 2 | ");
  ASSERT_NE(second, std::string::npos) << md;
  EXPECT_NE(md.find(" | n/a | ", second), std::string::npos) << md;
}

// The goodput column says the budget it was counted within (a goodput of 0 beside requests that
// all succeeded is their end-to-end time past --slo, not a fault), and nothing where none was set.
TEST(SweepMarkdown, GoodputSaysTheBudgetItWasCountedWithin) {
  auto r = fixtures::scaling_sweep(8, {1, 2});
  for (auto& p : r.points) p.tracks[0].stats.goodput_slo_seconds = 2.0;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  const std::string sentence =
      " Goodput: the successful requests a second that ended within 2000 ms of being sent (--slo).";
  EXPECT_NE(sweep_markdown(r).find(sentence), std::string::npos) << sweep_markdown(r);
  EXPECT_NE(sweep_html(r).find("ended within 2000 ms of being sent"), std::string::npos);
  for (auto& p : r.points) p.tracks[0].stats.goodput_slo_seconds.reset();
  EXPECT_EQ(sweep_markdown(r).find("Goodput:"), std::string::npos);
}

// The steady tok/s column says which rule counted it: the receipt's own (an old receipt's by the
// requests completed in the window, a new one's by the tokens that came in it).
TEST(SweepMarkdown, TheSteadyColumnSaysTheRuleItWasCountedBy) {
  for (const bool old_rule : {false, true}) {
    auto r = fixtures::scaling_sweep(8, {1, 2});
    auto s = samples(4, 10, 150, 10);
    for (int i = 0; i < 4; ++i) s[i].sent_offset_ms = 100.0 * i;
    r.points[0].tracks[0].evidence.steady_state = old_rule ? steady_state_by_completions(s) : steady_state_evidence(s);
    ASSERT_TRUE(evaluate_sweep(r).ok());
    const std::string md = sweep_markdown(r);
    EXPECT_NE(md.find(fmt::format(" Steady tok/s: {}.", old_rule ? kSteadyStateRuleByCompletions : kSteadyStateRule)),
              std::string::npos)
        << md;
    EXPECT_NE(sweep_html(r).find(std::string(old_rule ? kSteadyStateRuleByCompletions : kSteadyStateRule)),
              std::string::npos);
  }
}

// The capacity the points are judged against is said with where it came from, and an unknown one
// says how to declare it (a reader of the summary should not need the receipt's JSON for it).
TEST(SweepMarkdown, TheTrackSaysItsBatchCapacityAndItsSource) {
  auto r = fixtures::scaling_sweep(2, {1, 2});
  r.contracts[0].capacity_source = "llama.cpp b10309-82bb485 GET /props total_slots";
  for (auto& p : r.points) p.tracks[0].capacity_source = r.contracts[0].capacity_source;
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_NE(sweep_markdown(r).find("- **batch capacity**: 2 (llama.cpp b10309-82bb485 GET /props total_slots)\n"),
            std::string::npos)
      << sweep_markdown(r);
  EXPECT_NE(sweep_html(r).find("llama.cpp b10309-82bb485 GET /props total_slots"), std::string::npos);
  auto unknown = fixtures::scaling_sweep(0, {1, 2});
  ASSERT_TRUE(evaluate_sweep(unknown).ok());
  EXPECT_NE(sweep_markdown(unknown).find("- **batch capacity**: unknown (declare it: --batch-capacity N"),
            std::string::npos);
}

// A sweep past the batch capacity (the usual way to find saturation) leaves the track without a
// claim by fak's capacity rule; the summary still says what the points within it show, that it is
// not a claim, and the concurrencies that would give one. Only where capacity is what stands in
// the way.
TEST(SweepMarkdown, ASweepPastTheCapacitySaysWhatThePointsWithinItShow) {
  auto r = fixtures::scaling_sweep(4, {1, 2, 4, 8, 16});
  ASSERT_TRUE(evaluate_sweep(r).ok());
  EXPECT_EQ(r.tracks[0].peak_status, "invalid");
  const std::string md = sweep_markdown(r);
  EXPECT_NE(md.find("- **within capacity**: 370.4 tok/s at concurrency 4 is the highest of the valid points 1,2,4 (not "
                    "a claim: the points above the batch capacity 4 measure the server's queue"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("sweep within it: --concurrencies 1,2,4)"), std::string::npos) << md;
  EXPECT_NE(sweep_html(r).find("within capacity"), std::string::npos);

  // Within capacity: a claim of its own, nothing to add.
  auto within = fixtures::scaling_sweep(4, {1, 2, 4});
  ASSERT_TRUE(evaluate_sweep(within).ok());
  EXPECT_EQ(sweep_markdown(within).find("within capacity"), std::string::npos);
  // One valid point within capacity is no curve.
  auto one = fixtures::scaling_sweep(1, {1, 2, 4});
  ASSERT_TRUE(evaluate_sweep(one).ok());
  EXPECT_EQ(sweep_markdown(one).find("within capacity"), std::string::npos) << sweep_markdown(one);
  // Another hard invalidity (a model that is not the contract's) leaves it unsaid.
  auto other = fixtures::scaling_sweep(4, {1, 2, 4, 8});
  other.points[1].tracks[0].model = "another-model";
  ASSERT_TRUE(evaluate_sweep(other).ok());
  EXPECT_EQ(sweep_markdown(other).find("within capacity"), std::string::npos) << sweep_markdown(other);
}

}  // namespace
}  // namespace mpo::sweep
