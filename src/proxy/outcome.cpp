// The implementation of proxy/outcome.hpp. The outcome of a relayed response (docs/PROXY.md
// "Outcomes"), decided from what the relay saw.
#include "proxy/outcome.hpp"

namespace mpo::proxy {

std::string_view relay_outcome(const RelayEnd& e) {
  if (e.client_left && !e.terminal_forwarded) return "client_disconnected";
  if (!e.client_left) {
    switch (e.upstream) {
      case UpstreamEnd::kTimeout: return "upstream_timeout";
      case UpstreamEnd::kReset: return "upstream_reset";
      case UpstreamEnd::kTruncated: return "stream_truncated";
      case UpstreamEnd::kProtocolError: return "upstream_protocol_error";
      case UpstreamEnd::kComplete: break;
    }
  }
  if (e.http_status >= 400) return "http_error";
  // An error event ends an Anthropic or Responses stream without the usual terminal event.
  if (e.sse && e.error_event) return "stream_error";
  if (!e.client_left && missing_terminal_event(e)) return "stream_truncated";
  if (e.sse && e.malformed) return "malformed_stream";
  return "ok";
}

bool is_upstream_failure(std::string_view outcome) {
  return outcome == "upstream_timeout" || outcome == "upstream_reset" || outcome == "stream_truncated" ||
         outcome == "upstream_protocol_error";
}

}  // namespace mpo::proxy
