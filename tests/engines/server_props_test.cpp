// llama.cpp's GET /props and SGLang's GET /server_info read for the batch capacity they state
// (engines/server_props.hpp), on real captures and on bodies that are not them.
#include "engines/server_props.hpp"

#include <gtest/gtest.h>

#include "support/fixtures.hpp"

namespace mpo::engines {
namespace {

TEST(ServerProps, LlamaCppStatesItsSlotsBuildAndContextASlot) {
  // llama-server -c 4096 -np 2: two slots of 2,048 tokens each.
  const auto s = parse_llamacpp_props(test::read_fixture("llamacpp/llamacpp_b10309_small-random_np2_props.json"));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->slots, 2);
  EXPECT_EQ(s->build, "b10309-82bb485");
  EXPECT_EQ(s->context_per_slot, 2048);
  EXPECT_EQ(s->source(), "llama.cpp b10309-82bb485 GET /props total_slots");
}

TEST(ServerProps, APageThatStatesNoSlotsIsNotTakenForOne) {
  for (const char* body : {"", "{}", "[]", "not json", R"({"total_slots":0})", R"({"total_slots":-2})",
                           R"({"total_slots":"4"})", R"({"total_slots":2.5})", R"({"detail":"Not Found"})"}) {
    const auto s = parse_llamacpp_props(body);
    EXPECT_FALSE(s.ok()) << body;
    if (!s.ok()) {
      EXPECT_EQ(s.error().code, "engine.props") << body;
    }
  }
  const auto bare = parse_llamacpp_props(R"({"total_slots":8})");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->source(), "llama.cpp GET /props total_slots");
  EXPECT_EQ(bare->context_per_slot, 0);
}

TEST(ServerProps, SGLangStatesItsSchedulersRunningRequestCap) {
  // SGLang's docs build (qwen2.5-0.5b, one GPU, defaults): the scheduler runs 128 requests at once,
  // from a KV cache of 20,480 tokens.
  const auto s = parse_sglang_server_info(
      test::read_fixture("sglang/sglang_dev1-gf97c09dac_qwen2.5-0.5b_get-server-info_excerpt.json"),
      "/get_server_info");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->slots, 128);
  EXPECT_EQ(s->dp_size, 1);
  EXPECT_EQ(s->kv_tokens, 20480);
  EXPECT_EQ(s->source(), "SGLang 0.0.0.dev1+gf97c09dac GET /get_server_info effective_max_running_requests_per_dp");
  EXPECT_EQ(s->context(), ", a KV cache of 20480 tokens shared");
}

TEST(ServerProps, SGLangsEffectiveCapWinsItsArgumentAndRanksMultiplyIt) {
  // SYNTHETIC: a scheduler that set its cap below the argument (its memory pools allow fewer), on
  // two data-parallel ranks: 2 x 52, not 128.
  const auto ranks = parse_sglang_server_info(
      R"({"max_running_requests":128,"dp_size":2,"internal_states":[{"effective_max_running_requests_per_dp":52},)"
      R"({"effective_max_running_requests_per_dp":52}]})",
      "/server_info");
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  EXPECT_EQ(ranks->slots, 104);
  EXPECT_EQ(ranks->source(), "SGLang GET /server_info effective_max_running_requests_per_dp x dp_size 2");
  EXPECT_EQ(ranks->context(), "");

  // A server too old to state the effective cap: its argument, with one rank only.
  const auto old =
      parse_sglang_server_info(R"({"max_running_requests":64,"internal_states":[{}]})", "/get_server_info");
  ASSERT_TRUE(old.ok()) << old.error().message;
  EXPECT_EQ(old->slots, 64);
  EXPECT_EQ(old->source(), "SGLang GET /get_server_info max_running_requests");
  const auto two = parse_sglang_server_info(R"({"max_running_requests":64,"dp_size":2})", "/get_server_info");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message, "GET /get_server_info states no positive effective_max_running_requests_per_dp");
}

TEST(ServerProps, AnSGLangPageThatStatesNoCapIsNotTakenForOne) {
  for (const char* body :
       {"", "{}", "[]", "not json", R"({"max_running_requests":null})", R"({"max_running_requests":0})",
        R"({"max_running_requests":"128"})", R"({"internal_states":[{"effective_max_running_requests_per_dp":-1}]})",
        R"({"max_running_requests":8,"dp_size":0})", R"({"max_running_requests":8,"dp_size":"2"})",
        R"({"internal_states":[{"effective_max_running_requests_per_dp":1000000}],"dp_size":8})",
        R"({"detail":"Not Found"})"}) {
    const auto s = parse_sglang_server_info(body, "/server_info");
    EXPECT_FALSE(s.ok()) << body;
    if (!s.ok()) {
      EXPECT_EQ(s.error().code, "engine.props") << body;
    }
  }
}

}  // namespace
}  // namespace mpo::engines
