// Requests that queued part of the time (report/queued.hpp): counted where the median request met
// no queue, dated, set against the others, and named beside the verdict.
#include "report/queued.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "report/analysis.hpp"
#include "report/ranking.hpp"
#include "report/records.hpp"
#include "report/render.hpp"

namespace mpo::report {
namespace {

constexpr std::int64_t kT0 = 1'796'000'000'000'000;  // 2026-11-30T00:53:20Z, in µs

std::vector<QueueWait> waits(int quick, int queued) {
  std::vector<QueueWait> out;
  for (int i = 0; i < quick; ++i) out.push_back({20.0 + i, 200.0 + i, kT0 + i * 1'000'000, 0.0});
  for (int i = 0; i < queued; ++i) out.push_back({900.0 + i, 1100.0 + i, kT0 + (60 + i) * 1'000'000, 3.0});
  return out;
}

TEST(QueuedAtTimes, RequestsPastTheThresholdAreCountedSetAgainstTheOthersAndDated) {
  const auto q = queued_at_times(waits(21, 16), 500);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->n, 16u);
  EXPECT_EQ(q->of, 37u);
  EXPECT_DOUBLE_EQ(q->wait_ms.p50, 907.5);
  EXPECT_DOUBLE_EQ(q->ttft_p50_ms, 1107.5);
  EXPECT_DOUBLE_EQ(q->others_ttft_p50_ms, 210);
  EXPECT_EQ(q->in_flight_p50, 3.0);
  EXPECT_EQ(q->others_in_flight_p50, 0.0);
  EXPECT_EQ(q->first_start_us, kT0 + 60'000'000);
  EXPECT_EQ(q->last_start_us, kT0 + 75'000'000);
  const std::string s = queued_at_times_sentence(*q, "llama.cpp timings.prompt_ms: TTFT - prompt_ms");
  EXPECT_NE(s.find("16 of 37 requests (43%) waited more than 500 ms before the engine began their prompt"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("they started between 00:54:20 and 00:54:35"), std::string::npos) << s;
  EXPECT_NE(s.find("3 requests already in flight at this proxy p50, the others with 0"), std::string::npos) << s;
}

// Requests that waited while no more of the proxy's requests were in flight than for the others:
// the sentence does not call it a queue behind the proxy's traffic.
TEST(QueuedAtTimes, AWaitWithoutMoreLoadAtTheProxyIsNotCalledItsQueue) {
  auto w = waits(21, 16);
  for (auto& x : w) x.in_flight = 0.0;
  const auto q = queued_at_times(w, 500);
  ASSERT_TRUE(q.has_value());
  const std::string s = queued_at_times_sentence(*q, "spans");
  EXPECT_NE(s.find("what held them was not a queue behind its own traffic: clients that bypass the proxy"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("came and went with the load"), std::string::npos) << s;
}

TEST(QueuedAtTimes, FewOrAllOrUnknownAreNoFinding) {
  EXPECT_FALSE(queued_at_times(waits(30, 2), 500).has_value());    // fewer than three
  EXPECT_FALSE(queued_at_times(waits(40, 3), 500).has_value());    // under a tenth
  EXPECT_TRUE(queued_at_times(waits(27, 3), 500).has_value());     // a tenth
  EXPECT_FALSE(queued_at_times(waits(0, 12), 500).has_value());    // none to compare with
  EXPECT_FALSE(queued_at_times(waits(10, 10), 1000).has_value());  // none past a higher threshold
  auto undated = waits(10, 5);
  undated.back().started_at_us = 0;
  undated.back().in_flight.reset();
  const auto q = queued_at_times(undated, 500);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->first_start_us, 0);
  EXPECT_FALSE(q->in_flight_p50.has_value());
}

// A run whose second half had twice the clients of the engine's slots: its median request met no
// queue, so the ranking does not cross, and the report names the queue beside its verdict; where
// most requests queued, queueing is the verdict itself and nothing is said beside it.
TEST(QueuedAtTimes, AQueueThatCameWithTheLoadIsNamedBesideTheVerdict) {
  std::vector<ledger::LedgerRecord> rs;
  for (int i = 0; i < 24; ++i) rs.push_back(test_lines::llamacpp(i, i < 14 ? 5 : 800, 50, 100, i < 14 ? 0 : 3));
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.engine_split && g.engine_split->queued);
  EXPECT_EQ(g.engine_split->queued->n, 10u);
  EXPECT_LT(g.ranking.front().score, 1) << g.ranking.front().name;
  ReportInput in;
  in.groups = {g};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("Also, below: requests that waited for a slot at times (**Queue at times**)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("**Queue at times**: 10 of 24 requests (42%) waited more than 500 ms"), std::string::npos) << md;
  EXPECT_NE(md.find("a queue at times: 10 of 24 requests"), std::string::npos) << md;  // the queueing row's evidence
  EXPECT_NE(render_json(in).find(R"("queued_at_times":{"threshold_ms":500,"requests":10,"of":24,)"), std::string::npos);
  EXPECT_NE(render_html(in).find("Queue at times"), std::string::npos);

  for (int i = 0; i < 6; ++i)
    rs[static_cast<std::size_t>(i)] = test_lines::llamacpp(i, 800, 50, 100, 3);  // now 16 of 24 queued
  const auto most = analyse(rs, {}).at(0);
  EXPECT_EQ(most.ranking.front().name, "queueing");
  EXPECT_GE(most.ranking.front().score, 1);
  EXPECT_TRUE(queue_at_times_sentence(most).empty());
  in.groups = {most};
  EXPECT_EQ(render_markdown(in).find("Queue at times"), std::string::npos);
}

}  // namespace
}  // namespace mpo::report
