// Sessions (issue 41): which conversation a request belongs to, and its turn in it, from the first
// evidence that exists (docs/FORMATS.md "Sessions"):
//   1. the session header (--session-header, default X-Session-ID), its value as given;
//   2. the Responses API's previous_response_id: the proxy links each response to the one it
//      continues, so a chain is one session named by its first response's id; a chain that began
//      before this proxy saw it is named by the id it continues, its turn unknown;
//   3. Anthropic's metadata.user_id, 4. OpenAI's `user`, 5. OpenAI's `safety_identifier`: end-user
//      identities, written as a digest (sha256, 16 hex digits), never as given;
//   6. none: no session.
// A Responses request that continues nothing starts a chain: its session is its own response id,
// known when the response is (`SessionTable::finish`). Turns count the session's requests as this
// proxy saw them, from 1. Pure; the table is bounded (the oldest sessions forgotten first).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "openai/chunk.hpp"

namespace mpo::proxy {

enum class SessionEvidence { kHeader, kPreviousResponse, kChainRoot, kMetadataUserId, kUser, kSafetyIdentifier };

// What a request says of its session before the table is asked.
struct SessionClaim {
  SessionEvidence evidence = SessionEvidence::kHeader;
  std::string key;         // the header's value, the previous response id, or an identity's digest
  bool responses = false;  // a Responses API request: its response may be continued
};

// The value written as session_source.
std::string_view session_source(SessionEvidence e);

// "sha256:" and the first 16 hex digits of the value's SHA-256.
std::string identity_digest(std::string_view value);

// The request's claim, by the order above; none when nothing names a session. `header` is the
// session header's value when the request carries one.
std::optional<SessionClaim> session_claim(std::optional<std::string_view> header, const openai::RequestInfo& info);

struct SessionPlace {
  std::optional<std::string> session_id;
  std::optional<std::string> source;
  std::optional<std::int64_t> turn;
};

class SessionTable {
 public:
  explicit SessionTable(std::size_t capacity = 100'000) : capacity_(capacity) {}

  // Where a request stands when it begins (a chain root's session is still unknown).
  SessionPlace begin(const SessionClaim& claim);
  // When its response is known: a chain root takes its own response id as its session's (no id, no
  // session), and a Responses response is remembered with its session and turn, so the request that
  // continues it (previous_response_id) finds its place, whatever named the session.
  void finish(const SessionClaim& claim, const std::optional<std::string>& response_id, SessionPlace& place);

  std::size_t sessions() const { return turns_.size(); }

 private:
  struct Link {
    std::string session_id;
    std::optional<std::int64_t> turn;
  };
  void forget_oldest();

  std::size_t capacity_;
  std::unordered_map<std::string, std::int64_t> turns_;  // counted sessions: turns seen so far
  std::unordered_map<std::string, Link> links_;          // response id -> its session and turn
  struct Entry {
    bool link = false;  // a response link, else a counted session
    std::string key;
  };
  std::deque<Entry> order_;  // every key in the order it came: the oldest is forgotten first
};

}  // namespace mpo::proxy
