// A ledger line as the proxy writes one for a streamed chat that went well (POST
// /v1/chat/completions, 200, ok, token counts from usage), for unit tests to change what they
// assert on. Header-only: the pure libraries' tests use it without the integration support library.
#pragma once

#include <cstdint>
#include <string>

#include "ledger/observation.hpp"

namespace mpo::test {

inline ledger::Observation streamed_chat_line(std::string id, std::int64_t started_at_us, double e2e_ms) {
  ledger::Observation o;
  o.observation_id = std::move(id);
  o.started_at_us = started_at_us;
  o.ended_at_us = started_at_us + static_cast<std::int64_t>(e2e_ms * 1000);
  o.method = "POST";
  o.path = "/v1/chat/completions";
  o.operation = "chat";
  o.stream = true;
  o.http_status = 200;
  o.outcome = "ok";
  o.e2e_ms = e2e_ms;
  o.token_source = "usage";
  return o;
}

}  // namespace mpo::test
