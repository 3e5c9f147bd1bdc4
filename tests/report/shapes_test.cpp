// The report by prompt length (report/shapes.hpp): bands of powers of four, shown only where the
// rows mix shapes. Invented rows (the edge cases of the rule); the real engine's mix is
// RealLlamaCppVerdicts.AMixOfShortAndLongPromptsIsJudgedBandByBand (tests/integration).
#include "report/shapes.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <utility>

namespace mpo::report {
namespace {

struct Rows {
  std::deque<Row> storage;
  RowList list;
  void add(int n, std::int32_t prompt, double ttft, bool ok = true) {
    for (int i = 0; i < n; ++i) {
      Row r;
      r.outcome_index = ok ? RowNames::kOk : RowNames::index("http_error");
      r.prompt_tokens = std::optional<std::int32_t>(prompt);
      r.completion_tokens = std::optional<std::int32_t>(8);
      r.ttft_ms = std::optional<double>(ttft);
      storage.push_back(r);
      list.push_back(&storage.back());
    }
  }
};

TEST(PromptBands, ShortAndLongPromptsAreBandedByPowersOfFour) {
  Rows rows;
  rows.add(6, 30, 40);
  rows.add(6, 1400, 1300);
  rows.add(1, 70000, 9000, false);  // too few to rank, still shown
  const auto bands = prompt_length_bands(rows.list);
  ASSERT_EQ(bands.size(), 3u);
  EXPECT_EQ(bands[0].first.from, 0);
  EXPECT_EQ(bands[0].first.to, 64);
  EXPECT_EQ(bands[1].first.from, 1024);
  EXPECT_EQ(bands[1].first.to, 4096);
  EXPECT_EQ(bands[1].second.size(), 6u);
  EXPECT_DOUBLE_EQ(bands[1].first.ttft_ms->p50, 1300);
  EXPECT_EQ(bands[2].first.from, 65536);
  EXPECT_EQ(bands[2].first.to, 0);  // no upper end
  EXPECT_EQ(bands[2].first.errors, 1u);
  EXPECT_EQ(prompt_band_sentence(bands[2].first), "prompts of 65536+ tokens (1 request): too few requests to rank");
  EXPECT_EQ(prompt_band_sentence(bands[0].first), "prompts of 0-63 tokens (6 requests): nothing crosses its threshold");
  const auto rows_text = prompt_band_rows({bands[0].first, bands[1].first});
  EXPECT_EQ(rows_text[1][0], "1024-4095");
  EXPECT_EQ(rows_text[1][3], "1400");
}

TEST(PromptBands, OneShapeOrNeighbouringLengthsAreNoMix) {
  Rows one;
  one.add(20, 500, 100);
  EXPECT_TRUE(prompt_length_bands(one.list).empty());
  Rows near;  // two bands, but 250 and 300 tokens are one shape
  near.add(10, 250, 100);
  near.add(10, 300, 110);
  EXPECT_TRUE(prompt_length_bands(near.list).empty());
  Rows lonely;  // a long prompt or two beside many short ones: not a band to judge
  lonely.add(20, 30, 40);
  lonely.add(4, 3000, 2000);
  EXPECT_TRUE(prompt_length_bands(lonely.list).empty());
  Rows spread;  // prompts spread evenly over 32-2031 tokens: one shape, however wide
  for (int i = 0; i < 200; ++i) spread.add(1, 32 + 10 * i, 100);
  EXPECT_TRUE(prompt_length_bands(spread.list).empty());
  Rows even;  // the demo's prompts: 58 to 258 tokens in even steps; three bands, medians 4.4x apart,
              // but no valley between them (14, 17, 44 and 11 prompts in bins of a factor of two)
  for (const auto& [n, prompt] : {std::pair{14, 58}, {17, 98}, {17, 138}, {15, 178}, {12, 218}, {11, 258}}) {
    even.add(n, prompt, 300);
  }
  EXPECT_TRUE(prompt_length_bands(even.list).empty());
  Rows few;  // 6 long prompts among 200 short ones: under a tenth of the traffic, not a shape of it
  few.add(200, 30, 40);
  few.add(6, 3000, 2000);
  EXPECT_TRUE(prompt_length_bands(few.list).empty());
  Rows unknown;  // lines that do not say their prompt length are left out
  unknown.add(10, 30, 40);
  unknown.storage.emplace_back();
  unknown.list.push_back(&unknown.storage.back());
  EXPECT_TRUE(prompt_length_bands(unknown.list).empty());
}

// Two shapes in bands side by side are a mix where the prompts thin out between them: questions of
// 20-39 tokens and contexts of 150-245 (nothing between); with prompts filling the range between
// them evenly, the bands' medians still 5.6x apart, they are one shape.
TEST(PromptBands, ShapesInNeighbouringBandsAreAMixWhereTheyHaveAValleyBetween) {
  Rows apart;
  for (int i = 0; i < 20; ++i) apart.add(1, 20 + i, 40);
  for (int i = 0; i < 20; ++i) apart.add(1, 150 + 5 * i, 300);
  const auto bands = prompt_length_bands(apart.list);
  ASSERT_EQ(bands.size(), 2u);
  EXPECT_EQ(bands[0].first.requests, 20u);
  Rows filled = apart;
  filled.list.clear();
  for (auto& r : filled.storage) filled.list.push_back(&r);
  for (int i = 0; i < 13; ++i) filled.add(1, 45 + 8 * i, 150);  // 45 to 141 tokens, evenly: medians 31 and
  EXPECT_TRUE(prompt_length_bands(filled.list).empty());        // 172.5 (5.6x), 11 and 8 prompts between
}

// Prompts spread evenly over decades (an agent's tool results of every size, 16 to 16,383 tokens:
// as many in each factor of two) have no valley, but their outer shapes' medians are far more than
// 16x apart: quantiles over them would blend costs a thousand times apart, so they are banded.
TEST(PromptBands, PromptsSpreadOverDecadesAreBandedWithoutAValley) {
  Rows wide;
  for (int bit = 4; bit < 14; ++bit) {
    for (int i = 0; i < 20; ++i) wide.add(1, (1 << bit) + i * (1 << bit) / 20, 100.0 * bit);
  }
  const auto bands = prompt_length_bands(wide.list);
  ASSERT_GE(bands.size(), 4u);
  EXPECT_EQ(bands.front().first.from, 0);
  EXPECT_EQ(bands.back().first.from, 4096);
}

TEST(PromptBands, TheJsonSaysEachBandAndItsVerdict) {
  PromptBand b;
  b.from = 1024;
  b.to = 4096;
  b.requests = 5;
  b.candidate = "prefill";
  b.score = 2.5;
  b.evidence = "the engine's prefill took 1273.0 ms p50";
  PromptBand open;
  open.from = 65536;
  open.requests = 1;
  EXPECT_EQ(prompt_bands_json({b, open}),
            R"([{"from_tokens":1024,"to_tokens":4096,"requests":5,"errors":0,"prompt_tokens_p50":null,)"
            R"("completion_tokens_p50":null,"ttft_p50_ms":null,"ttft_p99_ms":null,"tpot_p50_ms":null,)"
            R"("tpot_p99_ms":null,"itl_p95_p99_ms":null,"e2e_p99_ms":null,"likely_bottleneck":"prefill","score":2.5,)"
            R"("evidence":"the engine's prefill took 1273.0 ms p50"},)"
            R"({"from_tokens":65536,"to_tokens":null,"requests":1,"errors":0,"prompt_tokens_p50":null,)"
            R"("completion_tokens_p50":null,"ttft_p50_ms":null,"ttft_p99_ms":null,"tpot_p50_ms":null,)"
            R"("tpot_p99_ms":null,"itl_p95_p99_ms":null,"e2e_p99_ms":null,"likely_bottleneck":null}])");
  EXPECT_EQ(prompt_bands_json({}), "[]");
}

}  // namespace
}  // namespace mpo::report
