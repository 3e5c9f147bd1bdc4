// The TTFT fit's 95% intervals and what the report says from them (report/analysis.hpp fit_ttft,
// docs/REPORT.md "The TTFT fit").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "report/analysis.hpp"
#include "report/render.hpp"

namespace mpo::report {
namespace {

// A streamed ok request of `prompt` tokens with `inflight` others in flight at its start.
ledger::LedgerRecord streamed(std::int64_t start_ms, double ttft, int prompt, int inflight) {
  ledger::LedgerRecord r;
  r.observation_id = std::to_string(start_ms);
  r.started_at_us = start_ms * 1000;
  r.ended_at_us = r.started_at_us + 4'000'000;
  r.model = "m";
  r.stream = true;
  r.outcome = "ok";
  r.http_status = 200;
  r.ttft_ms = ttft;
  r.e2e_ms = 4000;
  r.prompt_tokens = prompt;
  r.completion_tokens = 10;
  r.in_flight_at_start = inflight;
  r.token_source = "usage";
  return r;
}

// One candidate's evidence, a line each.
std::string evidence_of(const GroupStats& g, std::string_view candidate) {
  std::string out;
  for (const auto& c : g.ranking) {
    if (c.name != candidate) continue;
    for (const auto& e : c.evidence) out += e + "\n";
  }
  return out;
}

// Noise of about a normal's shape and `sd` from mt19937's raw numbers (the same on every standard
// library, unlike std::normal_distribution): the sum of 12 uniforms less 6 (Irwin-Hall).
double noise(std::mt19937& rng, double sd) {
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += static_cast<double>(rng()) / 4294967296.0;
  return sd * (sum - 6);
}

// The fit's 95% intervals say how little a run of requests pins a coefficient down: over many runs
// of one model with noise they hold the true b and c in about 95 of 100, not in all (too wide: a
// term that could be read would be called noise) nor in far fewer (too narrow: the demo's prompt
// term, 0.002 ms a token from a simulator that spends 0.25, was printed as a 508,717 tok/s prefill).
TEST(TtftFit, ItsIntervalsHoldTheTrueCoefficientsAboutAsOftenAsTheySay) {
  std::mt19937 rng(7);
  int b_held = 0, c_held = 0;
  constexpr int kRuns = 400;
  for (int run = 0; run < kRuns; ++run) {
    std::vector<double> y, prompt, inflight;
    for (int i = 0; i < 40; ++i) {
      prompt.push_back(64 + static_cast<double>(rng() % 1000));
      inflight.push_back(static_cast<double>(rng() % 16));
      y.push_back(30 + 0.25 * prompt.back() + 60 * inflight.back() + noise(rng, 80));
    }
    const auto f = fit_ttft(y, prompt, inflight);
    ASSERT_TRUE(f.has_value());
    ASSERT_TRUE(f->intervals);
    b_held += std::fabs(f->b_ms_per_token - 0.25) <= f->b_ci95_ms;
    c_held += std::fabs(f->c_ms_per_in_flight - 60) <= f->c_ci95_ms;
  }
  EXPECT_GE(b_held, kRuns * 92 / 100);
  EXPECT_LE(b_held, kRuns * 98 / 100);
  EXPECT_GE(c_held, kRuns * 92 / 100);
  EXPECT_LE(c_held, kRuns * 98 / 100);
}

// The demo's run: 86 requests of 58 to 258 prompt tokens, 1 to 48 in flight, TTFT 67 ms a request in
// flight and 0.25 ms a prompt token (the simulator's 4,000 tok/s prefill) under a queue's noise. The
// prompt term's share (50 ms over the range) is lost in the noise: the report says so and names no
// prefill rate; the in-flight term is read, with its interval.
TEST(Analyse, APromptTermWithinItsNoiseNamesNoPrefillRate) {
  std::mt19937 rng(3);
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int i = 0; i < 86; ++i) {
    const int prompt = 58 + static_cast<int>(rng() % 201);
    const int inflight = 1 + static_cast<int>(rng() % 48);
    rs.push_back(streamed(t += 10, std::max(5.0, 0.25 * prompt + 67.0 * inflight + noise(rng, 150)), prompt, inflight));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit.has_value());
  EXPECT_TRUE(g.fit->prompt_term_noise()) << g.fit->b_ms_per_token << " ± " << g.fit->b_ci95_ms;
  EXPECT_TRUE(g.fit->in_flight_term_known());
  EXPECT_NEAR(g.fit->c_ms_per_in_flight, 67, g.fit->c_ci95_ms);
  const std::string prefill = evidence_of(g, "prefill"), queueing = evidence_of(g, "queueing");
  EXPECT_EQ(prefill.find("implied prefill rate"), std::string::npos) << prefill;
  EXPECT_NE(prefill.find("within its noise of 0: no prefill rate can be read"), std::string::npos) << prefill;
  EXPECT_NE(queueing.find(fmt::format("each request already in flight adds {:.1f} ± {:.1f} ms",
                                      g.fit->c_ms_per_in_flight, g.fit->c_ci95_ms)),
            std::string::npos)
      << queueing;
  ReportInput in;
  in.table = RowTable(GroupBy::kModel);
  for (const auto& r : rs) in.table.add(r);
  in.groups = {g};
  const auto md = render_markdown(in);
  EXPECT_NE(md.find("The prompt term is within its noise of 0"), std::string::npos) << md;
  EXPECT_EQ(md.find("A negative coefficient"), std::string::npos) << md;
}

// A clean run reads its prefill rate, with the interval the rate lies in.
TEST(Analyse, APromptTermClearOfItsNoiseNamesTheRateAndItsInterval) {
  std::mt19937 rng(5);
  std::vector<ledger::LedgerRecord> rs;
  int t = 0;
  for (int i = 0; i < 60; ++i) {
    const int prompt = 100 + static_cast<int>(rng() % 4000);
    const int inflight = static_cast<int>(rng() % 8);
    rs.push_back(streamed(t += 10, 20 + 0.25 * prompt + 30.0 * inflight + noise(rng, 20), prompt, inflight));
  }
  const auto g = analyse(rs, {}).at(0);
  ASSERT_TRUE(g.fit.has_value());
  ASSERT_TRUE(g.fit->prompt_term_known());
  const double b = g.fit->b_ms_per_token, half = g.fit->b_ci95_ms;
  EXPECT_LT(half, 0.05 * b);
  const std::string prefill = evidence_of(g, "prefill");
  EXPECT_NE(prefill.find(fmt::format("an implied prefill rate of {:.0f} tok/s ({:.0f} to {:.0f} at 95%", 1000 / b,
                                     1000 / (b + half), 1000 / (b - half))),
            std::string::npos)
      << prefill;
  EXPECT_LE(1000 / (b + half), 4000);
  EXPECT_GE(1000 / (b - half), 4000);
}

// TPOT against the requests in flight: a slope from noise is called noise, not a batching cost; a
// real one carries its interval.
TEST(Analyse, ATpotSlopeWithinItsNoiseIsNoBatchingCost) {
  for (const double cost : {0.0, 2.0}) {
    std::mt19937 rng(11);
    std::vector<ledger::LedgerRecord> rs;
    for (int i = 0; i < 50; ++i) {
      const int inflight = static_cast<int>(rng() % 16);
      auto r = streamed(i * 10, 100, 200, inflight);
      r.tpot_ms = 20 + cost * inflight + noise(rng, 3);
      rs.push_back(r);
    }
    const auto g = analyse(rs, {}).at(0);
    ASSERT_TRUE(g.tpot_in_flight_slope_ci95_ms.has_value());
    const std::string decode = evidence_of(g, "decode");
    if (cost == 0) {
      EXPECT_NE(decode.find("TPOT did not follow the requests in flight"), std::string::npos) << decode;
      EXPECT_EQ(decode.find("batching cost"), std::string::npos) << decode;
    } else {
      EXPECT_NEAR(*g.tpot_in_flight_slope_ms, 2.0, *g.tpot_in_flight_slope_ci95_ms);
      EXPECT_NE(decode.find(fmt::format("TPOT changes {:+.2f} ± {:.2f} ms per request in flight (batching cost)",
                                        *g.tpot_in_flight_slope_ms, *g.tpot_in_flight_slope_ci95_ms)),
                std::string::npos)
          << decode;
    }
  }
}

// With n values quantile_cont's p99 lies between the two largest up to n = 101, its p95 up to 21:
// the table says so under itself (its p99 is then this run's slowest requests, not a tail), and
// says nothing from 102 requests on, where the p99 falls below the second slowest.
TEST(Report, TailsOfFewRequestsAreCalledTheSlowestRequests) {
  for (const int n : {12, 21, 22, 86, 101, 102, 150}) {
    std::vector<ledger::LedgerRecord> rs;
    for (int i = 0; i < n; ++i) rs.push_back(streamed(i * 10, 100 + i, 50, 1));  // TTFT 100, 101, ...
    ReportInput in;
    in.table = RowTable(GroupBy::kModel);
    for (const auto& r : rs) in.table.add(r);
    in.groups = analyse(rs, {});
    const auto md = render_markdown(in);
    const bool said =
        md.find(fmt::format("Each row above has {} requests at most: its p99 lies between its two slowest", n)) !=
        std::string::npos;
    const double p99 = in.groups[0].ttft_ms->p99, second_slowest = 100 + n - 2;
    EXPECT_EQ(said, p99 >= second_slowest) << n << " " << p99;
    EXPECT_EQ(said, n <= 101) << n;
    EXPECT_EQ(md.find("and so does its p95") != std::string::npos, in.groups[0].ttft_ms->p95 >= second_slowest) << n;
  }
}

}  // namespace
}  // namespace mpo::report
