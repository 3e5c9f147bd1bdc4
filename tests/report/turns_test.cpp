// The report by turn (report/turns.hpp): per turn, TTFT and the share of prompt tokens served from
// the prefix cache; the cliff named where that share collapses and stays down, and not where it
// dips once or never was high. Invented rows (the shapes are the edge cases); the real engine's
// growing conversation is RealLlamaCpp.AConversationsTurnsAreNumbered... (tests/integration).
#include "report/turns.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace mpo::report {
namespace {

struct Rows {
  std::deque<Row> storage;
  RowList list;
  void add(std::uint16_t turn, double ttft, std::int64_t prompt, std::int64_t cached) {
    Row r;
    r.turn = turn;
    r.ttft_ms = std::optional<double>(ttft);
    r.prompt_tokens = std::optional<std::int64_t>(prompt);
    r.cached_prompt_tokens = std::optional<std::int64_t>(cached);
    storage.push_back(r);
    list.push_back(&storage.back());
  }
};

TEST(ReportTurns, AGrowingConversationFindsEachEarlierTurnAndHasNoCliff) {
  Rows rows;  // the real llama-server's four turns (prompt, cached): 169/0, 281/169, 390/281, 501/390
  rows.add(1, 40, 169, 0);
  rows.add(2, 30, 281, 169);
  rows.add(3, 31, 390, 281);
  rows.add(4, 33, 501, 390);
  const auto v = turns_of(rows.list);
  ASSERT_TRUE(v);
  ASSERT_EQ(v->turns.size(), 4u);
  EXPECT_EQ(v->turns[0].cached_share, 0.0);
  EXPECT_NEAR(*v->turns[1].cached_share, 169.0 / 281, 1e-12);
  EXPECT_NEAR(*v->turns[3].cached_share, 390.0 / 501, 1e-12);
  EXPECT_EQ(v->turns[2].ttft_ms->p50, 31);
  EXPECT_FALSE(v->cliff);
  const auto cells = turn_rows(*v);
  EXPECT_EQ(cells[1], (std::vector<std::string>{"2", "1", "30.0", "30.0", "281", "60%"}));
}

TEST(ReportTurns, TheCliffIsTheFirstTurnFromWhichTheShareStaysUnderHalf) {
  Rows rows;
  for (int session = 0; session < 3; ++session) {
    rows.add(1, 50, 1000, 0);
    for (std::uint16_t t = 2; t <= 8; ++t) rows.add(t, 40, 1000 + 500 * t, (1000 + 500 * t) * 9 / 10);
    for (std::uint16_t t = 9; t <= 10; ++t) rows.add(t, 900, 1000 + 500 * t, (1000 + 500 * t) / 8);
  }
  const auto v = turns_of(rows.list);
  ASSERT_TRUE(v);
  ASSERT_TRUE(v->cliff);
  EXPECT_EQ(v->cliff->from_turn, 9);
  EXPECT_EQ(v->cliff->before_first, 2);
  EXPECT_EQ(v->cliff->before_last, 8);
  EXPECT_NEAR(v->cliff->share_before, 0.9, 1e-3);
  EXPECT_NEAR(v->cliff->share_after, 0.125, 1e-3);
  EXPECT_EQ(cliff_sentence(*v->cliff), "turn 9 onward: cached share 12% of prompt tokens vs 90% at turns 2-8");
  const std::string json = turns_json(v);
  EXPECT_NE(json.find(R"("cache_cliff":{"from_turn":9)"), std::string::npos) << json;
}

TEST(ReportTurns, ADipThatRecoversIsNoCliffAndNeitherIsACacheThatNeverServed) {
  Rows dip;
  for (std::uint16_t t = 1; t <= 8; ++t) dip.add(t, 40, 1000, t == 1 ? 0 : t == 5 ? 100 : 900);
  EXPECT_FALSE(turns_of(dip.list)->cliff);
  Rows never;
  for (std::uint16_t t = 1; t <= 8; ++t) never.add(t, 40, 1000, 50);
  EXPECT_FALSE(turns_of(never.list)->cliff);  // 5% all along: nothing collapsed
}

TEST(ReportTurns, LinesThatNameNoTurnsOrOneGiveNoView) {
  Rows none;
  none.add(0, 40, 100, 0);
  none.add(0, 41, 100, 0);
  EXPECT_FALSE(turns_of(none.list));
  Rows one;
  one.add(1, 40, 100, 0);
  one.add(1, 41, 100, 0);
  EXPECT_FALSE(turns_of(one.list));
  EXPECT_EQ(turns_json(std::nullopt), "null");
}

}  // namespace
}  // namespace mpo::report
