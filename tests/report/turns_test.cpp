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
  SessionIndex sessions;
  // A turn of conversation `session` that ran from `start_ms` to `end_ms`.
  void add_turn(std::uint64_t session, std::uint16_t turn, double start_ms, double end_ms, std::int64_t prompt,
                std::int64_t cached) {
    add(turn, 10, prompt, cached);
    Row& r = storage.back();
    r.started_at_us = static_cast<std::int64_t>(start_ms * 1000);
    r.ended_at_us = std::optional<std::int64_t>(static_cast<std::int64_t>(end_ms * 1000));
    sessions[&r] = session;
  }
  void add(std::uint16_t turn, double ttft, std::int32_t prompt, std::int32_t cached) {
    Row r;
    r.outcome_index = RowNames::kOk;
    r.turn = turn;
    r.ttft_ms = std::optional<double>(ttft);
    r.prompt_tokens = std::optional<std::int32_t>(prompt);
    r.cached_prompt_tokens = std::optional<std::int32_t>(cached);
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
  EXPECT_EQ(cells[1], (std::vector<std::string>{"2", "1", "0", "30.0", "30.0", "281", "60%", "-"}));
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

TEST(ReportTurns, TheClientsTimeBetweenTurnsIsFromTheEndOfTheSameConversationsTurnBefore) {
  Rows rows;
  // Two conversations interleaved: session 1 thinks 200 ms then 300 ms; session 2 100 ms then 500.
  rows.add_turn(1, 1, 0, 1000, 100, 0);
  rows.add_turn(2, 1, 50, 900, 100, 0);
  rows.add_turn(2, 2, 1000, 1800, 200, 100);
  rows.add_turn(1, 2, 1200, 2000, 200, 100);
  rows.add_turn(1, 3, 2300, 3000, 300, 200);
  rows.add_turn(2, 3, 2300, 3000, 300, 200);
  rows.add(4, 10, 400, 300);  // a line that names its turn but no session: no gap
  const auto v = turns_of(rows.list, TurnContext{&rows.sessions, nullptr});
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->turns[0].client_ms);  // turn 1 has nothing before it
  ASSERT_TRUE(v->turns[1].client_ms);
  EXPECT_EQ(v->turns[1].client_ms->n, 2u);
  EXPECT_NEAR(v->turns[1].client_ms->max, 200, 1e-9);
  EXPECT_NEAR(v->turns[1].client_ms->p50, 150, 1e-9);
  EXPECT_NEAR(v->turns[2].client_ms->max, 500, 1e-9);
  EXPECT_FALSE(v->turns[3].client_ms);
  EXPECT_EQ(turn_rows(*v)[1].back(), "150.0");
  EXPECT_NE(turns_json(v).find(R"("client_p50_ms":150)"), std::string::npos) << turns_json(v);
  // Without the session index the gaps are not known.
  EXPECT_FALSE(turns_of(rows.list)->turns[1].client_ms);
}

TEST(ReportTurns, TheCliffSaysHowFullTheEnginesKvCacheWasThenAndBefore) {
  Rows rows;
  for (std::uint64_t s = 0; s < 4; ++s) {
    for (std::uint16_t t = 1; t <= 6; ++t) {
      const double start = 1000.0 * t + 10 * static_cast<double>(s);
      const std::int64_t prompt = 500 * t;
      rows.add_turn(s, t, start, start + 500, prompt, t == 1 ? 0 : t <= 4 ? prompt * 8 / 10 : prompt / 10);
    }
  }
  const std::vector<KvSample> kv = {{1'500'000, 0.20}, {2'500'000, 0.35}, {4'200'000, 0.41},
                                    {5'200'000, 0.97}, {6'300'000, 0.99}, {9'000'000, 1.0}};
  const auto v = turns_of(rows.list, TurnContext{&rows.sessions, &kv});
  ASSERT_TRUE(v && v->cliff);
  EXPECT_EQ(v->cliff->from_turn, 5);
  EXPECT_NEAR(*v->cliff->kv_max_after, 0.99, 1e-12);   // 9.0 s is after the last turn ended (6.53 s)
  EXPECT_NEAR(*v->cliff->kv_max_before, 0.41, 1e-12);  // turns 2-4 ran from 2.0 to 4.53 s
  EXPECT_EQ(cliff_sentence(*v->cliff),
            "turn 5 onward: cached share 10% of prompt tokens vs 80% at turns 2-4; the engine's KV cache 99% full at "
            "most then, 41% before");
  EXPECT_NE(turns_json(v).find(R"("kv_usage_max_after":0.99,"kv_usage_max_before":0.41)"), std::string::npos);
  // No scrapes: the sentence says nothing of the KV cache.
  EXPECT_EQ(cliff_sentence(*turns_of(rows.list)->cliff).find("KV"), std::string::npos);
}

