// The simulator's stored responses (sim/response_store.hpp) and the Responses API's
// previous_response_id as the simulator reads it.
#include "sim/response_store.hpp"

#include <gtest/gtest.h>

#include "sim/openai_api.hpp"

namespace mpo::sim {
namespace {

TEST(ResponseStore, KeepsTheLatestResponsesAndForgetsTheOldestFirst) {
  ResponseStore store(2);
  store.put("resp_a", {1, 2, 3});
  store.put("resp_b", {4});
  ASSERT_NE(store.find("resp_a"), nullptr);
  EXPECT_EQ(*store.find("resp_a"), (std::vector<TokenId>{1, 2, 3}));
  store.put("resp_c", {5, 6});  // over capacity: resp_a goes
  EXPECT_EQ(store.find("resp_a"), nullptr);
  EXPECT_EQ(*store.find("resp_c"), (std::vector<TokenId>{5, 6}));
  store.put("resp_b", {7});  // stored again: replaced, nothing forgotten
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(*store.find("resp_b"), (std::vector<TokenId>{7}));
  EXPECT_EQ(store.find("resp_nope"), nullptr);
  EXPECT_EQ(response_not_found_message("resp_x"), "Response with id 'resp_x' not found.");
  ResponseStore none(0);
  none.put("resp_a", {1});
  EXPECT_EQ(none.find("resp_a"), nullptr);
}

TEST(ResponseStore, TheResponsesApiNamesTheResponseItContinues) {
  auto r = parse_completion_request(
      R"({"model":"m","input":[{"role":"user","content":"next"}],"previous_response_id":"resp_1","stream":true})",
      Endpoint::kResponses);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->previous_response_id, "resp_1");
  auto none =
      parse_completion_request(R"({"model":"m","input":"hi","previous_response_id":null})", Endpoint::kResponses);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->previous_response_id);
  auto bad = parse_completion_request(R"({"model":"m","input":"hi","previous_response_id":7})", Endpoint::kResponses);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().subject, "previous_response_id");
}

}  // namespace
}  // namespace mpo::sim
