// The proxy's one-line notes about its backend: once per kind, again only after a success.
#include "proxy/backend_notes.hpp"

#include <gtest/gtest.h>

namespace mpo::proxy {
namespace {

ledger::Observation line(std::string outcome, std::optional<int> status, std::string operation = "chat") {
  ledger::Observation o;
  o.outcome = std::move(outcome);
  o.http_status = status;
  o.method = "POST";
  o.path = "/v1/chat/completions";
  o.operation = std::move(operation);
  o.error_message = "cannot connect to http://127.0.0.1:9: Connection refused";
  return o;
}

TEST(BackendNotes, EachKindIsSaidOnceAndAgainAfterASuccess) {
  BackendNotes notes("http://127.0.0.1:9");
  auto first = notes.observe(line("upstream_unreachable", 502));
  ASSERT_TRUE(first);
  EXPECT_NE(first->find("Connection refused"), std::string::npos) << *first;
  EXPECT_NE(first->find("answered 502 until it answers"), std::string::npos) << *first;
  EXPECT_FALSE(notes.observe(line("upstream_unreachable", 502)));
  EXPECT_FALSE(notes.observe(line("ok", 200)));
  EXPECT_TRUE(notes.observe(line("upstream_unreachable", 502)));  // re-armed by the success
  EXPECT_FALSE(notes.observe(line("upstream_timeout", 504)));     // the same kind: not reachable
}

TEST(BackendNotes, A404OnAnApiPathNamesTheBasePath) {
  BackendNotes notes("http://127.0.0.1:8000/v1");
  const auto said = notes.observe(line("http_error", 404));
  ASSERT_TRUE(said);
  EXPECT_NE(said->find("answered HTTP 404 for POST /v1/chat/completions"), std::string::npos) << *said;
  EXPECT_NE(said->find("drop the /v1"), std::string::npos) << *said;
  EXPECT_FALSE(notes.observe(line("http_error", 404)));
  // A 404 on a path that is not an API the proxy knows says nothing.
  BackendNotes other("http://127.0.0.1:8000");
  EXPECT_FALSE(other.observe(line("http_error", 404, "other")));
  const auto plain = other.observe(line("http_error", 404));
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->find("drop the /v1"), std::string::npos) << *plain;
}

}  // namespace
}  // namespace mpo::proxy
