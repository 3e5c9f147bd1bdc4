// Snapshot records and the facts report, without sockets: bodies from the real captures.
#include "scrape/snapshot.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>

#include "scrape/facts_report.hpp"
#include "scrape/snapshot_reader.hpp"
#include "support/fixtures.hpp"

namespace mpo::scrape {
namespace {

namespace json = boost::json;

Snapshot snapshot(std::uint64_t seq, std::string_view body, std::int64_t at_us,
                  std::string source = "http://e:8000/metrics") {
  Snapshot s;
  s.seq = seq;
  s.source = std::move(source);
  s.scheduled_at_us = s.started_at_us = at_us;
  s.ended_at_us = at_us + 1500;
  s.http_status = 200;
  absorb_body(s, body);
  return s;
}

TEST(Snapshot, JsonLineCarriesIdentityAndSignals) {
  const std::string body = test::read_fixture("vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom");
  const Snapshot s = snapshot(1, body, 1'767'225'600'000'000);
  const auto doc = json::parse(snapshot_json_line(s)).as_object();
  EXPECT_EQ(doc.at("schema"), "modelperfobs.scrape.v1");
  EXPECT_EQ(doc.at("status"), "ok");
  EXPECT_EQ(doc.at("scrape_started_at"), "2026-01-01T00:00:00.000000Z");
  EXPECT_EQ(doc.at("scrape_ended_at"), "2026-01-01T00:00:00.001500Z");
  EXPECT_EQ(doc.at("bytes").to_number<std::uint64_t>(), body.size());
  EXPECT_EQ(doc.at("format"), "text-0.0.4");
  const auto& server = doc.at("server").as_object();
  EXPECT_EQ(server.at("engine"), "vllm");
  EXPECT_EQ(server.at("generation"), "v1");
  EXPECT_EQ(server.at("models").as_array().at(0), "qwen2.5-1.5b");
  EXPECT_EQ(server.at("process_start_time_s").to_number<double>(), 1.78990180866e+09);
  EXPECT_EQ(server.at("instance_id"), "http://e:8000/metrics|vllm-v1|qwen2.5-1.5b|1789901808.66");
  const auto& signals = doc.at("signals").as_object();
  EXPECT_EQ(signals.at("waiting_capacity").as_object().at("source"),
            "vllm:num_requests_waiting_by_reason{reason=\"capacity\"}");
  const auto& ttft = signals.at("ttft_seconds").as_object();
  EXPECT_EQ(ttft.at("count").to_number<double>(), 10.0);
  EXPECT_EQ(ttft.at("buckets").as_array().back().as_array().at(0), "+Inf");
  EXPECT_EQ(doc.at("cache_config").as_object().at("num_gpu_blocks"), "20184");
}

TEST(Snapshot, AParseErrorIsRecordedWithItsPosition) {
  const Snapshot s = snapshot(1, "vllm:num_requests_waiting{x=\"1\" 3\n", 0);
  EXPECT_EQ(s.status, ScrapeStatus::kParseError);
  const auto doc = json::parse(snapshot_json_line(s)).as_object();
  EXPECT_EQ(doc.at("status"), "parse_error");
  EXPECT_EQ(std::string(doc.at("error").as_string()).rfind("line 1, column", 0), 0u);
  EXPECT_FALSE(doc.contains("signals"));
}

TEST(Snapshot, HistogramProblemsTravelWithTheSnapshot) {
  const Snapshot s = snapshot(1,
                              "# TYPE vllm:time_to_first_token_seconds histogram\n"
                              "vllm:time_to_first_token_seconds_bucket{le=\"1\"} 5\n"
                              "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 4\n"
                              "vllm:time_to_first_token_seconds_count 4\n",
                              0);
  EXPECT_EQ(s.status, ScrapeStatus::kOk);
  const auto doc = json::parse(snapshot_json_line(s)).as_object();
  const auto& problem = doc.at("parse_problems").as_array().at(0).as_object();
  EXPECT_EQ(problem.at("line").to_number<int>(), 3);
  EXPECT_TRUE(doc.at("signals").as_object().at("ttft_seconds").as_object().contains("invalid"));
  const FactsReport r = build_facts_report(std::vector<Snapshot>{s});
  const engines::Fact* ttft = engines::find_fact(r.facts, "ttft_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->status, engines::FactStatus::kUnavailable);  // an inconsistent histogram gives no number
}

TEST(FactsReport, FailedAndStaleScrapesAreCountedAndTheWindowSpansTheGoodOnes) {
  const std::string body = test::read_fixture("vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom");
  std::vector<Snapshot> snaps;
  snaps.push_back(snapshot(1, body, 1'000'000));
  Snapshot failed;
  failed.seq = 2;
  failed.status = ScrapeStatus::kTimeout;
  failed.error = "no answer within 5 s";
  snaps.push_back(failed);
  snaps.push_back(snapshot(3, body, 5'000'000));
  snaps.back().status = ScrapeStatus::kStale;
  const FactsReport r = build_facts_report(snaps);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.stale, 1u);
  ASSERT_TRUE(r.window_seconds.has_value());
  EXPECT_EQ(*r.window_seconds, 4.0);
  EXPECT_EQ(r.window, "4.0 s between scrapes 1 and 3");
  // Identical bodies: nothing happened in the window.
  EXPECT_EQ(engines::find_fact(r.facts, "tokens")->value("generation_tokens")->value, 0.0);
  const std::string md = facts_markdown(r);
  EXPECT_NE(md.find("scrape 2: timeout: no answer within 5 s"), std::string::npos) << md;
  const auto doc = json::parse(facts_json(r, "test")).as_object();
  EXPECT_TRUE(doc.at("validity").as_object().at("valid").as_bool());
}

// Issue 37: over a run in which 4 requests waited and 4 ran for 15 s, then nothing, the last
// scrape alone said "0 waiting, 0 running". The window's gauges are stated over every scrape.
TEST(FactsReport, QueueGaugesAreStatedOverTheWholeWindowNotTheLastScrape) {
  const std::string base = test::read_fixture("llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom");
  auto page = [&](int waiting, int running) {
    std::string b = base;
    b.replace(b.find("llamacpp:requests_deferred 0"), 28, fmt::format("llamacpp:requests_deferred {}", waiting));
    b.replace(b.find("llamacpp:requests_processing 0"), 30, fmt::format("llamacpp:requests_processing {}", running));
    return b;
  };
  std::vector<Snapshot> snaps;
  snaps.push_back(snapshot(1, page(0, 0), 0));
  for (int i = 0; i < 15; ++i) snaps.push_back(snapshot(2 + i, page(4, 4), 1'000'000 * (1 + i)));
  snaps.push_back(snapshot(17, page(0, 0), 16'000'000));
  snaps.push_back(snapshot(18, page(0, 0), 20'000'000));
  const FactsReport r = build_facts_report(snaps);
  const engines::Fact* w = engines::find_fact(r.facts, "gauges_over_window");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->value("waiting_max")->value, 4.0);
  EXPECT_DOUBLE_EQ(w->value("waiting_share_above_zero")->value, 15.0 / 20.0);
  EXPECT_DOUBLE_EQ(w->value("waiting_mean")->value, 4.0 * 15.0 / 20.0);
  EXPECT_EQ(w->value("running_max")->value, 4.0);
  const std::string md = facts_markdown(r);
  EXPECT_NE(md.find("requests waiting: max 4, time-weighted mean 3, above zero 75% of the time"), std::string::npos)
      << md;
  // What the last scrape says is labelled as such.
  EXPECT_NE(md.find("At the last scrape (18)"), std::string::npos) << md;
  const auto gauges = gauges_over_window(snaps, snaps.front(), snaps.back());
  ASSERT_FALSE(gauges.empty());
  EXPECT_EQ(gauges.front().samples, 18u);
}

TEST(FactsReport, AnotherServerIsNotAnInterval) {
  const std::string v1 = test::read_fixture("vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom");
  const std::string sg = test::read_fixture("sglang/sglang_v0.5.10.post1_datadog-fixture_opt-125m.prom");
  std::vector<Snapshot> snaps{snapshot(1, v1, 0), snapshot(2, sg, 1'000'000)};
  const FactsReport r = build_facts_report(snaps);
  EXPECT_NE(r.reset.find("another server instance"), std::string::npos);
  EXPECT_FALSE(r.window_seconds.has_value());
  const auto doc = json::parse(facts_json(r, "test")).as_object();
  EXPECT_FALSE(doc.at("validity").as_object().at("valid").as_bool());
}

// A restart inside the window: the counters began again from zero and grew past where the first
// scrape saw them, so the first and last scrapes alone gave a smaller, wrong difference. The
// counter that went down between two successive scrapes is a reset, named with them.
TEST(FactsReport, ARestartInsideTheWindowIsAResetNotASmallerDifference) {
  const std::string base = test::read_fixture("llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom");
  auto page = [&](int predicted) {
    std::string b = base;
    b.replace(b.find("llamacpp:tokens_predicted_total 30"), 34,
              fmt::format("llamacpp:tokens_predicted_total {}", predicted));
    return b;
  };
  std::vector<Snapshot> snaps{snapshot(1, page(30), 0), snapshot(2, page(150), 1'000'000)};
  Snapshot down;
  down.seq = 3;
  down.status = ScrapeStatus::kUnreachable;
  down.error = "cannot connect";
  snaps.push_back(down);
  snaps.push_back(snapshot(4, page(40), 3'000'000));
  snaps.push_back(snapshot(5, page(80), 4'000'000));
  const FactsReport r = build_facts_report(snaps);
  EXPECT_EQ(r.reset.find("between scrapes 2 and 4: "), 0u) << r.reset;
  EXPECT_FALSE(r.window_seconds.has_value());  // no difference claimed across it
  EXPECT_NE(facts_markdown(r).find("**Reset between scrapes:** between scrapes 2 and 4"), std::string::npos);
}

// The real llama-server killed and started again under a proxy's scrapes (b10309, tiny model): no
// scrape saw the first server's counters above zero, and llama.cpp publishes no start time, so the
// restart cannot be told from the numbers; the three unreachable scrapes inside the window are said.
TEST(FactsReport, FailedScrapesInsideTheWindowOfAnEngineWithNoStartTimeAreACaution) {
  const SnapshotsRead read =
      read_snapshots(test::read_fixture("llamacpp/llamacpp_b10309_tiny-random_restart.scrape.jsonl"));
  ASSERT_EQ(read.snapshots.size(), 19u);
  const FactsReport r = build_facts_report(read.snapshots);
  EXPECT_TRUE(r.reset.empty()) << r.reset;
  EXPECT_EQ(r.caution.find("3 scrapes inside the window found the engine down or failing (the first, scrape 6: "
                           "unreachable): had it restarted then, it would go unseen"),
            0u)
      << r.caution;
  EXPECT_NE(facts_markdown(r).find("- Caution: 3 scrapes inside the window found the engine down"), std::string::npos);
  // Scrapes that timed out met a server alive but busy: no caution.
  std::vector<Snapshot> busy = read.snapshots;
  for (auto& s : busy) {
    if (s.status == ScrapeStatus::kUnreachable) s.status = ScrapeStatus::kTimeout;
  }
  EXPECT_TRUE(build_facts_report(busy).caution.empty());
  const auto doc = json::parse(facts_json(r, "test")).as_object();
  EXPECT_EQ(doc.at("validity").at("warnings").as_array().size(), 1u);
  // Failed scrapes outside a window say nothing of it.
  const std::vector<Snapshot> after(read.snapshots.begin() + 8, read.snapshots.end());
  EXPECT_TRUE(build_facts_report(after).caution.empty());
}

TEST(Snapshot, SnapshotsFileSitsBesideTheLedger) {
  EXPECT_EQ(snapshots_path_for("runs/qwen/model-perf.jsonl"), "runs/qwen/model-perf.scrape.jsonl");
  EXPECT_EQ(snapshots_path_for("ledger.log"), "ledger.log.scrape.jsonl");
}

}  // namespace
}  // namespace mpo::scrape

