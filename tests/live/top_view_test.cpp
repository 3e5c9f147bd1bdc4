// `top`'s screen as a person would read it, from a frame built the way `top` builds it (the
// report's analysis of the window's lines, by model). Invented lines: a fast model and a slow
// one that fails now and then.
#include "live/top_view.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace mpo::live {
namespace {

ledger::LedgerRecord line(const std::string& model, std::int64_t start_ms, double ttft, double e2e,
                          std::string outcome = "ok") {
  ledger::LedgerRecord r;
  r.observation_id = model + std::to_string(start_ms);
  r.started_at_us = 1'800'000'000'000'000 + start_ms * 1000;
  r.ended_at_us = r.started_at_us + static_cast<std::int64_t>(e2e * 1000);
  r.model = model;
  r.operation = "chat";
  r.stream = true;
  r.outcome = std::move(outcome);
  r.http_status = r.outcome == "ok" ? 200 : 503;
  r.ttft_ms = ttft;
  r.e2e_ms = e2e;
  r.prompt_tokens = 100;
  r.completion_tokens = 11;
  r.token_source = "usage";
  return r;
}

TopFrame frame() {
  std::vector<ledger::LedgerRecord> lines;
  for (int i = 0; i < 40; ++i) lines.push_back(line("fast-model", i * 100, 20 + i % 5, 220));
  for (int i = 0; i < 10; ++i)
    lines.push_back(line("slow-model", i * 400, 900 + 10 * i, 2900, i % 5 == 4 ? "http_error" : "ok"));
  report::Options o;
  o.by = report::GroupBy::kModel;
  TopFrame f;
  f.now_us = 1'800'000'000'000'000 + 5'000'000;
  f.source = "ledger runs/x.jsonl";
  f.groups = report::analyse(lines, o);
  f.latest_error["slow-model"] = "http_error 503: the engine is overloaded";
  f.lines = 50;
  return f;
}

std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

const std::string* row_of(const std::vector<std::string>& screen, const std::string& model) {
  for (const auto& l : screen) {
    if (l.find(model) == 1) return &l;
  }
  return nullptr;
}

TEST(TopScreen, FitsAnEightyByTwentyFourTerminalAndShowsEachModelsFigures) {
  const auto f = frame();
  History h;
  h.add(f);
  const auto screen = render_screen(f, TopOptions{}, h, 80, 24);
  ASSERT_EQ(screen.size(), 24u);
  for (const auto& l : screen) EXPECT_LE(columns(l), 80u) << l;
  const auto* fast = row_of(screen, "fast-model");
  const auto* slow = row_of(screen, "slow-model");
  ASSERT_TRUE(fast && slow) << screen[2];
  // The figures are the report's: TTFT p50 and p99 of the model's requests, errors in percent.
  const auto& g = *std::find_if(f.groups.begin(), f.groups.end(), [](const auto& x) { return x.key == "slow-model"; });
  EXPECT_NE(slow->find(fmt::format("{:.0f}", g.ttft_ms->p50)), std::string::npos) << *slow;
  EXPECT_NE(slow->find(fmt::format("{:.0f}", g.ttft_ms->p99)), std::string::npos) << *slow;
  EXPECT_NE(slow->find(" 20.0 "), std::string::npos) << *slow;  // 2 of 10 failed
  // Sorted by requests per second: the fast model first.
  EXPECT_LT(fast, slow);
  // The busiest model's bottleneck and sparklines, the keys at the bottom.
  EXPECT_NE(std::find_if(screen.begin(), screen.end(),
                         [](const std::string& l) { return l.rfind("likely bottleneck: ", 0) == 0; }),
            screen.end());
  EXPECT_EQ(screen.back().rfind("q quit", 0), 0u) << screen.back();
}

TEST(TopScreen, TheProxysLateReadsSayWhetherTheyWereOneStallOrAStretch) {
  const auto screen_of = [](const std::vector<ledger::LedgerRecord>& lines) {
    report::Options o;
    TopFrame f;
    f.now_us = 1'800'000'000'000'000 + 5'000'000;
    f.groups = report::analyse(lines, o);
    History h;
    h.add(f);
    return render_screen(f, TopOptions{}, h, 100, 24);
  };
  const auto lag_line = [](const std::vector<std::string>& screen) {
    const auto it = std::find_if(screen.begin(), screen.end(),
                                 [](const std::string& l) { return l.rfind("proxy lag p99", 0) == 0; });
    return it == screen.end() ? std::string() : *it;
  };
  std::vector<ledger::LedgerRecord> lines;
  for (int i = 0; i < 40; ++i) {
    auto l = line("m", i * 100, 20, 220);
    l.proxy_lag_ms = i < 4 ? 3.0 : 0.1;  // four late reads at one instant, 2,000 ms in
    l.proxy_lag_at_ms = 2000.0 - i * 100;
    lines.push_back(l);
  }
  EXPECT_NE(lag_line(screen_of(lines)).find("(1 stall apart, up to 3.0 ms)"), std::string::npos)
      << lag_line(screen_of(lines));
  for (int i = 0; i < 4; ++i) lines[static_cast<std::size_t>(i)].proxy_lag_at_ms = 100.0 - i * 100 + i * 10.0;
  EXPECT_NE(lag_line(screen_of(lines)).find("(behind: 4 of 40 lines late, 4 stalls in stretches; give it more CPU)"),
            std::string::npos)
      << lag_line(screen_of(lines));
  // The same four stalls with the loop reading nothing at all while each waited: held up, not
  // behind its traffic (no stretch).
  for (int i = 0; i < 4; ++i) lines[static_cast<std::size_t>(i)].proxy_lag_quiet_ms = 2.9;
  EXPECT_NE(lag_line(screen_of(lines)).find("(4 stalls, held up, up to 3.0 ms)"), std::string::npos)
      << lag_line(screen_of(lines));
}

TEST(TopScreen, SortingAndFocusChangeWhatIsShown) {
  const auto f = frame();
  History h;
  TopOptions o;
  o.sort = SortBy::kTtftP99;
  o.focus = "slow-model";
  const auto screen = render_screen(f, o, h, 80, 24);
  EXPECT_LT(row_of(screen, "slow-model"), row_of(screen, "fast-model"));
  EXPECT_EQ(row_of(screen, "slow-model")->front(), '>');  // the focused model is marked
  bool marked = false, errors = false;
  for (const auto& l : screen) {
    marked = marked || l.rfind(">slow-model", 0) == 0;
    errors = errors || l.find("latest: http_error 503: the engine is overloaded") != std::string::npos;
  }
  EXPECT_TRUE(marked);
  EXPECT_TRUE(errors) << "the focused model's failures and the latest one's message";
  EXPECT_EQ(next(SortBy::kName), SortBy::kRequests);
}

TEST(TopScreen, ANarrowOrShortTerminalStillGetsWholeLines) {
  const auto f = frame();
  const auto screen = render_screen(f, TopOptions{}, History{}, 50, 12);
  ASSERT_EQ(screen.size(), 12u);
  for (const auto& l : screen) EXPECT_LE(columns(l), 50u) << l;
}

TEST(TopScreen, AModelSpokenToThroughSeveralApisHasARowForEach) {
  std::vector<ledger::LedgerRecord> lines;
  for (int i = 0; i < 12; ++i) {
    auto l = line("mixed", i * 100, i < 8 ? 30 : 300, 400);
    l.operation = i < 8 ? "chat" : "responses";
    lines.push_back(std::move(l));
  }
  report::Options o;
  o.by = report::GroupBy::kModel;
  TopFrame f;
  f.now_us = 1'800'000'000'000'000 + 5'000'000;
  f.groups = report::analyse(lines, o);
  ASSERT_EQ(f.groups.at(0).apis.size(), 2u);
  const auto screen = render_screen(f, TopOptions{}, History{}, 80, 24);
  const std::string* chat = nullptr;
  const std::string* responses = nullptr;
  for (const auto& l : screen) {
    if (l.rfind("   chat ", 0) == 0) chat = &l;
    if (l.rfind("   responses ", 0) == 0) responses = &l;
  }
  ASSERT_TRUE(chat && responses) << screen[2] << "\n" << screen[3] << "\n" << screen[4];
  EXPECT_NE(responses->find(" 300 "), std::string::npos) << *responses;  // its own TTFT
  EXPECT_NE(chat->find(" 30 "), std::string::npos) << *chat;
}

TEST(TopSparkline, ScalesToTheLargestValueOfTheLastOnes) {
  const std::deque<double> v = {0, 1, 2, 4, 8};
  EXPECT_EQ(sparkline(v, 5), "\u2581\u2581\u2582\u2584\u2588");
  EXPECT_EQ(sparkline(v, 2), "\u2584\u2588");
  EXPECT_EQ(sparkline({}, 4), "");
  EXPECT_EQ(sparkline({0, 0}, 4), "\u2581\u2581");
}

TEST(TopLines, OffATerminalOneLinePerModel) {
  const auto lines = render_lines(frame(), TopOptions{});
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find(" model=fast-model "), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find(" model=slow-model "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find(" err_pct=20.0 "), std::string::npos) << lines[1];
  EXPECT_EQ(lines[1].find("given_up"), std::string::npos) << lines[1];
  // Requests given up before their first token are named: the TTFT figures leave them out.
  auto f = frame();
  f.groups[1].left_before_first_token_ms = Summary{.n = 3, .p50 = 1400};
  const auto with = render_lines(f, TopOptions{});
  EXPECT_NE(with[1].find(" given_up_before_first_token=3 given_up_waited_p50_ms=1400"), std::string::npos) << with[1];
  EXPECT_EQ(with[1].find("fail_pct"), std::string::npos) << with[1];
  // Clients that left once output had begun are in err_pct; fail_pct leaves them out.
  f.groups[1].disconnected_after_first_token = 2;
  f.groups[1].failure_rate = 0.1;
  const auto stops = render_lines(f, TopOptions{});
  EXPECT_NE(stops[1].find(" left_after_output=2 fail_pct=10.0"), std::string::npos) << stops[1];
  // An agent's streams that began with a tool call, or ended without output, date no first token:
  // named, since the TTFT figures leave them out.
  EXPECT_EQ(stops[1].find("tool_call_first"), std::string::npos) << stops[1];
  f.groups[1].tool_call_first = 4;
  f.groups[1].no_output = 1;
  const auto agents = render_lines(f, TopOptions{});
  EXPECT_NE(agents[1].find(" tool_call_first=4 no_output=1 left_after_output=2"), std::string::npos) << agents[1];
  TopFrame empty;
  EXPECT_NE(render_lines(empty, TopOptions{})[0].find("no requests finished in the last 30 s"), std::string::npos);
  // Lines that could not be read are not "no requests": the view says why it has none.
  empty.lines_problem = "ledger x.jsonl does not exist (yet): is a proxy writing it?";
  const auto unread = render_lines(empty, TopOptions{});
  ASSERT_EQ(unread.size(), 1u);
  EXPECT_NE(unread[0].find(" cannot read the lines: ledger x.jsonl does not exist"), std::string::npos) << unread[0];
  const auto screen = render_screen(empty, TopOptions{}, History{}, 80, 24);
  EXPECT_TRUE(std::any_of(screen.begin(), screen.end(),
                          [](const std::string& l) { return l.find(" cannot read the lines: ledger") == 0; }));
  EXPECT_TRUE(std::none_of(screen.begin(), screen.end(),
                           [](const std::string& l) { return l.find("no requests finished") != std::string::npos; }));
}

}  // namespace
}  // namespace mpo::live
