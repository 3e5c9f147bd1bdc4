#include "ledger/reader.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "ledger/observation.hpp"
#include "support/observation.hpp"

namespace mpo::ledger {
namespace {

std::string our_line(const std::string& id, double ttft) {
  Observation o = test::streamed_chat_line(id, 1'787'824'800'000'000, 500);
  o.model = "qwen";
  o.ttft_ms = ttft;
  o.completion_tokens = 11;
  return render_observation(o);
}

// As docs/FAK.md section 1.1 describes it: omitted zeros, nanosecond times, no nulls.
const char* kFakLine =
    R"({"schema":"fak-model-perf/1","timestamp":"2026-08-22T07:16:05.1021861Z","completed_at":"2026-08-22T07:16:06.2021861Z",)"
    R"("request_id":"1787382965102186100-1","overlapping_observed_requests":0,"model":"qwen3","backend":"http://127.0.0.1:8000",)"
    R"("status":200,"streaming":true,"prompt_tokens":20,"completion_tokens":40,"total_tokens":60,"duration_ms":1100,)"
    R"("ttft_ms":120.5,"tpot_ms":25.1,"output_tokens_per_second":40.8,"inter_chunk_count":39,"inter_chunk_p50_ms":24,)"
    R"("inter_chunk_p95_ms":31})";

TEST(ReadLedger, ReadsOurLinesAndFaksAlike) {
  const std::string text = our_line("a", 50) + kFakLine + "\n";
  const auto r = read_ledger(text);
  ASSERT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.fak_lines, 1u);
  EXPECT_EQ(r.records[0].observation_id, "a");
  EXPECT_EQ(r.records[0].ttft_ms, 50.0);
  EXPECT_EQ(r.records[0].completion_tokens, 11);
  const auto& f = r.records[1];
  EXPECT_EQ(f.source_schema, "fak-model-perf/1");
  EXPECT_EQ(f.observation_id, "1787382965102186100-1");
  EXPECT_EQ(f.started_at_us, 1'787'382'965'102'186);
  EXPECT_EQ(f.e2e_ms, 1100.0);
  EXPECT_EQ(f.ttft_ms, 120.5);
  EXPECT_EQ(f.itl_p95_ms, 31.0);
  EXPECT_EQ(f.http_status, 200);
  EXPECT_EQ(f.outcome, "ok");
  EXPECT_EQ(f.token_source, "usage");
  EXPECT_FALSE(f.cached_prompt_tokens.has_value());  // fak does not know it: unknown, not zero
}

// Every field the reader knows, each with a distinct value, comes back from a rendered line; the
// keys are found by a hash of a few of their bytes, so a near miss must not be taken for one.
TEST(ReadLedger, EveryFieldOfAnObservationLineRoundTrips) {
  Observation o;
  o.observation_id = "id-1";
  o.started_at_us = 1'787'824'800'123'456;
  o.ended_at_us = o.started_at_us + 2'000'000;
  o.backend = "http://10.0.0.7:8000";
  o.method = "POST";
  o.path = "/v1/responses";
  o.operation = "responses";
  o.model = "m-req";
  o.response_model = "m-resp";
  o.trace_id = std::array<std::uint8_t, 16>{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd,
                                            0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c};
  o.span_id = std::array<std::uint8_t, 8>{0xb7, 0xad, 0x6b, 0x71, 0x69, 0x20, 0x33, 0x31};
  o.stream = true;
  o.http_status = 201;
  o.outcome = "stream_truncated";
  o.error_type = "upstream";
  o.error_message = "cut";
  o.finish_reason = "length";
  o.max_tokens = 400;
  o.ttfb_ms = 1.5;
  o.ttft_ms = 12.25;
  o.e2e_ms = 2000;
  o.itl_ms = {10, 20, 30, 40};
  o.content_events = 5;
  o.prompt_tokens = 101;
  o.completion_tokens = 9;
  o.total_tokens = 110;
  o.cached_prompt_tokens = 64;
  o.token_source = "estimated";
  o.in_flight_at_start = 7;
  o.timing_basis = "kernel_rx";
  o.proxy_lag_ms = 0.375;
  o.proxy_lag_at_ms = 12.5;
  o.proxy_lag_quiet_ms = 11.75;
  o.server_timings = R"({"prompt_n":101, "predicted_n":9})";
  o.sweep_point = "concurrency=8";
  const auto r = read_ledger(render_observation(o));
  ASSERT_EQ(r.records.size(), 1u) << (r.problems.empty() ? "" : r.problems[0].reason);
  const LedgerRecord& x = r.records[0];
  EXPECT_EQ(x.observation_id, "id-1");
  EXPECT_EQ(x.started_at_us, o.started_at_us);
  EXPECT_EQ(x.ended_at_us, o.ended_at_us);
  EXPECT_EQ(x.model, "m-req");
  EXPECT_EQ(x.response_model, "m-resp");
  EXPECT_EQ(x.backend, "http://10.0.0.7:8000");
  EXPECT_EQ(x.path, "/v1/responses");
  EXPECT_EQ(x.operation, "responses");
  EXPECT_TRUE(x.stream);
  EXPECT_EQ(x.http_status, 201);
  EXPECT_EQ(x.outcome, "stream_truncated");
  EXPECT_EQ(x.error_type, "upstream");
  EXPECT_EQ(x.error_message, "cut");
  EXPECT_EQ(x.finish_reason, "length");
  EXPECT_EQ(x.max_tokens, 400);
  EXPECT_EQ(x.ttfb_ms, 1.5);
  EXPECT_EQ(x.ttft_ms, 12.25);
  EXPECT_EQ(x.e2e_ms, 2000.0);
  ASSERT_TRUE(x.tpot_ms && x.output_tokens_per_second && x.e2e_output_tokens_per_second);
  EXPECT_NEAR(*x.tpot_ms, *tpot_ms(o), 5e-7);  // written to a millionth of a ms
  EXPECT_TRUE(x.itl_p50_ms.has_value());
  EXPECT_TRUE(x.itl_p95_ms.has_value());
  EXPECT_EQ(x.itl_max_ms, 40.0);
  EXPECT_NEAR(*x.output_tokens_per_second, *output_tokens_per_second(o), 5e-7);  // to a millionth
  EXPECT_NEAR(*x.e2e_output_tokens_per_second, *e2e_output_tokens_per_second(o), 5e-7);
  EXPECT_EQ(x.prompt_tokens, 101);
  EXPECT_EQ(x.completion_tokens, 9);
  EXPECT_EQ(x.total_tokens, 110);
  EXPECT_EQ(x.cached_prompt_tokens, 64);
  EXPECT_EQ(x.token_source, "estimated");
  EXPECT_EQ(x.in_flight_at_start, 7);
  EXPECT_EQ(x.server_timings, R"({"prompt_n":101,"predicted_n":9})");
  EXPECT_EQ(x.sweep_point, "concurrency=8");
  EXPECT_EQ(x.timing_basis, "kernel_rx");
  EXPECT_EQ(x.proxy_lag_ms, 0.375);
  EXPECT_EQ(x.proxy_lag_at_ms, 12.5);
  EXPECT_EQ(x.proxy_lag_quiet_ms, 11.75);
  EXPECT_EQ(x.trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(x.span_id, "b7ad6b7169203331");

  // Keys one byte away from known ones (same length, same hashed bytes where possible) are
  // someone else's fields; the first of two equal keys wins.
  const auto near = read_ledger(
      R"({"schema":"modelperfobs.observation.v1","observation_id":"n","started_at":"2026-08-27T10:00:00Z",)"
      R"("outcome":"ok","ttft_mz":5,"ttfx_ms":6,"tpot_ms":7,"tpot_ms":8,"modeL":"x","model":"y","model":"z"})"
      "\n");
  ASSERT_EQ(near.records.size(), 1u);
  EXPECT_FALSE(near.records[0].ttft_ms.has_value());
  EXPECT_EQ(near.records[0].tpot_ms, 7.0);
  EXPECT_EQ(near.records[0].model, "y");
}

TEST(ReadLedger, AFakLineWithoutCompletedAtEndsAtItsStartPlusItsDuration) {
  // fak writes completed_at, but older and hand-made lines lack it (issue 22: without this fallback
  // every row was zero-length and the report's busy share 0). Invented from docs/FAK.md 1.1.
  std::string line = kFakLine;
  const auto from = line.find(R"("completed_at")");
  line.erase(from, line.find(',', from) + 1 - from);
  ASSERT_EQ(line.find("completed_at"), std::string::npos);
  const auto r = read_ledger(line + "\n");
  ASSERT_EQ(r.records.size(), 1u);
  ASSERT_TRUE(r.records[0].ended_at_us);
  EXPECT_EQ(*r.records[0].ended_at_us, 1'787'382'965'102'186 + 1'100'000);
  // With completed_at the line's own end stands.
  EXPECT_EQ(*read_ledger(std::string(kFakLine) + "\n").records[0].ended_at_us, 1'787'382'966'202'186);
}

TEST(ReadLedger, TheTimingBasisAndTheProxysLagRoundTrip) {
  Observation o;
  o.observation_id = "t";
  o.started_at_us = 1'787'824'800'000'000;
  o.ended_at_us = o.started_at_us + 1000;
  o.outcome = "ok";
  o.timing_basis = "kernel_rx";
  o.proxy_lag_ms = 3.25;
  Observation sweep_line = o;  // sweep lines say neither: null, as in older ledgers
  sweep_line.observation_id = "s";
  sweep_line.timing_basis.reset();
  sweep_line.proxy_lag_ms.reset();
  const auto read = read_ledger(render_observation(o) + render_observation(sweep_line));
  ASSERT_EQ(read.records.size(), 2u);
  EXPECT_EQ(read.records[0].timing_basis, "kernel_rx");
  EXPECT_EQ(read.records[0].proxy_lag_ms, 3.25);
  EXPECT_FALSE(read.records[1].timing_basis);
  EXPECT_FALSE(read.records[1].proxy_lag_ms);
}

TEST(ReadLedger, FakUnknownsStayUnknownAndStatusZeroIsNoResponse) {
  const auto r = read_ledger(
      R"({"schema":"fak-model-perf/1","timestamp":"2026-08-22T07:16:05Z","completed_at":"2026-08-22T07:16:05.5Z","request_id":"1-2","overlapping_observed_requests":0,"backend":"http://x","status":0,"streaming":false,"duration_ms":500,"error":"dial tcp: connection refused"})"
      "\n");
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].outcome, "upstream_unreachable");
  EXPECT_FALSE(r.records[0].http_status.has_value());
  EXPECT_FALSE(r.records[0].ttft_ms.has_value());
  EXPECT_FALSE(r.records[0].completion_tokens.has_value());
  EXPECT_EQ(r.records[0].token_source, "none");
}

TEST(ReadLedger, ATornLastLineIsSkippedAndFlaggedEverythingBeforeStands) {
  std::string text = our_line("a", 1) + our_line("b", 2);
  const std::string third = our_line("c", 3);
  text += third.substr(0, third.size() / 2);  // kill -9 mid-write
  const auto r = read_ledger(text);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_TRUE(r.torn_last_line);
  EXPECT_EQ(r.invalid_lines, 0u);
  ASSERT_FALSE(r.problems.empty());
  EXPECT_EQ(r.problems[0].line, 3u);
}

TEST(ReadLedger, InvalidForeignAndGapLinesAreCountedNotFatal) {
  std::string text = our_line("a", 1) + "not json\n" +
                     R"({"schema":"something-else/2"})"
                     "\n" +
                     R"({"schema":"modelperfobs.observation.v1"})"
                     "\n" +
                     R"({"schema":"modelperfobs.ledger-gap.v1","at":"2026-01-01T00:00:00Z","dropped_lines":7})"
                     "\n\n" +
                     our_line("b", 2);
  const auto r = read_ledger(text);
  EXPECT_EQ(r.records.size(), 2u);
  EXPECT_EQ(r.invalid_lines, 2u);  // not JSON; our schema without its required fields
  EXPECT_EQ(r.foreign_lines, 1u);
  EXPECT_EQ(r.gap_lines, 1u);
  EXPECT_EQ(r.dropped_lines, 7u);
  EXPECT_FALSE(r.torn_last_line);
  EXPECT_EQ(r.problems[0].line, 2u);
}

TEST(ReadLedger, CrlfLinesAndAnEmptyText) {
  const std::string lf = our_line("a", 1);
  const std::string line = lf.substr(0, lf.size() - 1) + "\r\n";
  EXPECT_EQ(read_ledger(line).records.size(), 1u);
  EXPECT_EQ(read_ledger("").records.size(), 0u);
}

}  // namespace
}  // namespace mpo::ledger

namespace mpo::ledger {
namespace {

// The chunked, threaded file reader gives exactly what read_ledger gives on the same bytes: every
// record in order, every count, problems with their global line numbers, the torn last line.
TEST(ReadLedgerFile, ChunksAndThreadsChangeNothing) {
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += our_line("id-" + std::to_string(i), 100 + i) + "\n";
    if (i % 37 == 0) text += "\n";                            // blank lines still count for numbering
    if (i % 53 == 0) text += "{not json\n";                   // invalid
    if (i % 71 == 0) text += std::string(kFakLine) + "\r\n";  // fak, CRLF
    if (i % 97 == 0)
      text += R"({"schema":"other.v1"})"
              "\n";  // foreign
    if (i % 89 == 0)
      text += R"({"schema":"modelperfobs.ledger-gap.v1","dropped_lines":3})"
              "\n";
  }
  text += R"({"schema":"modelperfobs.observation.v1","observation_id":"torn)";  // no newline
  char path[] = "/tmp/mpo-ledger-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ::close(fd);
  const LedgerRead whole = read_ledger(text);
  for (unsigned threads : {1u, 2u, 3u, 7u}) {
    for (std::size_t chunk : {std::size_t{64}, std::size_t{1000}, std::size_t{8} << 20}) {
      auto r = read_ledger_file(path, FileReadOptions{threads, 0, chunk});
      ASSERT_TRUE(r.ok()) << r.error().message;
      SCOPED_TRACE(testing::Message() << threads << " threads, chunk " << chunk);
      ASSERT_EQ(r->records.size(), whole.records.size());
      for (std::size_t i = 0; i < whole.records.size(); ++i) {
        ASSERT_EQ(r->records[i].observation_id, whole.records[i].observation_id);
        ASSERT_EQ(r->records[i].ttft_ms, whole.records[i].ttft_ms);
      }
      EXPECT_EQ(r->lines, whole.lines);
      EXPECT_EQ(r->fak_lines, whole.fak_lines);
      EXPECT_EQ(r->gap_lines, whole.gap_lines);
      EXPECT_EQ(r->dropped_lines, whole.dropped_lines);
      EXPECT_EQ(r->invalid_lines, whole.invalid_lines);
      EXPECT_EQ(r->foreign_lines, whole.foreign_lines);
      EXPECT_TRUE(r->torn_last_line);
      ASSERT_EQ(r->problems.size(), whole.problems.size());
      for (std::size_t i = 0; i < whole.problems.size(); ++i) {
        EXPECT_EQ(r->problems[i].line, whole.problems[i].line);
        EXPECT_EQ(r->problems[i].reason, whole.problems[i].reason);
      }
    }
  }
  EXPECT_GT(whole.invalid_lines, 0u);
  EXPECT_GT(whole.foreign_lines, 0u);
  ::unlink(path);
  EXPECT_FALSE(read_ledger_file(path, FileReadOptions{}).ok());  // gone: a clear error
}

}  // namespace
}  // namespace mpo::ledger