TEST(ReportTurns, TurnsAreJudgedInBandsSplitAtTheCliff) {
  TurnView v;
  for (std::uint16_t t = 1; t <= 8; ++t) v.turns.push_back(TurnStats{t, 3, {}, {}, {}, {}});
  using Bands = std::vector<std::pair<std::uint16_t, std::uint16_t>>;
  EXPECT_EQ(turn_bands(v), (Bands{{1, 1}, {2, 8}}));
  v.cliff = CacheCliff{5, 2, 4, 0.65, 0.06, {}, {}};
  EXPECT_EQ(turn_bands(v), (Bands{{1, 1}, {2, 4}, {5, 8}}));
  v.cliff->from_turn = 2;  // a cliff at the first turn that could be served: nothing before it
  EXPECT_EQ(turn_bands(v), (Bands{{1, 1}, {2, 8}}));
  v.turns.erase(v.turns.begin());  // lines whose first turn the ledger does not hold
  v.cliff.reset();
  EXPECT_EQ(turn_bands(v), (Bands{{2, 8}}));
  EXPECT_EQ(band_sentence(TurnBand{5, 8, 12, "prefill", 1.44, "median TTFT explainable by prompt length"}),
            "turns 5-8 (12 requests): prefill (score 1.4): median TTFT explainable by prompt length");
  EXPECT_EQ(band_sentence(TurnBand{1, 1, 3, "decode", 0.4, "x"}), "turn 1 (3 requests): nothing crosses its threshold");
  v.bands = {TurnBand{2, 8, 21, "prefill", 2.0, "e"}, TurnBand{1, 1, 3, "", 0, ""}};
  const auto j = turns_json(v);
  EXPECT_NE(
      j.find(
          R"("bands":[{"first_turn":2,"last_turn":8,"requests":21,"likely_bottleneck":"prefill","score":2,"evidence":"e"},{"first_turn":1,"last_turn":1,"requests":3,"likely_bottleneck":null}])"),
      std::string::npos)
      << j;
}

TEST(ReportTurns, ConversationsThatLoseTheirOwnCacheAreCountedAndFailedTurnsToo) {
  Rows rows;
  // Conversation 1 keeps its cache; 2 loses it from turn 4; 3 from turn 3; 4 has two turns only.
  const std::int64_t prompts[] = {100, 200, 300, 400, 500};
  for (std::uint16_t t = 1; t <= 5; ++t) {
    const std::int64_t p = prompts[t - 1];
    rows.add_turn(1, t, t * 1000.0, t * 1000.0 + 100, p, t == 1 ? 0 : p - 100);
    rows.add_turn(2, t, t * 1000.0, t * 1000.0 + 100, p, t == 1 ? 0 : t < 4 ? p - 100 : 10);
    rows.add_turn(3, t, t * 1000.0, t * 1000.0 + 100, p, t == 1 ? 0 : t < 3 ? p - 100 : 0);
    if (t <= 2) rows.add_turn(4, t, t * 1000.0, t * 1000.0 + 100, p, 0);
    if (t == 2) rows.storage.back().outcome_index = RowNames::index("http_error");  // conversation 4's turn 2 failed
  }
  const auto v = turns_of(rows.list, TurnContext{&rows.sessions, nullptr});
  ASSERT_TRUE(v && v->collapse);
  EXPECT_EQ(v->collapse->conversations, 3u);  // two turns are too few to judge
  EXPECT_EQ(v->collapse->collapsed, 2u);
  EXPECT_EQ(v->collapse->from_turn, (std::map<std::uint16_t, std::size_t>{{3, 1}, {4, 1}}));
  EXPECT_EQ(collapse_sentence(*v->collapse),
            "2 of 3 conversations of three or more turns lose their own cache from turn 3 (1), turn 4 (1)");
  EXPECT_EQ(v->turns[1].errors, 1u);
  EXPECT_EQ(v->turns[0].errors, 0u);
  const auto j = turns_json(v);
  EXPECT_NE(j.find(R"("conversations":{"conversations":3,"collapsed":2,"from_turn":{"3":1,"4":1}})"), std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("turn":2,"requests":4,"errors":1)"), std::string::npos) << j;
  // Without the session index there are no conversations to count.
  EXPECT_FALSE(turns_of(rows.list)->collapse);
  EXPECT_FALSE(v->failure_cliff);  // turn 2 failed once, not every request from it on
}

TEST(ReportTurns, EveryRequestFailingFromATurnOnIsAFailureCliff) {
  Rows rows;
  for (std::uint16_t t = 1; t <= 6; ++t) {
    for (int s = 0; s < 2; ++s) {
      rows.add(t, 100, 150 * t, 0);
      if (t >= 4) rows.storage.back().outcome_index = RowNames::index("http_error");
    }
  }
  const auto v = turns_of(rows.list);
  ASSERT_TRUE(v && v->failure_cliff);
  EXPECT_EQ(v->failure_cliff->from_turn, 4);
  EXPECT_EQ(v->failure_cliff->failed, 6u);
  EXPECT_EQ(failure_cliff_sentence(*v->failure_cliff),
            "turn 4 onward: every request failed (6 requests), where the turns before it succeeded");
  EXPECT_NE(turns_json(v).find(R"("failure_cliff":{"from_turn":4,"failed":6})"), std::string::npos);
  // Everything failing from the first turn is no cliff: nothing ever succeeded.
  for (auto& r : rows.storage) r.outcome_index = RowNames::index("http_error");
  EXPECT_FALSE(turns_of(rows.list)->failure_cliff);
}

}  // namespace
}  // namespace mpo::report
