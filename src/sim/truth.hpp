// The simulator's ground truth: one JSONL line per finished request (schema
// "modelperfobs.sim-truth.v1"), with the engine's own times on the wall clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/engine.hpp"

namespace mpo::sim {

struct TruthContext {
  std::int64_t wall_origin_us = 0;  // wall-clock microseconds at engine time 0
  std::string model;
  std::string x_request_id;  // as the client sent them; empty when absent
  std::string observation_id;
  std::string traceparent;  // the W3C traceparent the request carried; empty when absent
  std::string response_id;  // the id the simulator answered with ("" for background)
  // Engine seconds when the write carrying a streamed response's first token started (the send
  // happens inside that call unless the socket buffer is full); unset when not streamed or when
  // that write failed.
  std::optional<double> first_token_sent_s;
  // Which choice of a request for several (`n` > 1) this sequence was: each has a line of its own.
  std::optional<int> choice;
};

// One line, newline included.
std::string render_truth_line(const FinishedRequest& f, const TruthContext& ctx);

}  // namespace mpo::sim
