#include "loadgen/workload.hpp"

#include <gtest/gtest.h>

#include "core/go_json.hpp"

namespace mpo::loadgen {
namespace {

TEST(Workload, WebTasksFollowFaksRules) {
  const std::string jsonl =
      "{\"id\":\"t1\",\"description\":\"Find the cheapest flight\",\"instructions\":\"to Oslo\"}\n"
      "\n"
      "{\"id\":\"t2\",\"description\":\"\",\"instructions\":\"\"}\n";
  auto w = parse_web_tasks(jsonl, {});
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->size(), 2u);
  EXPECT_EQ((*w)[0].messages[0].role, "system");
  EXPECT_EQ((*w)[0].messages[0].content, kDefaultSharedPrefix);
  EXPECT_EQ((*w)[0].messages[1].content, "Task: Find the cheapest flight\nto Oslo");
  EXPECT_EQ((*w)[0].prompt_tokens_estimate, 3000 + 24 / 4 + 7 / 4);
  EXPECT_EQ((*w)[1].messages[1].content, "Task: t2");  // empty task text: the id
  EXPECT_EQ((*w)[1].prompt_tokens_estimate, 3400);
  EXPECT_EQ((*w)[0].max_output_tokens, 64);

  auto agents = parse_web_tasks(jsonl, WebTaskOptions{5, 32, "p"});
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 5u);
  EXPECT_EQ((*agents)[0].id, "t1#agent-001");
  EXPECT_EQ((*agents)[3].id, "t2#agent-004");
  EXPECT_EQ((*agents)[4].max_output_tokens, 32);

  auto arr = parse_web_tasks(R"([{"id":"a","description":"x"}])", {});
  ASSERT_TRUE(arr.ok());
  EXPECT_EQ(arr->size(), 1u);
}

TEST(Workload, BadDatasetsSayWhatIsWrong) {
  auto r = parse_web_tasks("{\"id\":\"a\"}\nnot json\n", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 2"), std::string::npos) << r.error().message;
  EXPECT_FALSE(parse_web_tasks("", {}).ok());
  EXPECT_FALSE(parse_web_tasks(R"([{"description":"no id"}])", {}).ok());
  EXPECT_FALSE(parse_sharegpt(R"([{"id":"x"}])", {}).ok());
}

TEST(Workload, ShareGptTakesTheFirstHumanTurnAndTheReplyLength) {
  const std::string text = R"([
    {"id":"c1","conversations":[{"from":"human","value":"What is KV cache?"},{"from":"gpt","value":"It stores keys and values of past tokens so decoding does not recompute them."}]},
    {"id":"c2","conversations":[{"from":"gpt","value":"starts with the model"}]},
    {"id":"c3","conversations":[{"from":"human","value":"Hi"}]}
  ])";
  auto w = parse_sharegpt(text, {});
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->size(), 2u);  // c2 skipped
  EXPECT_EQ((*w)[0].messages[0].content, "What is KV cache?");
  EXPECT_EQ((*w)[0].max_output_tokens, 76 / 4);
  EXPECT_EQ((*w)[1].max_output_tokens, 1);  // no reply: at least one token
  auto fixed = parse_sharegpt(text, ShareGptOptions{1, 100, 4096});
  ASSERT_TRUE(fixed.ok());
  ASSERT_EQ(fixed->size(), 1u);
  EXPECT_EQ((*fixed)[0].max_output_tokens, 100);
}

TEST(Workload, DistributionsParseAndRejectNonsense) {
  EXPECT_TRUE(parse_length_distribution("128").ok());
  auto u = parse_length_distribution("uniform:10,20");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->kind, LengthDistribution::Kind::kUniform);
  EXPECT_TRUE(parse_length_distribution("normal:100,10").ok());
  EXPECT_TRUE(parse_length_distribution("exp:50").ok());
  for (const char* bad : {"", "0", "-3", "uniform:20,10", "normal:5", "zipf:1,2", "12abc", "exp:0"}) {
    EXPECT_FALSE(parse_length_distribution(bad).ok()) << bad;
  }
}

TEST(Workload, SyntheticIsSeededAndSharesItsPrefix) {
  SyntheticOptions o;
  o.count = 20;
  o.input = *parse_length_distribution("uniform:50,100");
  o.output = *parse_length_distribution("normal:32,8");
  o.shared_prefix_tokens = 16;
  o.seed = 7;
  const auto a = synthetic_workload(o), b = synthetic_workload(o);
  EXPECT_EQ(workload_digest(a), workload_digest(b));
  o.seed = 8;
  EXPECT_NE(workload_digest(a), workload_digest(synthetic_workload(o)));
  const std::string prefix = a[0].messages[0].content.substr(0, 16 * 5 - 1);
  for (const auto& r : a) {
    EXPECT_EQ(r.messages[0].content.substr(0, prefix.size()), prefix);
    EXPECT_GE(r.prompt_tokens_estimate, 50);
    EXPECT_LE(r.prompt_tokens_estimate, 100);
    EXPECT_GE(r.max_output_tokens, 1);
  }
  // Words of four letters: the word count is the token count the simulator sees.
  const auto& text = a[3].messages[0].content;
  EXPECT_EQ(std::count(text.begin(), text.end(), ' ') + 1, a[3].prompt_tokens_estimate);
}

