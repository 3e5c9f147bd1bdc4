// Speculative decoding from the lines' draft counts (report/speculation.hpp). Invented rows (the
// edge cases of the rule); the real engine's are RealLlamaCppVerdicts.SpeculativeDecodingWhoseDraft
// IsRejectedIsNamedFromTheEnginesDraftCounts (tests/integration).
#include "report/speculation.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace mpo::report {
namespace {

struct Rows {
  std::deque<Row> storage;
  RowList list;
  DraftIndex drafts;
  // An ok streamed request of `tokens` output tokens at `tpot` ms a token, `drafted` draft tokens of
  // which `accepted` were kept.
  Row& add(int tokens, double tpot, std::optional<std::int32_t> drafted, std::optional<std::int32_t> accepted) {
    Row r;
    r.outcome_index = RowNames::kOk;
    r.stream = true;
    r.completion_tokens = std::optional<std::int32_t>(tokens);
    r.tpot_ms = std::optional<double>(tpot);
    storage.push_back(r);
    list.push_back(&storage.back());
    if (drafted) drafts[&storage.back()] = DraftCounts{*drafted, accepted.value_or(0)};
    return storage.back();
  }
};

TEST(Speculation, RequestsWhoseDraftsAreRejectedAreToldFromThoseWhoseAreKept) {
  Rows rows;
  // Greedy: 41 tokens, 30 of 33 drafts kept: 40 tokens after the first in 10 steps.
  for (int i = 0; i < 3; ++i) rows.add(41, 5.6, 33, 30);
  // Sampled: 41 tokens, 1 of 120 drafts kept: 40 in 39 steps.
  for (int i = 0; i < 3; ++i) rows.add(41, 20.2, 120, 1);
  rows.add(41, 4.0, std::nullopt, std::nullopt);  // no draft: not counted
  const auto s = speculation_of(rows.list, rows.drafts);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->requests, 6u);
  EXPECT_EQ(s->drafted, 3 * 33 + 3 * 120);
  EXPECT_EQ(s->accepted, 3 * 30 + 3 * 1);
  EXPECT_DOUBLE_EQ(s->tokens_per_step, 240.0 / (240 - 93));
  EXPECT_EQ(s->low, 3u);
  EXPECT_EQ(s->high, 3u);
  EXPECT_DOUBLE_EQ(*s->low_pace_p50_ms, 20.2);
  EXPECT_DOUBLE_EQ(*s->high_pace_p50_ms, 5.6);
  EXPECT_TRUE(s->low_is_slower());
  EXPECT_FALSE(s->gained_nothing());
  EXPECT_TRUE(s->worth_saying());
  const auto text = speculation_sentence(*s);
  EXPECT_NE(text.find("the 3 that accepted under 20% of their drafts decoded at 20.2 ms a token (p50) against 5.6 ms"),
            std::string::npos)
      << text;
}

TEST(Speculation, ADraftThatIsNeverAcceptedGainsNothing) {
  Rows rows;
  for (int i = 0; i < 4; ++i) rows.add(40, 10, 111, 0);
  const auto s = speculation_of(rows.list, rows.drafts);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->acceptance(), 0);
  EXPECT_DOUBLE_EQ(s->tokens_per_step, 1);
  EXPECT_TRUE(s->gained_nothing());
  EXPECT_FALSE(s->high_pace_p50_ms.has_value());  // nothing to compare with
  EXPECT_FALSE(s->low_is_slower());
  EXPECT_NE(
      speculation_sentence(*s).find("0.0% of them, 1.00 tokens per verification step: it gained next to no token"),
      std::string::npos);
  EXPECT_NE(speculation_json(s).find(R"("gained_nothing":true)"), std::string::npos) << speculation_json(s);
}

TEST(Speculation, NothingIsSaidWithoutDraftsEnoughOrALoss) {
  Rows none;
  for (int i = 0; i < 5; ++i) none.add(40, 5, std::nullopt, std::nullopt);
  EXPECT_FALSE(speculation_of(none.list, none.drafts).has_value());
  EXPECT_EQ(speculation_json(std::nullopt), "null");
  Rows few;  // two drafting requests: too few
  few.add(40, 5, 30, 28);
  few.add(40, 5, 30, 28);
  EXPECT_FALSE(speculation_of(few.list, few.drafts).has_value());
  Rows good;  // every draft mostly kept: nothing worth a line of its own
  for (int i = 0; i < 4; ++i) good.add(41, 3, 33, 30);
  const auto s = speculation_of(good.list, good.drafts);
  ASSERT_TRUE(s.has_value());
  EXPECT_FALSE(s->worth_saying());
  Rows failed;  // a failed request's counts are not the engine's whole work: left out
  for (int i = 0; i < 3; ++i) failed.add(40, 5, 30, 0).outcome_index = RowNames::index("http_error");
  EXPECT_FALSE(speculation_of(failed.list, failed.drafts).has_value());
}

TEST(Speculation, DraftCountsAreReadFromTheTimingsObject) {
  const std::string_view t =
      R"({"cache_n":0,"prompt_n":10,"prompt_ms":8.8,"predicted_n":40,"predicted_ms":399.5,"draft_n":111,"draft_n_accepted":0})";
  EXPECT_EQ(timings_count(t, "\"draft_n\":"), 111);
  EXPECT_EQ(timings_count(t, "\"draft_n_accepted\":"), 0);
  EXPECT_FALSE(timings_count(t, "\"prompt_ms\":").has_value());  // not a whole number
  EXPECT_FALSE(timings_count(R"({"draft_n":-3})", "\"draft_n\":").has_value());
  EXPECT_FALSE(timings_count(R"({"draft_n":99999999999})", "\"draft_n\":").has_value());
  EXPECT_FALSE(timings_count(R"({"prompt_n":10})", "\"draft_n\":").has_value());
}

}  // namespace
}  // namespace mpo::report
