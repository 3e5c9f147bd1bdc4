// The typed parts of a sweep receipt: fak's ServingStats (written in fak's order, read back
// unchanged, lenient on what fak's receipts leave out, strict on a member of the wrong type) and
// our per-point evidence block.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/go_json.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/fold.hpp"
#include "sweep/point_evidence.hpp"
#include "sweep/receipt.hpp"
#include "sweep/receipt_fixtures.hpp"
#include "sweep/render.hpp"
#include "sweep/serving_stats.hpp"

namespace mpo::sweep {
namespace {

std::vector<std::string> keys(const boost::json::object& o) {
  std::vector<std::string> k;
  for (const auto& [key, v] : o) k.emplace_back(key);
  return k;
}

TEST(ServingStats, FoldedStatsAreWrittenInFaksOrderAndReadBackUnchanged) {
  FoldOptions fo;
  fo.slo_ms = 2000;
  fo.prefix_cache_hit_rate = ScalarMetric::of(0.5, "ratio");
  fo.prefix_cache_hit_rate->source = "prefix-cache counter deltas";
  const ServingStats folded = fold_samples(fixtures::samples(8, 40, 900, 12), fo);
  const auto written = stats_json(folded);
  EXPECT_EQ(keys(written),
            (std::vector<std::string>{"requests", "ok", "failed", "ttft_ms", "itl_ms", "tpot_ms", "end_to_end_ms",
                                      "throughput_tok_s", "goodput_rps", "goodput_tok_s", "prefix_cache_hit_rate",
                                      "token_count_basis", "wall_seconds", "goodput_slo_seconds",
                                      "successful_output_tokens_exact", "slo_successful_output_tokens_exact",
                                      "observed_max_in_flight", "observed_in_flight_basis"}));
  EXPECT_EQ(keys(written.at("ttft_ms").as_object()),
            (std::vector<std::string>{"status", "unit", "p50", "p90", "p95", "p99"}));
  EXPECT_EQ(keys(written.at("prefix_cache_hit_rate").as_object()),
            (std::vector<std::string>{"status", "unit", "value", "source"}));
  auto read = parse_serving_stats(written);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(go_marshal_indent(stats_json(*read)), go_marshal_indent(written));
  EXPECT_EQ(read->ok, 8);
  EXPECT_DOUBLE_EQ(*read->ttft_ms.p99, 40);
  EXPECT_EQ(read->observed_max_in_flight, 8);
}

// Answers that began with a tool call (a multi-turn workload's tools, a model that calls them first)
// date no first token: their TTFT is left out of the point's, counted, and the sample keeps what
// its first event carried (REPORT.md "Tool calls first").
TEST(ServingStats, AnswersThatBeganWithAToolCallAreLeftOutOfTtftAndCounted) {
  FoldOptions fo;
  auto samples = fixtures::samples(8, 40, 900, 12);
  for (int i = 0; i < 3; ++i) {
    samples[static_cast<std::size_t>(i)].ttft_ms = 700;  // the call's head after its name's tokens
    samples[static_cast<std::size_t>(i)].first_output = "tool_calls";
  }
  const ServingStats folded = fold_samples(samples, fo);
  EXPECT_EQ(folded.tool_call_first, 3);
  EXPECT_DOUBLE_EQ(*folded.ttft_ms.p99, 40);  // not 700
  const auto written = stats_json(folded);
  EXPECT_EQ(written.at("tool_call_first"), 3);
  auto read = parse_serving_stats(written);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->tool_call_first, 3);
  const auto sample = loadgen::sample_from_json(loadgen::sample_json(samples[0]));
  ASSERT_TRUE(sample);
  EXPECT_EQ(sample->first_output, "tool_calls");
  EXPECT_FALSE(loadgen::first_token_ms(*sample).has_value());
  EXPECT_EQ(sample->ttft_ms, 700);  // fak's ttft_ms as the client saw it stays in the sample

