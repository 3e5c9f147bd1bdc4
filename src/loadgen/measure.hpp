// The pure half of measuring one request of a sweep: from what the load generator saw (when it
// sent the request and when the body ended, the status, the stream tap over the body, how the body
// ended) to fak's sample fields and the ledger line's outcome. The driver (driver.cpp) only does
// the I/O; these rules are unit tested without sockets (tests/loadgen/measure_test.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ledger/observation.hpp"
#include "loadgen/sample.hpp"
#include "openai/stream_tap.hpp"

namespace mpo::loadgen {

// No response head arrived: the connection, the write or the head failed (`stage`: resolve,
// connect, tls, write, header). `message` says what happened.
struct RequestFailure {
  std::string stage;
  bool timeout = false;
  std::string message;
};
void record_failure(Sample& s, ledger::Observation& o, const RequestFailure& f);

// A response head arrived; how its body ended.
enum class BodyEnd { kComplete, kTimeout, kReset, kTruncated };

struct Response {
  std::int64_t sent_us = 0;  // steady clock: the request's first byte written
  std::int64_t end_us = 0;   // steady clock: the body ended (or failed)
  int http_status = 0;
  bool sse = false;
  BodyEnd body_end = BodyEnd::kComplete;
  std::string body_error;  // why the body ended early, when it did
  std::string error_body;  // the first 4 KiB of a non-2xx body
};
// Fills TTFT (first generated content of any kind), ITL, TPOT, the output token count and its
// basis (usage, else content events, else bytes / 4), usage, the served model, and the outcome:
// fak's ok/fail and error class in the sample, ours in the ledger line (`o`, filled from the tap,
// whose response id and gaps move into it).
void record_response(Sample& s, ledger::Observation& o, openai::StreamTap&& tap, const Response& r);

}  // namespace mpo::loadgen
