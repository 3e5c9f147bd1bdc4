// Sessions (proxy/sessions.hpp): which evidence names a request's conversation, how turns are
// counted, how a Responses chain is followed link by link, and that end-user identities are never
// written as given.
#include "proxy/sessions.hpp"

#include <gtest/gtest.h>

namespace mpo::proxy {
namespace {

openai::RequestInfo chat() {
  openai::RequestInfo info;
  info.operation = openai::Operation::kChat;
  return info;
}

openai::RequestInfo responses(std::optional<std::string> previous = std::nullopt) {
  openai::RequestInfo info;
  info.operation = openai::Operation::kResponses;
  info.previous_response_id = std::move(previous);
  return info;
}

TEST(Sessions, TheFirstEvidenceThatExistsNamesTheSession) {
  auto info = chat();
  info.user = "alice";
  info.safety_identifier = "s-1";
  info.metadata_user_id = "u-7";
  info.previous_response_id = "resp_1";
  EXPECT_EQ(session_claim(std::string_view("agent-42"), info)->evidence, SessionEvidence::kHeader);
  EXPECT_EQ(session_claim(std::nullopt, info)->evidence, SessionEvidence::kPreviousResponse);
  info.previous_response_id.reset();
  EXPECT_EQ(session_claim(std::nullopt, info)->evidence, SessionEvidence::kMetadataUserId);
  info.metadata_user_id.reset();
  EXPECT_EQ(session_claim(std::nullopt, info)->evidence, SessionEvidence::kUser);
  info.user.reset();
  EXPECT_EQ(session_claim(std::nullopt, info)->evidence, SessionEvidence::kSafetyIdentifier);
  info.safety_identifier.reset();
  EXPECT_FALSE(session_claim(std::nullopt, info));          // a chat with nothing: no session
  EXPECT_FALSE(session_claim(std::string_view(""), info));  // an empty header names nothing
  EXPECT_EQ(session_claim(std::nullopt, responses())->evidence, SessionEvidence::kChainRoot);
}

TEST(Sessions, EndUserIdentitiesAreDigestsNeverTheValue) {
  auto info = chat();
  info.user = "alice@example.com";
  const auto claim = session_claim(std::nullopt, info);
  ASSERT_TRUE(claim);
  EXPECT_EQ(claim->key.find("alice"), std::string::npos);
  EXPECT_EQ(claim->key, identity_digest("alice@example.com"));
  EXPECT_EQ(claim->key.size(), std::string("sha256:").size() + 16);
  // SHA-256("abc") begins ba7816bf8f01cfea (FIPS 180-2, appendix B.1).
  EXPECT_EQ(identity_digest("abc"), "sha256:ba7816bf8f01cfea");
  EXPECT_EQ(session_source(claim->evidence), "user");
}

TEST(Sessions, TurnsCountEachSessionsRequestsFromOne) {
  SessionTable t;
  const SessionClaim a{SessionEvidence::kHeader, "agent-a", false}, b{SessionEvidence::kHeader, "agent-b", false};
  EXPECT_EQ(t.begin(a).turn, 1);
  EXPECT_EQ(t.begin(a).turn, 2);
  EXPECT_EQ(t.begin(b).turn, 1);
  const auto third = t.begin(a);
  EXPECT_EQ(third.turn, 3);
  EXPECT_EQ(third.session_id, "agent-a");
  EXPECT_EQ(third.source, "header");
}

TEST(Sessions, AResponsesChainIsOneSessionNamedByItsFirstResponse) {
  SessionTable t;
  const auto root = *session_claim(std::nullopt, responses());
  auto p1 = t.begin(root);
  EXPECT_FALSE(p1.session_id);  // known with the response
  t.finish(root, std::string("resp_1"), p1);
  EXPECT_EQ(p1.session_id, "resp_1");
  EXPECT_EQ(p1.turn, 1);
  const auto second = *session_claim(std::nullopt, responses("resp_1"));
  auto p2 = t.begin(second);
  t.finish(second, std::string("resp_2"), p2);
  EXPECT_EQ(p2.session_id, "resp_1");
  EXPECT_EQ(p2.turn, 2);
  EXPECT_EQ(p2.source, "previous_response_id");
  auto p3 = t.begin(*session_claim(std::nullopt, responses("resp_2")));
  EXPECT_EQ(p3.session_id, "resp_1");
  EXPECT_EQ(p3.turn, 3);
  // A chain that began before this proxy saw it: named by the id it continues, its turn unknown.
  auto unseen = t.begin(*session_claim(std::nullopt, responses("resp_elsewhere")));
  EXPECT_EQ(unseen.session_id, "resp_elsewhere");
  EXPECT_FALSE(unseen.turn);
  // A root whose response never came names no session.
  auto failed = t.begin(root);
  t.finish(root, std::nullopt, failed);
  EXPECT_FALSE(failed.session_id);
  EXPECT_FALSE(failed.source);
  EXPECT_FALSE(failed.turn);
}

TEST(Sessions, AChainContinuedUnderAHeaderKeepsTheHeadersSession) {
  SessionTable t;
  openai::RequestInfo first = responses();
  const auto named = *session_claim(std::string_view("agent-9"), first);
  auto p1 = t.begin(named);
  t.finish(named, std::string("resp_a"), p1);
  auto p2 = t.begin(*session_claim(std::nullopt, responses("resp_a")));  // the next turn, header dropped
  EXPECT_EQ(p2.session_id, "agent-9");
  EXPECT_EQ(p2.turn, 2);
  EXPECT_EQ(t.begin(named).turn, 3);  // the header's next request counts on from the chain's turn
}

TEST(Sessions, TheTableForgetsItsOldestSessionsPastItsCapacity) {
  SessionTable t(2);
  const SessionClaim a{SessionEvidence::kHeader, "a", false}, b{SessionEvidence::kHeader, "b", false},
      c{SessionEvidence::kHeader, "c", false};
  t.begin(a);
  t.begin(a);
  t.begin(b);
  t.begin(c);  // a is forgotten
  EXPECT_EQ(t.sessions(), 2u);
  EXPECT_EQ(t.begin(a).turn, 1);
  EXPECT_EQ(t.begin(c).turn, 2);
}

TEST(Sessions, TheRequestBodysEvidenceIsRead) {
  const auto info = openai::inspect_request(
      "/v1/responses",
      R"({"model":"m","previous_response_id":"resp_9","user":"u","safety_identifier":"s","metadata":{"user_id":"mu"}})");
  EXPECT_EQ(info.previous_response_id, "resp_9");
  EXPECT_EQ(info.user, "u");
  EXPECT_EQ(info.safety_identifier, "s");
  EXPECT_EQ(info.metadata_user_id, "mu");
  const auto none = openai::inspect_request("/v1/chat/completions", R"({"model":"m","user":""})");
  EXPECT_FALSE(none.user);  // empty names nothing
}

}  // namespace
}  // namespace mpo::proxy