  for (auto& s : samples) s.first_output = "tool_calls";
  const ServingStats all = fold_samples(samples, fo);
  EXPECT_FALSE(all.ttft_ms.measured());
  EXPECT_EQ(all.ttft_ms.reason, "every answer began with a tool call: no first token dated");
  // Without any, the member is not written: receipts stay as they were.
  EXPECT_FALSE(stats_json(fold_samples(fixtures::samples(8, 40, 900, 12), fo)).contains("tool_call_first"));
}

// Answers that ended without any output although the server counted their tokens (a tool call cut
// before its name: llama.cpp b10309 streams nothing of it) have no first token: counted beside TTFT,
// which is over the others, and the summary says both.
TEST(ServingStats, AnswersThatEndedWithoutOutputAreCountedBesideTtft) {
  FoldOptions fo;
  auto samples = fixtures::samples(8, 40, 900, 12);
  for (int i = 0; i < 2; ++i) {
    auto& s = samples[static_cast<std::size_t>(i)];
    s.ttft_ms.reset();
    s.itl_ms.clear();
    s.tpot_ms.reset();
    s.output_events = 0;
  }
  const ServingStats folded = fold_samples(samples, fo);
  EXPECT_EQ(folded.no_output, 2);
  EXPECT_FALSE(folded.tool_call_first.has_value());
  const auto written = stats_json(folded);
  EXPECT_EQ(written.at("no_output"), 2);
  auto read = parse_serving_stats(written);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->no_output, 2);
  EXPECT_FALSE(stats_json(fold_samples(fixtures::samples(8, 40, 900, 12), fo)).contains("no_output"));

  SweepReceipt r = fixtures::base(8);
  fixtures::add_point(r, 4, 40, 900);
  r.points[0].tracks[0].stats.no_output = 2;
  r.points[0].tracks[0].stats.tool_call_first = 3;
  const std::string md = sweep_markdown(r);
  EXPECT_NE(md.find("began with a tool call (their first event waited for the tokens the engine holds back before a "
                    "call's name): 3 of "),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("ended without any output although the server counted tokens for them (a tool call cut before "
                    "its name, unstreamed reasoning): 2 of "),
            std::string::npos)
      << md;
}

TEST(ServingStats, WhatAFakReceiptLeavesOutStaysOutAndWhatWeDoNotKnowIsKept) {
  // Invented: a stats block as an older or newer fak writer might give it (no optional members, a
  // member this struct does not name).
  const auto o = boost::json::parse(R"({"requests":2,"ok":2,"failed":0,
    "ttft_ms":{"status":"not_measured","reason":"no streaming first-token measurements"},
    "throughput_tok_s":{"status":"measured","unit":"stream_content_events/s","value":12.5},
    "token_count_basis":"stream_content_events","fleet_shard":"b"})")
                     .as_object();
  auto s = parse_serving_stats(o);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->ttft_ms.measured());
  EXPECT_EQ(s->throughput_tok_s.measured_value(), 12.5);
  EXPECT_FALSE(s->wall_seconds);
  EXPECT_FALSE(s->observed_max_in_flight);
  const auto again = stats_json(*s);
  EXPECT_EQ(again.at("fleet_shard"), "b");
  EXPECT_FALSE(again.contains("wall_seconds"));
  EXPECT_EQ(again.at("ttft_ms").at("reason"), "no streaming first-token measurements");
}

