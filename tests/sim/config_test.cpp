#include "sim/config.hpp"

#include <gtest/gtest.h>

namespace mpo::sim {
namespace {

TEST(Profile, AbsentKeysKeepDefaults) {
  auto p = parse_profile(R"({"model":"qwen3","engine":{"max_num_seqs":8}})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->model, "qwen3");
  EXPECT_EQ(p->engine.max_num_seqs, 8);
  EXPECT_EQ(p->engine.block_size, 16);
  EXPECT_DOUBLE_EQ(p->engine.step_base_s, 0.018);
}

TEST(Profile, EveryDocumentedSectionParses) {
  auto p = parse_profile(R"({"engine":{"step_base_s":0.01,"enable_prefix_caching":false},
      "output":{"reasoning":true,"tokens_per_chunk":4},
      "scenarios":{"saturation":{"background_requests":10},"ramp":{"duration_s":5},
                   "faults":{"error_share":0.5,"stall_s":2}}})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_FALSE(p->engine.enable_prefix_caching);
  EXPECT_TRUE(p->output.reasoning);
  EXPECT_EQ(p->saturation.background_requests, 10);
  EXPECT_EQ(p->ramp.duration_s, 5);
  EXPECT_EQ(p->faults.error_share, 0.5);
}

TEST(Profile, ErrorsNameTheKey) {
  struct Case {
    const char* json;
    const char* needle;
  };
  for (const Case& c :
       {Case{R"({"engine":{"max_num_seq":8}})", "engine.max_num_seq"},
        Case{R"({"engine":{"max_num_seqs":0}})", "engine.max_num_seqs"},
        Case{R"({"engine":{"max_num_seqs":1.5}})", "integer"},
        Case{R"({"output":{"reasoning":"yes"}})", "output.reasoning"},
        Case{R"({"engine":{"num_gpu_blocks":1}})", "num_gpu_blocks"},
        Case{R"({"scenarios":{"faults":{"error_share":0.9,"stall_share":0.9}}})", "faults"}, Case{R"([1,2])", "object"},
        Case{R"({"engine":)", "profile"},
        // Nested sections and the profile itself name their full path (one setter
        // table keyed by path since issue 40).
        Case{R"({"scenarios":{"ramp":{"duration_s":"x"}}})", "'scenarios.ramp.duration_s' must be a number"},
        Case{R"({"scenarios":{"faults":5}})", "'scenarios.faults' must be an object"},
        Case{R"({"scenarios":{"ramp":{"nope":1}}})", "unknown key 'scenarios.ramp.nope'"},
        Case{R"({"bogus":1})", "unknown key 'profile.bogus'"},
        Case{R"({"model":""})", "'model' must be a non-empty string"}}) {
    auto p = parse_profile(c.json);
    ASSERT_FALSE(p.ok()) << c.json;
    EXPECT_NE(p.error().message.find(c.needle), std::string::npos) << p.error().message;
  }
}

}  // namespace
}  // namespace mpo::sim
