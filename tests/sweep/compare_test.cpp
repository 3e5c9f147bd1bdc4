// `sweep compare` (issue 25): two receipts of one workload point by point. Receipts are built here
// from samples drawn from known distributions (invented: the point is to know the truth), so the
// false-positive rate over many pairs and the power on a known shift can be counted.
#include "sweep/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "support/html_page.hpp"

namespace mpo::sweep {
namespace {

// A receipt of three points (concurrency 1, 4, 16), `n` requests each: TTFT lognormal around 100 ms
// x `ttft_scale` x sqrt(concurrency), four gaps of about 20 ms, 1-9 output tokens; throughput =
// tokens over a wall time that grows with `ttft_scale`.
SweepReceipt receipt(std::uint64_t seed, double ttft_scale, std::size_t n = 300, std::string digest = "sha256:w",
                     std::optional<double> knee = 4) {
  SweepReceipt r;
  r.model = "m";
  r.mode = loadgen::LoadMode::kConcurrency;
  r.workload_digest = digest;
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> ttft(std::log(100.0), 0.3), gap(std::log(20.0), 0.2);
  std::uniform_int_distribution<int> tokens(1, 9);
  for (double c : {1.0, 4.0, 16.0}) {
    Point p;
    p.coordinate = c;
    p.workload_digest = digest;
    TrackPoint tp;
    tp.track = "ours";
    tp.status = "valid";
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      loadgen::Sample s;
      s.ok = true;
      s.ttft_ms = ttft(rng) * ttft_scale * std::sqrt(c);
      double e2e = *s.ttft_ms;
      for (int g = 0; g < 4; ++g) {
        s.itl_ms.push_back(gap(rng));
        e2e += s.itl_ms.back();
      }
      s.end_to_end_ms = e2e;
      s.output_tokens_exact = tokens(rng);
      total += static_cast<double>(*s.output_tokens_exact);
      tp.samples.push_back(s);
    }
    tp.stats.throughput_tok_s = ScalarMetric::of(total / (30.0 * ttft_scale), "tok/s");
    p.tracks.push_back(std::move(tp));
    r.points.push_back(std::move(p));
  }
  TrackSummary t;
  t.track = "ours";
  t.saturation.knee = knee;
  r.tracks.push_back(t);
  return r;
}

SweepCompareOptions fast(std::uint64_t seed) {
  SweepCompareOptions o;
  o.resamples = 400;
  o.seed = seed;
  return o;
}

const compare::Change& change(const PointComparison& p, const std::string& metric) {
  for (const auto& c : p.changes) {
    if (c.metric == metric) return c;
  }
  throw std::runtime_error("no metric " + metric);
}

TEST(SweepCompare, TwoRunsOfOneEngineAreCalledChangedInAboutFivePercentOfPointsAtMost) {
  int flagged = 0, families = 0;
  for (std::uint64_t pair = 0; pair < 40; ++pair) {
    const auto c = compare_sweeps(receipt(2 * pair + 1, 1.0), receipt(2 * pair + 2, 1.0), fast(pair));
    ASSERT_TRUE(c.ok()) << c.error().message;
    for (const auto& p : c->points) {
      ++families;
      bool any = false;
      for (const auto& x : p.changes) any = any || x.verdict == "better" || x.verdict == "worse";
      flagged += any ? 1 : 0;
    }
  }
  EXPECT_EQ(families, 120);
  std::printf("flagged %d of %d point families\n", flagged, families);
  // Bonferroni keeps each point's family at 5% or less: about 6 of 120 expected at worst.
  EXPECT_LE(flagged, 10) << flagged << " of " << families;
}

TEST(SweepCompare, ASlowerEngineIsFoundWorseAtEveryPoint) {
  int found = 0;
  for (std::uint64_t pair = 0; pair < 10; ++pair) {
    const auto c = compare_sweeps(receipt(100 + pair, 1.0), receipt(200 + pair, 1.4), fast(pair));
    ASSERT_TRUE(c.ok());
    for (const auto& p : c->points) {
      found += change(p, "ttft_p50_ms").verdict == "worse" ? 1 : 0;
      EXPECT_EQ(change(p, "throughput_tok_s").verdict, "worse");  // 1/1.4 of the tokens per second
      EXPECT_GT(*change(p, "throughput_tok_s").a, *change(p, "throughput_tok_s").b);
    }
  }
  EXPECT_GE(found, 28);  // of 30 points
}

// B's slowest requests at concurrency 16 timed out before their first token (the generator's own
// limit): read on the rest, its TTFT p99 came out better than A's, which served its slowest. Where
// the timeouts could move a quantile it is not judged.
TEST(SweepCompare, RequestsThatTimedOutLeaveTheQuantilesTheyCouldMoveOpen) {
  const auto a = receipt(31, 1.0, 1000);
  auto b = receipt(32, 1.0, 1000);
  auto& samples = b.points[2].tracks[0].samples;  // concurrency 16
  for (std::size_t i = 0; i < 30; ++i) {
    loadgen::Sample& s = samples[i];
    s = loadgen::Sample{};
    s.ok = false;
    s.error_class = "timeout";
    s.error = "header: no complete response within the timeout (5 s)";
    s.end_to_end_ms = 5000;
  }
  const auto c = compare_sweeps(a, b, fast(1));
  ASSERT_TRUE(c.ok()) << c.error().message;
  const auto& at16 = c->points[2];
  EXPECT_EQ(change(at16, "ttft_p99_ms").verdict, "requests timed out leave it open");
  EXPECT_FALSE(change(at16, "ttft_p99_ms").delta.has_value());
  EXPECT_EQ(change(at16, "e2e_p99_ms").verdict, "requests timed out leave it open");
  EXPECT_NE(change(at16, "ttft_p50_ms").verdict, "requests timed out leave it open");          // below every wait
  EXPECT_NE(change(c->points[0], "ttft_p99_ms").verdict, "requests timed out leave it open");  // none timed out
}

TEST(SweepCompare, AP99FromTooFewRequestsIsNotEnoughData) {
  const auto c = compare_sweeps(receipt(1, 1.0, 300), receipt(2, 1.0, 300), fast(1));
  ASSERT_TRUE(c.ok());
  const auto& p = c->points.front();
  EXPECT_EQ(change(p, "ttft_p99_ms").verdict, "not enough data");  // 300 x 1% = 3 beyond the p99
  EXPECT_NE(change(p, "itl_p99_ms").verdict, "not enough data");   // 1,200 gaps
  const auto big = compare_sweeps(receipt(1, 1.0, 600), receipt(2, 1.0, 600), fast(1));
  EXPECT_NE(change(big->points.front(), "ttft_p99_ms").verdict, "not enough data");
}

TEST(SweepCompare, DifferentWorkloadsAreRefusedUnlessAllowedAndAKneeThatMovedIsSaid) {
  const auto a = receipt(1, 1.0, 300, "sha256:aaa", 4);
  const auto b = receipt(2, 1.0, 300, "sha256:bbb", 16);
  const auto refused = compare_sweeps(a, b, fast(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("A sha256:aaa, B sha256:bbb"), std::string::npos);
  EXPECT_NE(refused.error().message.find("--allow-different-workload"), std::string::npos);
  auto o = fast(1);
  o.allow_different_workload = true;
  const auto c = compare_sweeps(a, b, o);
  ASSERT_TRUE(c.ok());
  ASSERT_FALSE(c->notes.empty());
  EXPECT_EQ(c->moved.front().what, "saturation knee");
  EXPECT_EQ(c->moved.front().verdict, "moved up");
  EXPECT_EQ(c->moved[1].verdict, "in neither");  // no peak in either
  auto other = b;
  other.mode = loadgen::LoadMode::kRate;
  EXPECT_FALSE(compare_sweeps(a, other, o).ok());
}

// Against a real llama-server, a second sweep of the same workload found its prompts in the prefix
// cache the first had filled and came out "better" (throughput +30% at concurrency 1): where the
// receipts measured different cached shares, the comparison says so and how to compare cold.
TEST(SweepCompare, APointWhereThePrefixCacheServedDifferentSharesIsNoted) {
  auto a = receipt(1, 1.0);
  auto b = receipt(2, 0.7);
  auto cache = [](double share) {
    CacheEvidence e;
    e.status = "measured";
    e.cached_share = share;
    return e;
  };
  for (std::size_t i = 0; i < a.points.size(); ++i) {
    a.points[i].tracks[0].evidence.cache = cache(0.0);
    b.points[i].tracks[0].evidence.cache = cache(i == 0 ? 0.05 : 0.62);  // 5 points apart at 1: no note
  }
  const auto c = compare_sweeps(a, b, fast(1));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->notes.size(), 2u);  // the cache's, then one run per side (always said)
  EXPECT_NE(c->notes[0].find("at concurrency 4 (A 0%, B 62%), 16 (A 0%, B 62%)"), std::string::npos) << c->notes[0];
  EXPECT_EQ(c->notes[1].rfind("one receipt per side", 0), 0u) << c->notes[1];
  EXPECT_NE(c->notes[0].find("--reset-cache-between-points"), std::string::npos);
  EXPECT_NE(sweep_comparison_md(*c).find("- note: the prefix cache served"), std::string::npos);
  b.points[1].tracks[0].evidence.cache->status = "not_measured";  // unmeasured is not a difference
  b.points[2].tracks[0].evidence.cache.reset();
  EXPECT_EQ(compare_sweeps(a, b, fast(1))->notes.size(), 1u);
}

// Issue 38: two identically configured sweeps came out "better" at 2 of 3 points, because the
// interval resampled requests within one run. Reruns pooled per side: the runs are resampled first,
// so a difference between reruns is in the interval.
TEST(SweepCompare, RerunsPooledPerSideCarryRunToRunVariation) {
  // Each side has one fast run and one slow run (30% apart): no engine change, only rerun noise.
  const auto a1 = receipt(1, 1.0), a2 = receipt(2, 1.3), b1 = receipt(3, 1.3), b2 = receipt(4, 1.0);
  const auto one = compare_sweeps(a1, b1, fast(1));
  ASSERT_TRUE(one.ok());
  std::size_t worse = 0;
  for (const auto& p : one->points)
    for (const auto& m : p.changes) worse += m.metric == "ttft_p50_ms" && m.verdict == "worse";
  EXPECT_EQ(worse, 3u);  // one run a side: the slower rerun reads as a regression at every point
  // The TTFT p50 verdict at every point.
  auto ttft_p50 = [](const SweepComparison& c) {
    std::vector<std::string> out;
    for (const auto& p : c.points)
      for (const auto& m : p.changes)
        if (m.metric == "ttft_p50_ms") out.push_back(m.verdict);
    return out;
  };
  const auto pooled = compare_sweep_runs({&a1, &a2}, {&b1, &b2}, fast(1));
  ASSERT_TRUE(pooled.ok());
  EXPECT_EQ(ttft_p50(*pooled), std::vector<std::string>(3, "no significant change"));
  EXPECT_EQ(pooled->runs_a, 2u);
  EXPECT_NE(pooled->notes.back().find("2 runs of A and 2 of B"), std::string::npos) << pooled->notes.back();
  // A real change still shows through the reruns' noise.
  const auto c1 = receipt(5, 2.6), c2 = receipt(6, 2.0);
  const auto slower = compare_sweep_runs({&a1, &a2}, {&c1, &c2}, fast(1));
  ASSERT_TRUE(slower.ok());
  EXPECT_EQ(ttft_p50(*slower), std::vector<std::string>(3, "worse"));
  // Reruns on one side only: the note says the other side carries no rerun's variation.
  const auto lopsided = compare_sweep_runs({&a1, &a2}, {&b1}, fast(1));
  ASSERT_TRUE(lopsided.ok());
  EXPECT_EQ(lopsided->notes.back().rfind("2 runs of A and 1 of B: the side with one run carries no rerun's", 0), 0u)
      << lopsided->notes.back();
  // Runs of different workloads are not reruns.
  const auto other = receipt(7, 1.0, 300, "sha256:other");
  EXPECT_FALSE(compare_sweep_runs({&a1, &other}, {&b1}, fast(1)).ok());
}

// Issue 38: eight requests a point, every row "not enough data", and the findings still said
// "peak 4 -> 2, moved down". A move is stated only where a row at its points was judged.
TEST(SweepCompare, NoFindingFromRowsThatCouldNotBeJudged) {
  auto a = receipt(1, 1.0, 2, "sha256:w", 4);  // two requests a point: nothing can be judged
  auto b = receipt(2, 1.4, 2, "sha256:w", 16);
  a.tracks[0].peak = Selection{4, 100};
  b.tracks[0].peak = Selection{1, 90};
  const auto few = compare_sweeps(a, b, fast(1));
  ASSERT_TRUE(few.ok());
  for (const auto& m : few->moved) {
    EXPECT_NE(m.verdict, "moved down") << m.what;
    EXPECT_NE(m.verdict, "moved up") << m.what;
  }
  const auto peak = std::find_if(few->moved.begin(), few->moved.end(), [](const Moved& m) { return m.what == "peak"; });
  ASSERT_NE(peak, few->moved.end());
  EXPECT_EQ(peak->verdict, "not judged: not enough data at these points");
}

TEST(SweepCompare, PointsOnlyOneReceiptHasAreListedAndEveryFormatSaysTheSame) {
  auto a = receipt(1, 1.0);
  auto b = receipt(2, 1.4);
  b.points.pop_back();  // B stopped at 4
  const auto c = compare_sweeps(a, b, fast(1));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->points.size(), 2u);
  EXPECT_EQ(c->only_a, std::vector<double>{16});
  const std::string md = sweep_comparison_md(*c);
  EXPECT_NE(md.find("## concurrency 4 (A valid, B valid)"), std::string::npos) << md;
  EXPECT_NE(md.find("Only in A: concurrency 16."), std::string::npos);
  const std::string json = sweep_comparison_json(*c);
  EXPECT_NE(json.find("\"schema\":\"modelperfobs.sweep-comparison.v1\""), std::string::npos);
  EXPECT_NE(json.find("\"only_in_a\":[16]"), std::string::npos);
  const std::string html = sweep_comparison_html(*c);
  const auto charts = test::charts_in(html);
  ASSERT_EQ(charts.size(), 2u);
  EXPECT_EQ(test::chart_problems(charts), "");
  EXPECT_EQ(charts[0].series.at("A"), 2);
  EXPECT_NE(html.find("<tr class=\"worse\"><td>ttft_p50_ms</td>"), std::string::npos);
}

TEST(SweepCompare, RequestsWithoutAFirstTokenAreLeftOutOfTtftAndNothingElse) {
  // A point where some ok requests were not streamed (no TTFT): TTFT is over the streamed ones,
  // e2e and throughput over all; a resample draws requests, never a TTFT of another request.
  auto a = receipt(1, 1.0);
  auto b = receipt(2, 1.0);
  for (auto* r : {&a, &b}) {
    auto& samples = r->points.front().tracks.front().samples;
    for (std::size_t i = 0; i < samples.size(); i += 3) samples[i].ttft_ms.reset();
  }
  const auto c = compare_sweeps(a, b, fast(1));
  ASSERT_TRUE(c.ok());
  const auto& p = c->points.front();
  EXPECT_EQ(change(p, "ttft_p50_ms").n_a, 200u);  // 300 requests, every third without a TTFT
  EXPECT_EQ(change(p, "e2e_p99_ms").n_a, 300u);
  EXPECT_TRUE(change(p, "ttft_p50_ms").ci_lo.has_value());
}

}  // namespace
}  // namespace mpo::sweep
