// The client's response head from the backend's (edge: Beast's message types, no I/O): hop-by-hop
// fields and Content-Length dropped, the proxy's observation id added; the backend's length kept
// unless usage is stripped, else chunked (HTTP/1.1) or read to the close (HTTP/1.0). As a Beast
// message for the serializer (the body re-framed), or as the bytes that serializer would write
// (the body relayed as it came: building Beast's fields for that cost ~7% of the proxy's
// instructions per one-token request, issue 43). One list of fields feeds both.
#pragma once

#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>
#include <string_view>

#include "proxy/backend_parser.hpp"

namespace mpo::proxy {

namespace http = boost::beast::http;

struct ClientHeadInput {
  unsigned version = 11;        // the client's request's
  bool head_request = false;    // a HEAD request: its response has no body
  const BackendParser& parser;  // holds the backend's head
  std::string_view id_header;
  std::string_view observation_id;
  bool sse = false;
  bool strip_usage = false;
};

// How the client's body is delimited.
enum class ClientFraming { kLength, kChunked, kNone };
ClientFraming client_framing(const ClientHeadInput& in);

// The head as a message for Beast's serializer; its body is set piece by piece as it comes.
http::response<http::buffer_body> client_response_head(const ClientHeadInput& in, bool keep_alive);
// The same head's bytes, as Beast's serializer writes them.
std::string client_response_head_text(const ClientHeadInput& in, bool keep_alive);
// The same written into `out` (emptied first).
void write_client_response_head(std::string& out, const ClientHeadInput& in, bool keep_alive);

}  // namespace mpo::proxy
