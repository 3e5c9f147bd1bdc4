// Before and after: the bootstrap comparison calls two samples of one distribution unchanged in
// at most about 5% of runs (over a whole group's comparisons), finds a known shift, and gates
// only what is significant and beyond its bound.
#include "report/compare.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>

namespace mpo::report {
namespace {

// Rows of one group "m": lognormal TTFT/TPOT/ITL/e2e (a long right tail, as latencies have), scaled
// by `shift`, and an error share.
struct Sample {
  std::deque<Row> rows;
  RowList ptrs;
};
Sample sample(std::size_t n, std::uint64_t seed, double ttft_shift = 1.0, double error_share = 0.0) {
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ttft(std::log(200.0), 0.4), tpot(std::log(20.0), 0.2), e2e(std::log(2000.0), 0.3);
  std::bernoulli_distribution error(error_share);
  Sample s;
  for (std::size_t i = 0; i < n; ++i) {
    Row r;
    r.outcome_index = RowNames::index(error(rng) ? "http_error" : "ok");
    r.ttft_ms = std::optional<double>(ttft(rng) * ttft_shift);
    r.tpot_ms = std::optional<double>(tpot(rng));
    r.itl_p95_ms = std::optional<double>(tpot(rng) * 1.5);
    r.e2e_ms = std::optional<double>(e2e(rng));
    s.rows.push_back(r);
  }
  for (const auto& r : s.rows) s.ptrs.push_back(&r);
  return s;
}

GroupRows rows_of(const Sample& s) { return {{std::string_view("m"), s.ptrs}}; }

const compare::Change& change(const Comparison& c, std::string_view metric) {
  for (const auto& x : c.groups.at(0).changes) {
    if (x.metric == metric) return x;
  }
  throw std::runtime_error("no such metric");
}

TEST(Compare, TwoSamplesOfOneRunAreRarelyCalledChanged) {
  constexpr int kRuns = 40;
  int flagged = 0;
  for (int seed = 1; seed <= kRuns; ++seed) {
    const auto a = sample(150, 1000 + seed), b = sample(150, 5000 + seed);
    const auto c = compare_runs(rows_of(a), rows_of(b), {2000, static_cast<std::uint64_t>(seed), 0.05}, {});
    bool any = false;
    for (const auto& x : c.groups.at(0).changes) any = any || x.verdict == "worse" || x.verdict == "better";
    flagged += any ? 1 : 0;
  }
  // The family's rate is 5% by construction (Bonferroni is conservative); 3 of 40 allows noise.
  EXPECT_LE(flagged, 3) << flagged << " of " << kRuns << " identical pairs were called changed";
}

TEST(Compare, AKnownShiftIsFoundAndGated) {
  int found = 0;
  for (int seed = 1; seed <= 10; ++seed) {
    const auto a = sample(150, 100 + seed), b = sample(150, 900 + seed, 1.4);
    const auto bounds = *parse_regression_bounds("ttft_p50_ms=10%,e2e_p50_ms=50%");
    const auto c = compare_runs(rows_of(a), rows_of(b), {2000, static_cast<std::uint64_t>(seed), 0.05}, bounds);
    const auto& t = change(c, "ttft_p50_ms");
    if (t.verdict == "worse") {
      ++found;
      EXPECT_TRUE(t.beyond_bound);
      EXPECT_GT(*t.ci_lo, 0);
      ASSERT_FALSE(c.gate_failures.empty());
      EXPECT_NE(c.gate_failures[0].find("m ttft_p50_ms: +"), std::string::npos) << c.gate_failures[0];
    }
    EXPECT_FALSE(change(c, "e2e_p50_ms").beyond_bound);              // unchanged: never gated
    EXPECT_EQ(change(c, "ttft_p99_ms").verdict, "not enough data");  // 150 values: no p99 estimate
  }
  EXPECT_GE(found, 9) << "a 40% TTFT shift found in " << found << " of 10 runs";
}

TEST(Compare, ABoundNotReachedIsNotAGateFailure) {
  const auto a = sample(150, 1), b = sample(150, 2, 1.4);
  const auto c = compare_runs(rows_of(a), rows_of(b), {2000, 1, 0.05}, *parse_regression_bounds("ttft_p50_ms=80%"));
  EXPECT_EQ(change(c, "ttft_p50_ms").verdict, "worse");
  EXPECT_FALSE(change(c, "ttft_p50_ms").beyond_bound);
  EXPECT_TRUE(c.gate_failures.empty());
}

TEST(Compare, ErrorRateInPercentagePoints) {
  const auto a = sample(200, 1), b = sample(200, 2, 1.0, 0.2);
  const auto c = compare_runs(rows_of(a), rows_of(b), {2000, 1, 0.05}, *parse_regression_bounds("error_rate=5pp"));
  const auto& e = change(c, "error_rate");
  EXPECT_EQ(e.verdict, "worse");
  EXPECT_DOUBLE_EQ(*e.a, 0.0);
  EXPECT_NEAR(*e.b, 0.2, 0.06);
  EXPECT_TRUE(e.beyond_bound);
  EXPECT_NE(render_comparison_md(c).find("Regressions beyond --max-regression"), std::string::npos);
}

TEST(Compare, GroupsOnOneSideAreListed) {
  const auto a = sample(50, 1);
  Sample b = sample(50, 2);
  const GroupRows base = rows_of(a);
  const GroupRows next = {{std::string_view("other"), b.ptrs}};
  const auto c = compare_runs(base, next, {2000, 1, 0.05}, {});
  EXPECT_TRUE(c.groups.empty());
  EXPECT_EQ(c.only_in_baseline, std::vector<std::string>{"m"});
  EXPECT_EQ(c.only_in_new, std::vector<std::string>{"other"});
}

TEST(Compare, BoundsAreParsedStrictly) {
  auto b = parse_regression_bounds("ttft_p95_ms=10%,e2e_p99_ms=200,error_rate=0.5pp");
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->size(), 3u);
  EXPECT_EQ((*b)[0].kind, RegressionBound::Kind::kRelative);
  EXPECT_EQ((*b)[1].kind, RegressionBound::Kind::kAbsolute);
  EXPECT_EQ((*b)[2].kind, RegressionBound::Kind::kPoints);
  EXPECT_DOUBLE_EQ((*b)[2].limit, 0.5);
  EXPECT_FALSE(parse_regression_bounds("ttft_p42_ms=10%"));
  EXPECT_FALSE(parse_regression_bounds("error_rate=1%"));
  EXPECT_FALSE(parse_regression_bounds("ttft_p95_ms=1pp"));
  EXPECT_FALSE(parse_regression_bounds("ttft_p95_ms"));
  EXPECT_FALSE(parse_regression_bounds("ttft_p95_ms=-3"));
  EXPECT_FALSE(parse_regression_bounds("ttft_p95_ms=inf"));
}

}  // namespace
}  // namespace mpo::report