namespace mpo::ledger {
namespace {

LedgerRead read_with(std::string_view text, bool dom_only) {
  LineDecoder decoder;
  decoder.set_dom_only(dom_only);
  decoder.text(text, 1, true);
  return std::move(decoder).take();
}

// The scan of our writer's form (ledger/observation_scan.hpp) reads a line as the DOM walk does,
// or leaves it to the walk: lines at the edges of what it takes, each read both ways.
TEST(ReadLedgerScan, WhatTheScanReadsIsWhatTheDomWalkReads) {
  const std::string head = R"({"schema":"modelperfobs.observation.v1","observation_id":"a","started_at":)"
                           R"("2026-08-27T10:00:00.000000Z","outcome":"ok")";
  const std::vector<std::string> lines = {
      head + "}",
      head + R"(,"ttft_ms":123.456,"e2e_ms":4.797204811570577,"tpot_ms":1e2,"itl_p50_ms":0.5E-3,"itl_p95_ms":7})",
      head + R"(,"prompt_tokens":12.0,"completion_tokens":12.5,"total_tokens":123456789012345678})",
      head + R"(,"prompt_tokens":1234567890123456789,"cached_prompt_tokens":99999999999999999999})",
      head + R"(,"ttft_ms":1e400})",
      head + R"(,"ttft_ms":1e-400})",
      head + R"(,"ttft_ms":-1.5,"in_flight_at_start":-3})",
      head + R"(,"ttft_ms":-0})",
      head + R"(,"ttft_ms":01})",
      head + R"(,"ttft_ms":1.})",
      head + R"(,"model":"q\"wen","backend":"b\u0041"})",
      head + R"(,"model":"qwén-日本","path":"/v1"})",
      head + "," + R"("model":")" + std::string("\x01", 1) + R"("})",
      head + R"(,"model":"ok","model":"second","ttft_ms":1,"ttft_ms":2})",
      head + R"(,"stream":true,"warmup":false,"http_status":200,"turn":null,"session_id":7})",
      head + R"(,"stream":tru})",
      head + R"(,"stream":nulls})",
      head + R"(,"server_timings":{"prompt_ms":1.50,"prompt_n":10}})",
      head + R"(,"server_timings":{ "prompt_ms" : 1e2, "a":[1,{"b":null}], "s":"x}" },"ttft_ms":5})",
      head + R"(,"server_timings":{"prompt_ms":1,}})",
      head + R"(,"server_timings":{"a":[1,2}})",
      head + R"(,"server_timings":{"a":"
"}})",
      head + R"(,"server_timings":{"a":1},"server_timings":{"b":2}})",
      head + R"(,"server_timings":{"a":1},"server_timings":{"b":})",
      head + R"(,"model":{"a":1}})",
      head + R"(,"server_timings":[1]})",
      head + R"(,"server_timings":{"a":{"b":{"c":[[[]]]}}}})",
      head + R"(,"server_timings":null,"itl_ms":[1,2,3]})",
      head + R"(, "model":"spaced"})",
      head + R"(} )",
      head + R"(}x)",
      head + R"(,"ended_at":"2026-08-27T10:00:01.5Z","started_at":"not a time"})",
      head + R"(,"unknown":1.5e3,"other":"x","more":true})",
      head + R"(,"unknown":1e99999})",
      R"({"schema":"modelperfobs.observation.v1","observation_id":"a","outcome":"ok"})",
      R"({"observation_id":"a","schema":"modelperfobs.observation.v1","started_at":"2026-08-27T10:00:00Z","outcome":"ok"})",
      R"({"schema":"modelperfobs.observation.v1x","observation_id":"a"})",
      head + std::string(",\"model\":\"\xff\xfe\"}"),
      head,
  };
  for (const std::string& line : lines) {
    for (const std::string& text : {line, line + "\n", line + "\r\n"}) {
      const auto scanned = read_with(text, false), dom = read_with(text, true);
      EXPECT_EQ(scanned.records, dom.records) << line;
      EXPECT_EQ(scanned.lines, dom.lines) << line;
      EXPECT_EQ(scanned.invalid_lines, dom.invalid_lines) << line;
      EXPECT_EQ(scanned.torn_last_line, dom.torn_last_line) << line;
      ASSERT_EQ(scanned.problems.size(), dom.problems.size()) << line;
      for (std::size_t i = 0; i < dom.problems.size(); ++i)
        EXPECT_EQ(scanned.problems[i].reason, dom.problems[i].reason);
    }
  }
  // The writer's own lines are read by the scan and give what the DOM walk gives.
  const std::string ours = our_line("id-7", 333.25) + our_line("id-8", 0.000123);
  const auto scanned = read_with(ours, false), dom = read_with(ours, true);
  ASSERT_EQ(scanned.records.size(), 2u);
  EXPECT_EQ(scanned.records, dom.records);
  EXPECT_EQ(*scanned.records[0].ttft_ms, 333.25);
  EXPECT_EQ(*scanned.records[1].ttft_ms, 0.000123);
}

}  // namespace
}  // namespace mpo::ledger
