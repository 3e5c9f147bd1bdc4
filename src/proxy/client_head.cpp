// The implementation of proxy/client_head.hpp.
#include "proxy/client_head.hpp"

#include <boost/beast/core/string.hpp>
#include <charconv>

#include "core/text.hpp"
#include "proxy/field_id.hpp"
#include "proxy/hop_by_hop.hpp"

namespace mpo::proxy {
namespace {

namespace beast = boost::beast;

// Calls add(name, value) for the client head's fields before its framing and Connection fields:
// the backend's, less the hop-by-hop ones and its Content-Length, then the fields the proxy sets
// (each replacing one of the backend's of that name, at the end, as Beast's set() does).
template <class Add>
void copied_fields(const ClientHeadInput& in, Add&& add) {
  const auto& head = in.parser.head();
  const std::string_view tokens = connection_tokens(head);
  const http::field id_field = field_id(in.id_header);  // the thread's table: no hash a response
  for (const auto& f : head) {
    const auto name = f.name_string();
    if (is_hop_by_hop_field(f, tokens) || f.name() == http::field::content_length) continue;
    // Names are compared by Beast's enum where it has one, as text only where it has none (issue 43).
    if (id_field != http::field::unknown ? f.name() == id_field
                                         : f.name() == http::field::unknown && beast::iequals(name, in.id_header)) {
      continue;
    }
    if (in.sse && f.name() == http::field::unknown && beast::iequals(name, "X-Accel-Buffering")) continue;
    add(name, f.value());
  }
  add(in.id_header, in.observation_id);
  if (in.sse) add("X-Accel-Buffering", "no");
}

}  // namespace

ClientFraming client_framing(const ClientHeadInput& in) {
  const auto& head = in.parser.head();
  if (head.has_content_length() && !in.strip_usage) return ClientFraming::kLength;
  const bool bodyless =
      head.result() == http::status::no_content || head.result() == http::status::not_modified || in.head_request;
  // HTTP/1.0 has no chunked coding: its clients get the body up to the close.
  return !bodyless && in.version >= 11 ? ClientFraming::kChunked : ClientFraming::kNone;
}

http::response<http::buffer_body> client_response_head(const ClientHeadInput& in, bool keep_alive) {
  http::response<http::buffer_body> res;
  res.result(in.parser.head().result_int());
  res.version(in.version);
  copied_fields(in, [&](std::string_view name, std::string_view value) { res.insert(name, value); });
  switch (client_framing(in)) {
    case ClientFraming::kLength: res.content_length(in.parser.content_length().value_or(0)); break;
    case ClientFraming::kChunked: res.chunked(true); break;
    case ClientFraming::kNone: break;
  }
  res.keep_alive(keep_alive);
  res.body().data = nullptr;
  res.body().more = true;
  return res;
}

std::string client_response_head_text(const ClientHeadInput& in, bool keep_alive) {
  std::string out;
  write_client_response_head(out, in, keep_alive);
  return out;
}

void write_client_response_head(std::string& out, const ClientHeadInput& in, bool keep_alive) {
  TextWriter w(out, 512);
  const unsigned version = in.version;
  const unsigned status = in.parser.head().result_int();
  char number[24];
  const auto reason = http::obsolete_reason(http::int_to_status(status));
  w.put(version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ")
      .put({number, static_cast<std::size_t>(std::to_chars(number, number + sizeof number, status).ptr - number)})
      .put(" ")
      .put({reason.data(), reason.size()})
      .put("\r\n");
  copied_fields(in, [&w](std::string_view name, std::string_view value) { w.field_line(name, value); });
  switch (client_framing(in)) {
    case ClientFraming::kLength: {
      const auto end = std::to_chars(number, number + sizeof number, in.parser.content_length().value_or(0)).ptr;
      w.field_line("Content-Length", {number, static_cast<std::size_t>(end - number)});
      break;
    }
    case ClientFraming::kChunked: w.put("Transfer-Encoding: chunked\r\n"); break;
    case ClientFraming::kNone: break;
  }
  // What Beast's keep_alive() adds when no Connection field is left (the backend's is hop-by-hop).
  if (version >= 11 && !keep_alive) w.put("Connection: close\r\n");
  if (version < 11 && keep_alive) w.put("Connection: keep-alive\r\n");
  w.put("\r\n").finish();
}

}  // namespace mpo::proxy
