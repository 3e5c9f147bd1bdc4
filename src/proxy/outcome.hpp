// The outcome of a relayed response (docs/PROXY.md "Outcomes"), decided from what the relay saw.
// Pure, so every combination is unit tested; the edge only gathers the facts.
#pragma once

#include <string_view>

namespace mpo::proxy {

enum class UpstreamEnd {
  kComplete,       // the body ended as its framing says
  kTimeout,        // silence over --stream-idle-timeout
  kReset,          // TCP reset mid-body
  kTruncated,      // closed (or failed otherwise) mid-body
  kProtocolError,  // the body's framing broke HTTP (a bad chunk): upstream_protocol_error
};

struct RelayEnd {
  // The client went away: a write to it failed, or it closed its connection.
  bool client_left = false;
  // The stream's terminal event ([DONE], response.completed, message_stop, ...) had been written
  // to the client before it left. A client that stops reading there got the whole answer.
  bool terminal_forwarded = false;
  UpstreamEnd upstream = UpstreamEnd::kComplete;
  int http_status = 0;
  bool sse = false;
  bool malformed = false;  // the event stream had unparsable events or garbage lines
  // The stream spoke an API whose streams end with a terminal event (Responses, Messages), and
  // whether that event arrived.
  bool terminal_required = false;
  bool terminal_seen = false;
  // The backend reported an error inside a 2xx event stream (an error event, response.failed).
  bool error_event = false;
};

// "ok", "http_error", "stream_error", "malformed_stream", "client_disconnected",
// "upstream_timeout", "upstream_reset", "upstream_protocol_error" or "stream_truncated". A client that leaves after the
// terminal event is not a disconnect, and what the backend's connection did after it (closed by
// the proxy because the client left, or by the backend itself) is not an upstream failure: the
// exchange was complete. A Responses or Messages stream whose body ended properly but without its
// terminal event was cut short: stream_truncated.
std::string_view relay_outcome(const RelayEnd& e);

// True for the outcomes that describe a backend failure (they carry error_type/error_message).
bool is_upstream_failure(std::string_view outcome);

// The stream ended properly by its framing but lacked the terminal event its API requires.
inline bool missing_terminal_event(const RelayEnd& e) {
  return e.sse && e.terminal_required && !e.terminal_seen && e.upstream == UpstreamEnd::kComplete;
}

}  // namespace mpo::proxy
