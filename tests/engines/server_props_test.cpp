// llama.cpp's GET /props read for the batch capacity it states (engines/server_props.hpp), on a
// real b10309 capture and on bodies that are not it.
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

}  // namespace
}  // namespace mpo::engines