#include "scrape/snapshot_reader.hpp"

namespace mpo::scrape {
namespace {

// What is written reads back to the same record: the JSON of a read line equals the line.
TEST(SnapshotReader, EveryCaptureRoundTrips) {
  for (const char* f : {"vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom",
                        "vllm/vllm-v0-plus-v1-appended_datadog-composite_opt-125m.prom",
                        "sglang/sglang_docs-example_llama-3.1-8b_multiproc-order.prom",
                        "llamacpp/llamacpp_server-cuda_2026-05_lfm2.5-8b_rtx4080.prom",
                        "llamacpp/llamacpp_b10309_cpu_tiny-random_after-load.prom",
                        "tgi/tgi_datadog-fixture_payload.prom", "dcgm/dcgm-exporter_datadog-fixture_t4-mixed.prom",
                        "vllm/DOCUMENTED_vllm-v1_spec-decode_kv-connector_residency_nixl.prom",
                        "sglang/DOCUMENTED_sglang_dp2-tp2_priority_kv-pool_retraction.prom"}) {
    const std::string line = snapshot_json_line(snapshot(3, test::read_fixture(f), 1'767'225'600'000'000));
    auto back = parse_snapshot_line(line);
    ASSERT_TRUE(back.ok()) << f << ": " << back.error().message;
    EXPECT_EQ(snapshot_json_line(*back), line) << f;
  }
  // Split signals keep their parts (acceptance by position, offload by direction).
  const std::string parts_line = snapshot_json_line(
      snapshot(5, test::read_fixture("vllm/DOCUMENTED_vllm-v1_spec-decode_kv-connector_residency_nixl.prom"),
               1'767'225'600'000'000));
  EXPECT_NE(parts_line.find(R"("parts":[["0",12000],["1",8000],["2",4000]])"), std::string::npos) << parts_line;
  auto split = parse_snapshot_line(parts_line);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->signals.scalar(engines::Signal::kKvOffloadBytes)->part("CPU_to_GPU")->value, 2e9);
  Snapshot failed;
  failed.seq = 4;
  failed.source = "http://e/metrics";
  failed.status = ScrapeStatus::kTimeout;
  failed.error = "no answer";
  const std::string line = snapshot_json_line(failed);
  auto back = parse_snapshot_line(line);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(snapshot_json_line(*back), line);
}

// Issue 20: a NaN or Inf sample was written as null, and the reader then dropped the whole line.
// Every value, non-finite ones included, comes back as it was. (Invented page: the real llama.cpp
// page's `prompt_tokens_seconds inf` is not a catalog signal; it is in EveryCaptureRoundTrips.)
TEST(SnapshotReader, SyntheticNonFiniteValuesRoundTrip) {
  const std::string page =
      "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc NaN\n"
      "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting +Inf\n"
      "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running -Inf\n"
      "# TYPE vllm:time_to_first_token_seconds histogram\n"
      "vllm:time_to_first_token_seconds_bucket{le=\"1\"} 1\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 1\n"
      "vllm:time_to_first_token_seconds_sum NaN\nvllm:time_to_first_token_seconds_count 1\n";
  const Snapshot s = snapshot(5, page, 1'000'000);
  const std::string line = snapshot_json_line(s);
  EXPECT_EQ(line.find("null"), std::string::npos) << line;
  const SnapshotsRead read = read_snapshots(line + "\n");
  ASSERT_EQ(read.snapshots.size(), 1u) << (read.problems.empty() ? "" : read.problems[0]);
  const auto& back = read.snapshots[0].signals;
  EXPECT_TRUE(std::isnan(*back.value(engines::Signal::kKvUsage)));
  EXPECT_EQ(*back.value(engines::Signal::kWaiting), std::numeric_limits<double>::infinity());
  EXPECT_EQ(*back.value(engines::Signal::kRunning), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(snapshot_json_line(read.snapshots[0]), line);
}

// Fields read from a file are range-checked before a conversion (a negative seq was undefined
// behaviour, found by fuzz_snapshot; the input is fuzz/regressions/snapshot/negative-seq).
TEST(SnapshotReader, OutOfRangeCountsAreRefusedNotConverted) {
  const std::string head = R"({"schema":"modelperfobs.scrape.v1","source":"s","status":"timeout",)"
                           R"("scheduled_at":"2026-01-01T00:00:00Z","scrape_started_at":"2026-01-01T00:00:00Z",)"
                           R"("scrape_ended_at":"2026-01-01T00:00:00Z",)";
  for (const char* seq : {"-2", "1.5", "1e300", "\"NaN\""}) {
    EXPECT_FALSE(parse_snapshot_line(head + R"("seq":)" + seq + "}").ok()) << seq;
  }
  EXPECT_TRUE(parse_snapshot_line(head + R"("seq":7})").ok());
  EXPECT_FALSE(parse_snapshot_line(head + R"("seq":7,"http_status":-1})").ok());
}

TEST(SnapshotReader, RecordedRunGivesTheSameFactsAsTheLiveOne) {
  const std::string body = test::read_fixture("vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom");
  std::vector<Snapshot> live{snapshot(1, body, 1'000'000), snapshot(2, body, 3'000'000)};
  const std::string recorded = snapshot_json_line(live[0]) + "\n" + "{torn\n" + snapshot_json_line(live[1]) + "\n";
  const SnapshotsRead read = read_snapshots(recorded);
  ASSERT_EQ(read.snapshots.size(), 2u);
  EXPECT_EQ(read.invalid_lines, 1u);
  EXPECT_EQ(read.problems[0].rfind("line 2:", 0), 0u);
  auto without_time = [](const std::string& doc) {
    auto o = json::parse(doc).as_object();
    o.erase("created_at");
    return json::serialize(o);
  };
  EXPECT_EQ(without_time(facts_json(build_facts_report(read.snapshots), "t")),
            without_time(facts_json(build_facts_report(live), "t")));
}

TEST(SnapshotReader, RejectsWhatIsNotASnapshot) {
  for (const char* line : {"", "[]", R"({"schema":"other"})", R"({"schema":"modelperfobs.scrape.v1"})",
                           R"({"schema":"modelperfobs.scrape.v1","seq":1,"source":"s","status":"weird",)"
                           R"("scheduled_at":"2026-01-01T00:00:00Z","scrape_started_at":"2026-01-01T00:00:00Z",)"
                           R"("scrape_ended_at":"2026-01-01T00:00:00Z"})"}) {
    EXPECT_FALSE(parse_snapshot_line(line).ok()) << line;
  }
}

}  // namespace
}  // namespace mpo::scrape