namespace mpo::report {
namespace {

// A new run whose slowest clients gave up in the queue (client_disconnected before a first token)
// has survivors faster than the baseline's slowest: TTFT p99 read on them alone came out "better".
// Where the requests given up could move a quantile it is not judged, and a gate on it cannot pass.
TEST(Compare, RequestsGivenUpLeaveTheQuantilesTheyCouldMoveOpen) {
  const auto base = sample(1000, 11);
  auto next = sample(1000, 12);
  for (std::size_t i = 0; i < 30; ++i) {  // 3% left after 5 s in the queue, slower than any TTFT served
    Row& r = next.rows[i];
    r.outcome_index = RowNames::index("client_disconnected");
    r.stream = true;
    r.ttft_ms = std::optional<double>();
    r.tpot_ms = std::optional<double>();
    r.itl_p95_ms = std::optional<double>();
    r.e2e_ms = std::optional<double>(5000.0);
  }
  std::vector<RegressionBound> bounds{{"ttft_p99_ms", 10, RegressionBound::Kind::kRelative},
                                      {"ttft_p50_ms", 10, RegressionBound::Kind::kRelative}};
  const auto c = compare_runs(rows_of(base), rows_of(next), {2000, 1, 0.05}, bounds);
  const auto& p99 = change(c, "ttft_p99_ms");
  EXPECT_EQ(p99.verdict, "requests given up leave it open");
  EXPECT_FALSE(p99.delta.has_value());
  EXPECT_EQ(p99.n_b, 1000u);  // the 30 counted, at their waits
  ASSERT_EQ(c.ungated.size(), 1u);
  EXPECT_NE(c.ungated[0].find("ttft_p99_ms: requests given up leave it open"), std::string::npos) << c.ungated[0];
  // The median lies below every wait: given up or never served, the 30 sit above it.
  const auto& p50 = change(c, "ttft_p50_ms");
  EXPECT_TRUE(p50.delta.has_value());
  EXPECT_NE(p50.verdict, "requests given up leave it open");
  // Without them the same runs are compared as before: nothing is open.
  const auto plain = compare_runs(rows_of(base), rows_of(sample(1000, 12)), {2000, 1, 0.05}, bounds);
  EXPECT_TRUE(change(plain, "ttft_p99_ms").delta.has_value());
  EXPECT_TRUE(plain.ungated.empty());
}

// Reruns pooled (report --reruns): each side one ordinary run and one whose TTFT is 30% slower (a
// noisy machine, no engine change). One run a side, the slow against the fast, is called worse;
// the two runs pooled on each side are not, as the interval carries how much reruns differ. A real
// change (every run of the new side twice as slow) is still worse.
TEST(Compare, RerunsPooledCarryTheirVariation) {
  const auto fast_a = sample(200, 11), slow_a = sample(200, 12, 1.3), fast_b = sample(200, 13),
             slow_b = sample(200, 14, 1.3);
  const auto one = compare_runs(rows_of(fast_a), rows_of(slow_b), {2000, 1, 0.05}, {});
  EXPECT_EQ(change(one, "ttft_p50_ms").verdict, "worse");
  EXPECT_EQ(one.runs_baseline, 1u);
  const GroupRows a1 = rows_of(fast_a), a2 = rows_of(slow_a), b1 = rows_of(fast_b), b2 = rows_of(slow_b);
  const auto pooled = compare_reruns({&a1, &a2}, {&b1, &b2}, {2000, 1, 0.05}, {});
  EXPECT_EQ(pooled.runs_baseline, 2u);
  EXPECT_EQ(pooled.runs_new, 2u);
  EXPECT_EQ(change(pooled, "ttft_p50_ms").verdict, "no significant change");
  EXPECT_EQ(change(pooled, "ttft_p50_ms").n_a, 400u);
  EXPECT_NE(render_comparison_md(pooled).find("2 runs of the baseline and 2 of the new: each interval resamples the "
                                              "runs and then the requests within them"),
            std::string::npos);
  EXPECT_NE(render_comparison_json(pooled).find(R"("runs_baseline":2,"runs_new":2)"), std::string::npos);
  const auto twice_1 = sample(200, 15, 2.6), twice_2 = sample(200, 16, 2.0);
  const GroupRows c1 = rows_of(twice_1), c2 = rows_of(twice_2);
  const auto real = compare_reruns({&a1, &a2}, {&c1, &c2}, {2000, 1, 0.05}, {});
  EXPECT_EQ(change(real, "ttft_p50_ms").verdict, "worse");
  // Reruns on one side only.
  const auto lopsided = compare_reruns({&a1, &a2}, {&b1}, {2000, 1, 0.05}, {});
  EXPECT_NE(render_comparison_md(lopsided).find("2 runs of the baseline and 1 of the new: the side with one run "
                                                "carries no rerun's variation"),
            std::string::npos);
}

}  // namespace
}  // namespace mpo::report