TEST(ServingStats, AMemberOfTheWrongTypeIsNamed) {
  auto bad = parse_serving_stats(boost::json::parse(R"({"ok":"4"})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "stats.ok is not an integer");
  bad = parse_serving_stats(boost::json::parse(R"({"itl_ms":{"status":"measured","p99":"slow"}})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "stats.itl_ms.p99 is not a number");
  bad = parse_serving_stats(boost::json::parse(R"({"goodput_rps":[1]})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "stats.goodput_rps is not an object");
}

// The evidence block of a point: every member read back as written, the engine's own keys in
// `server` untouched, unknown members kept, a wrong type named.
TEST(PointEvidence, EveryMemberIsReadBackAsWritten) {
  const auto r = fixtures::scaling_sweep(8, {1, 2});
  PointEvidence e = r.points[1].tracks[0].evidence;
  e.server = boost::json::object{{"requests_delta", 2}, {"kv_usage_peak", 0.5}, {"vllm:new_thing", "x"}};
  e.energy = boost::json::object{{"status", "measured"}, {"joules", 12.5}};
  e.cache->reset = CacheReset{"failed", std::nullopt, "404 on /reset_prefix_cache"};
  const auto written = evidence_json(e);
  EXPECT_EQ(keys(written), (std::vector<std::string>{"load", "generator", "confidence", "errors_by_class",
                                                     "steady_state", "server", "energy", "cache"}));
  EXPECT_EQ(written.at("load").at("concurrency"), 2);  // an integer, as the runner always wrote it
  auto read = parse_point_evidence(written);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(go_marshal_indent(evidence_json(*read)), go_marshal_indent(written));
  EXPECT_EQ(read->server_number("kv_usage_peak"), 0.5);
  EXPECT_FALSE(read->server_number("vllm:new_thing"));
  EXPECT_EQ(read->cache->reset->error, "404 on /reset_prefix_cache");
  ASSERT_TRUE(read->confidence->ttft_p99_ms);
  EXPECT_EQ(read->confidence->seed, 42u);

  auto with_unknown = written;
  with_unknown["gpu_clock"] = boost::json::object{{"mhz", 1980}};
  read = parse_point_evidence(with_unknown);
  ASSERT_TRUE(read);
  EXPECT_EQ(evidence_json(*read).at("gpu_clock").at("mhz"), 1980);
}

TEST(PointEvidence, AMemberOfTheWrongTypeIsNamed) {
  auto bad = parse_point_evidence(boost::json::parse(R"({"generator":{"send_lateness_p99_ms":"late"}})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "evidence.generator.send_lateness_p99_ms is not a number");
  bad = parse_point_evidence(boost::json::parse(R"({"cache":{"carryover":"yes"}})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "evidence.cache.carryover is not true or false");
  bad = parse_point_evidence(boost::json::parse(R"({"errors_by_class":{"timeout":1.5}})").as_object());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "evidence.errors_by_class.timeout is not an integer");
}

// The run's settings: what a receipt has is read back and written again, what it lacks (an older
// writer's) stays absent, members we do not name are kept.
TEST(SweepLoad, WhatAReceiptStatesOfItsSettingsIsWhatItStatesAgain) {
  auto r = fixtures::scaling_sweep(8, {1, 2});
  r.load->observed_engine_identity = EngineIdentity{{"m1", "m2"}, "vllm", "vllm", "host:1"};
  auto doc = receipt_json(r);
  doc.at("load").as_object()["scheduler"] = "fifo";
  EXPECT_EQ(keys(doc.at("load").as_object()),
            (std::vector<std::string>{"mode", "slo_ms", "observed_engine_identity", "scheduler"}));
  auto read = parse_sweep_receipt(go_marshal_indent(doc));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->load->slo_ms, 2000);
  EXPECT_EQ(read->load->observed_engine_identity->models, (std::vector<std::string>{"m1", "m2"}));
  EXPECT_EQ(go_marshal_indent(receipt_json(*read).at("load")), go_marshal_indent(doc.at("load")));
  doc.at("load").as_object()["seed"] = "one";
  read = parse_sweep_receipt(go_marshal_indent(doc));
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "load.seed is not an unsigned integer");
}

// A track's p99 boundary and saturation: written as the evaluation left them (an unset string left
// out, signals listed whenever a rule ran), read back the same, a member of the wrong type refused
// by its path.
TEST(SweepFindings, TheBoundaryAndSaturationAreReadAsWrittenAndAWrongTypeIsNamed) {
  auto r = fixtures::scaling_sweep(8, {1, 2});
  ASSERT_TRUE(evaluate_sweep(r));
  ASSERT_FALSE(r.tracks.empty());
  auto& t = r.tracks.front();
  t.p99_boundary = P99Boundary{"p99 rule", "measured", 1.0, 1.0, "", 2.0, "robust", ""};
  t.saturation = Saturation{"sat rule", "measured", "", 1.0, 2.0, {{"throughput_plateau", 2.0, "gain -14%"}}};
  auto doc = receipt_json(r);
  auto& track = doc.at("tracks").as_array().at(0).as_object();
  EXPECT_EQ(keys(track.at("p99_boundary").as_object()),
            (std::vector<std::string>{"rule", "status", "coordinate", "last_passing", "first_failing", "confidence"}));
  EXPECT_EQ(keys(track.at("saturation").as_object()),
            (std::vector<std::string>{"rule", "status", "knee", "saturated_at", "signals"}));
  auto read = parse_sweep_receipt(go_marshal_indent(doc));
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->tracks.front().p99_boundary.first_failing, 2.0);
  EXPECT_EQ(read->tracks.front().saturation.signals.at(0).detail, "gain -14%");
  EXPECT_EQ(go_marshal_indent(receipt_json(*read)), go_marshal_indent(doc));
  // No signal fired: the list is still there, empty; no rule (a fak receipt): no list at all.
  t.saturation.signals.clear();
  EXPECT_TRUE(receipt_json(r).at("tracks").at(0).at("saturation").as_object().contains("signals"));
  t.saturation = Saturation{};
  EXPECT_TRUE(receipt_json(r).at("tracks").at(0).at("saturation").as_object().empty());
  track.at("p99_boundary").as_object()["coordinate"] = "one";
  read = parse_sweep_receipt(go_marshal_indent(doc));
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "tracks[0].p99_boundary.coordinate is not a number");
  track.at("p99_boundary").as_object()["coordinate"] = 1.0;
  track.at("saturation").as_object()["signals"] = boost::json::array{1};
  read = parse_sweep_receipt(go_marshal_indent(doc));
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message, "tracks[0].saturation.signals[0] is not an object");
}

}  // namespace
}  // namespace mpo::sweep