TEST(Workload, DigestIsShaOfGoJsonInFaksKeyOrder) {
  ServingRequest r;
  r.id = "t<1>";
  r.messages = {{"user", "a&b"}};
  r.max_output_tokens = 64;
  r.prompt_tokens_estimate = 3400;
  r.arrival_offset_s = 1.5;  // not part of the digest
  const std::string expected_json =
      R"([{"id":"t\u003c1\u003e","messages":[{"role":"user","content":"a\u0026b"}],"max_output_tokens":64,"prompt_tokens_estimate":3400}])";
  EXPECT_EQ(go_marshal(workload_json({r})), expected_json);
  EXPECT_EQ(workload_digest({r}), sha256_digest(expected_json));
}

TEST(Workload, ReplayKeepsArrivalsAndLengths) {
  std::vector<ledger::LedgerRecord> recs(3);
  recs[0].observation_id = "b";
  recs[0].started_at_us = 2'500'000;
  recs[0].prompt_tokens = 100;
  recs[0].completion_tokens = 20;
  recs[1].observation_id = "a";
  recs[1].started_at_us = 1'000'000;
  recs[1].prompt_tokens = 50;
  recs[1].completion_tokens = 10;
  recs[2].started_at_us = 1'200'000;  // no token counts: skipped
  const auto replay = replay_ledger(recs, 1);
  ASSERT_EQ(replay.requests.size(), 2u);
  EXPECT_EQ(replay.skipped, 1u);
  EXPECT_EQ(replay.requests[0].id, "replay-a");
  EXPECT_DOUBLE_EQ(*replay.requests[0].arrival_offset_s, 0.0);
  EXPECT_DOUBLE_EQ(*replay.requests[1].arrival_offset_s, 1.5);
  EXPECT_EQ(replay.requests[1].max_output_tokens, 20);
  EXPECT_EQ(replay.requests[1].prompt_tokens_estimate, 100);
}

TEST(Workload, EachPointMarksItsPromptsAfterTheSharedPrefixAndKeepsTheirLength) {
  SyntheticOptions o;
  o.count = 6;
  o.input = {LengthDistribution::Kind::kConstant, 40, 0};
  o.shared_prefix_tokens = 10;
  const auto base = synthetic_workload(o);
  const std::size_t shared = shared_leading_words(base);
  EXPECT_EQ(shared, 10u);
  auto a = base, b = base, warm = base;
  mark_prompts(a, shared, point_marker(0, false));
  mark_prompts(b, shared, point_marker(1, false));
  mark_prompts(warm, shared, point_marker(1, true));
  EXPECT_EQ(point_marker(1, false), "p001");
  EXPECT_EQ(point_marker(1, true), "w001");
  auto words = [](const std::string& s) { return std::count(s.begin(), s.end(), ' ') + 1; };
  for (std::size_t i = 0; i < base.size(); ++i) {
    const auto& orig = base[i].messages.back().content;
    const auto& pa = a[i].messages.back().content;
    const auto& pb = b[i].messages.back().content;
    const auto& pw = warm[i].messages.back().content;
    EXPECT_EQ(words(pa), words(orig));  // one word replaced: the same length in words
    // The shared prefix stays; everything from the marker on differs between points.
    const auto prefix_end = orig.find(' ', 0);
    (void)prefix_end;
    std::size_t cut = 0;
    for (int k = 0; k < 10; ++k) cut = orig.find(' ', cut) + 1;
    EXPECT_EQ(pa.substr(0, cut), orig.substr(0, cut));
    EXPECT_EQ(pa.substr(cut, 5), "p000 ");
    EXPECT_EQ(pb.substr(cut, 5), "p001 ");
    EXPECT_EQ(pw.substr(cut, 5), "w001 ");
    EXPECT_EQ(pa.substr(cut + 5), orig.substr(orig.find(' ', cut) + 1));
  }
  EXPECT_NEAR(declared_shared_share(base[0], shared), 50.0 / 200.0, 0.01);  // 10 of 40 four-letter words
  // A workload whose requests are all the same: the marker is appended, the whole prompt shared.
  std::vector<ServingRequest> same(3, base[0]);
  const std::size_t all = shared_leading_words(same);
  EXPECT_EQ(all, 40u);
  mark_prompts(same, all, "p007");
  EXPECT_EQ(same[0].messages.back().content, base[0].messages.back().content + " p007");
  EXPECT_DOUBLE_EQ(declared_shared_share(base[0], all), 1.0);
  // Earlier messages (a system prompt) count as shared.
  ServingRequest r;
  r.messages = {{"system", std::string(30, 's')}, {"user", "Task: alpha beta"}};
  EXPECT_NEAR(declared_shared_share(r, 1), (30.0 + 6.0) / (30.0 + 16.0), 1e-12);
}

}  // namespace
}  // namespace mpo::loadgen
