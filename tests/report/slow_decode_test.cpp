// Requests that decoded slowly part of the time (report/slow_decode.hpp): counted where the median
// request decoded within the threshold, dated, set against the others, and named beside the verdict.
#include "report/slow_decode.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "report/analysis.hpp"
#include "report/records.hpp"
#include "report/render.hpp"

namespace mpo::report {
namespace {

// Streamed lines: `quick` decoding at 30 ms a token with nothing else in flight, then `slow` at
// 150 ms with `slow_in_flight` in flight at their start.
std::vector<ledger::LedgerRecord> lines(int quick, int slow, int slow_in_flight = 7) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < quick + slow; ++i) {
    const bool s = i >= quick;
    auto r = test_lines::rec(i * 1000, s ? 1500 : 400, 40, 100, s ? slow_in_flight : 0);
    r.tpot_ms = s ? 150.0 + i : 30.0 + i % 3;
    rs.push_back(std::move(r));
  }
  return rs;
}

TEST(SlowDecodeAtTimes, RequestsPastTheThresholdAreCountedSetAgainstTheOthersAndDated) {
  const auto g = analyse(lines(20, 6), {}).at(0);
  ASSERT_TRUE(g.slow_decode);
  const SlowDecode& d = *g.slow_decode;
  EXPECT_EQ(d.n, 6u);
  EXPECT_EQ(d.of, 26u);
  EXPECT_DOUBLE_EQ(d.threshold_ms, 100);
  EXPECT_DOUBLE_EQ(d.tpot_ms.max, 175);  // 150 + the last index
  EXPECT_DOUBLE_EQ(d.others_tpot_p50_ms, 31);
  EXPECT_EQ(d.in_flight_p50, 7);
  EXPECT_EQ(d.others_in_flight_p50, 0);
  EXPECT_EQ(d.first_start_us, 20'000'000);
  EXPECT_EQ(d.last_start_us, 25'000'000);
  const std::string s = slow_decode_sentence(d);
  EXPECT_NE(s.find("6 of 26 requests (23%) decoded slower than 100 ms a token (TPOT, the proxy's"), std::string::npos)
      << s;
  EXPECT_NE(s.find("they started with 7 requests already in flight at this proxy p50, the others with 0"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Decode slowed when more requests shared the engine's batches"), std::string::npos) << s;
}

TEST(SlowDecodeAtTimes, ASlowDecodeWithoutMoreLoadAtTheProxyIsNotCalledItsLoad) {
  const auto g = analyse(lines(20, 6, 0), {}).at(0);
  ASSERT_TRUE(g.slow_decode);
  const std::string s = slow_decode_sentence(*g.slow_decode);
  EXPECT_NE(s.find("They met no more of this proxy's requests than the others did"), std::string::npos) << s;
  EXPECT_EQ(s.find("Decode slowed when more requests shared"), std::string::npos) << s;
}

TEST(SlowDecodeAtTimes, FewOrAllOrNoneAreNoFinding) {
  EXPECT_FALSE(analyse(lines(30, 2), {}).at(0).slow_decode);  // 2: fewer than 3
  EXPECT_FALSE(analyse(lines(40, 3), {}).at(0).slow_decode);  // 3 of 43: under a tenth
  EXPECT_FALSE(analyse(lines(0, 8), {}).at(0).slow_decode);   // all: the decode candidate's to judge
  EXPECT_FALSE(analyse(lines(8, 0), {}).at(0).slow_decode);
  // Not streamed: the engine's own decode per token (llama.cpp's predicted_ms), where no line has a TPOT.
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 10; ++i) {
    auto r = test_lines::rec(i * 1000, 2000, std::nullopt, 100, 0);
    r.completion_tokens = 11;
    r.server_timings = fmt::format(R"({{"prompt_n":100,"prompt_ms":20,"predicted_n":11,"predicted_ms":{}}})",
                                   i < 3 ? 1500 : 300);  // 150 and 30 ms a token after the first
    rs.push_back(std::move(r));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.slow_decode);
  EXPECT_EQ(g.slow_decode->n, 3u);
  EXPECT_DOUBLE_EQ(g.slow_decode->tpot_ms.p50, 150);
  EXPECT_NE(g.slow_decode->source.find("llama.cpp timings.predicted_ms"), std::string::npos);
}

// Where the engine's prompt windows are known (llama.cpp's timings.prompt_ms) and most of the slow
// ones decoded while another request's prompt was read, that is what the sentence names.
TEST(SlowDecodeAtTimes, SlowDecodesBehindOtherRequestsPromptsAreSaidToBe) {
  std::vector<ledger::LedgerRecord> rs;
  const auto timed = [](ledger::LedgerRecord r, double prompt_ms, double tpot) {
    r.tpot_ms = tpot;
    r.itl_p50_ms = tpot;
    r.server_timings = fmt::format(R"({{"prompt_n":{},"prompt_ms":{},"predicted_n":10,"predicted_ms":{}}})",
                                   *r.prompt_tokens, prompt_ms, 9 * tpot);
    return r;
  };
  for (int i = 0; i < 20; ++i) rs.push_back(timed(test_lines::rec(i * 1000, 400, 40, 100, 0), 20, 30));
  for (int k = 0; k < 4; ++k) {
    const std::int64_t at = 30'000 + k * 2'000;
    rs.push_back(timed(test_lines::rec(at - 10, 1500, 1400, 2000, 0), 1380, 3));  // a long prompt read
    rs.push_back(timed(test_lines::rec(at, 1500, 40, 100, 1), 20, 150));          // decoding beside it
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.slow_decode);
  EXPECT_EQ(g.slow_decode->n, 4u);
  EXPECT_EQ(g.slow_decode->behind_prompts, 4u);
  const std::string s = slow_decode_sentence(*g.slow_decode);
  EXPECT_NE(s.find("Other requests' prompts were read during 4 of them (llama.cpp timings.prompt_ms)"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("Decode slowed when more requests shared"), std::string::npos) << s;
}

// 6 of 26 streams decoded at 150 ms a token when 8 were in flight, the median at 30: the decode
// candidate does not cross, and the report names them beside its verdict; where most did, decode is
// the verdict itself and nothing is said beside it.
TEST(SlowDecodeAtTimes, ADecodeSlowAtTimesIsNamedBesideTheVerdict) {
  const auto g = analyse(lines(20, 6), {}).at(0);
  EXPECT_LT(test_lines::candidate(g, "decode").score, 1);
  ReportInput in;
  in.groups = {g};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("requests whose decode was slow at times (**Decode slow at times**)"), std::string::npos) << md;
  EXPECT_NE(md.find("**Decode slow at times**: 6 of 26 requests (23%) decoded slower than 100 ms a token"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("decode slow at times: 6 of 26 requests"), std::string::npos) << md;  // the decode row's evidence
  EXPECT_NE(render_json(in).find(R"("slow_decode_at_times":{"threshold_ms":100,)"), std::string::npos);
  EXPECT_NE(render_html(in).find("Decode slow at times"), std::string::npos);

  const auto most = analyse(lines(6, 20), {}).at(0);
  EXPECT_GE(test_lines::candidate(most, "decode").score, 1);
  EXPECT_TRUE(slow_decode_at_times_sentence(most).empty());
  in.groups = {most};
  EXPECT_EQ(render_markdown(in).find("Decode slow at times"), std::string::npos);
}

}  // namespace
}  // namespace mpo::report
