// The pure half of the simulator's completion handler: from a parsed request, the profile, the
// scenario's fault draw and the server seed, what the engine is asked to do (the RequestSpec), how
// many tokens the response will carry, where a 'truncate' fault cuts the stream, and how many of
// the tokens are reasoning. Unit tested (tests/sim/request_plan_test.cpp); server.cpp does the I/O.
#pragma once

#include <cstdint>

#include "sim/config.hpp"
#include "sim/engine.hpp"
#include "sim/openai_api.hpp"
#include "sim/scenario.hpp"

namespace mpo::sim {

struct RequestPlan {
  RequestSpec spec;
  int expected_tokens = 0;   // what the response will carry: max_tokens, the natural length, or the room left
  int truncate_after = -1;   // 'truncate' fault: the stream is cut after this many tokens; -1 = never
  int reasoning_tokens = 0;  // a reasoning model's share of expected_tokens (chat without a forced tool)
};

// `choice`: which of the request's `n` choices (each its own sequence, with its own draws; choice 0
// is what a request of one choice gets).
RequestPlan plan_request(const CompletionRequest& req, const Profile& profile, Fault fault, std::uint64_t server_seed,
                         int choice = 0);

}  // namespace mpo::sim
