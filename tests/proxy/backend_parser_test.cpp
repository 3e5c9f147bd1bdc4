// The backend's response parser (proxy/backend_parser.hpp, issue 43): it reads every response as
// Beast's own parser with buffer_body does (the same status, version, fields in order, framing,
// keep-alive, body bytes and errors), however the bytes are split and however small the relay's
// body buffer is. The responses are invented edge cases around the shapes engines send.
#include "proxy/backend_parser.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <string>
#include <utility>
#include <vector>

namespace mpo::proxy {
namespace {

struct Reading {
  unsigned status = 0, version = 0;
  std::vector<std::pair<std::string, std::string>> fields;
  std::vector<int> ids;
  bool chunked = false, keep_alive = false, done = false, has_length = false;
  std::string body, error;
  bool operator==(const Reading&) const = default;
};

// Feeds `response` `step` bytes at a time with a body buffer of `room` bytes, as the relay does.
template <class Parser, class Head, class BodyOf>
Reading read_with(Parser& p, const std::string& response, std::size_t step, std::size_t room, Head head, BodyOf body_of,
                  bool eof) {
  Reading r;
  p.header_limit(64 * 1024);
  p.body_limit(boost::none);
  std::string buf(room, '\0');
  std::size_t at = 0, have = std::min(response.size(), step);  // taken by the parser, and given so far
  boost::system::error_code ec;
  while (!p.is_done() && !ec) {
    body_of(p).data = buf.data();
    body_of(p).size = room;
    const std::size_t used = p.put(boost::asio::buffer(response.data() + at, have - at), ec);
    at += used;
    const std::size_t got = room - body_of(p).size;
    r.body.append(buf.data(), got);
    if (ec == boost::beast::http::error::need_more || ec == boost::beast::http::error::need_buffer) ec = {};
    if (used > 0 || got > 0) continue;
    if (have == response.size()) {  // all given, nothing more taken: the end of the connection
      if (eof && !p.is_done()) p.put_eof(ec);
      break;
    }
    have = std::min(response.size(), have + step);
  }
  r.error = ec.message();
  r.done = p.is_done();
  if (p.is_header_done()) {
    const auto& h = head(p);
    r.status = h.result_int();
    r.version = h.version();
    for (const auto& f : h) {
      r.fields.emplace_back(std::string(f.name_string()), std::string(f.value()));
      r.ids.push_back(static_cast<int>(f.name()));
    }
    r.has_length = h.has_content_length();
    r.chunked = p.chunked();
    r.keep_alive = p.keep_alive();
  }
  return r;
}

TEST(BackendParser, ReadsEveryResponseAsBeastsParserWithABufferBodyDoes) {
  const std::string responses[] = {
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "1a;ext=1\r\ndata: {\"a\":1}\n\ndata: [DONE]\n\r\n0\r\nX-Trailer: t\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nX-Request-Id: r\r\n"
      "x-custom:   spaced value  \r\n\r\n{\"ok\":true}\n",
      "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread to the close",
      "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nETag: x\r\n\r\n",
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: "
      "timeout=5\r\n\r\nbusy!",
      "HTTP/1.1 299 Whatever\r\nContent-Length: 0\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",
      // Broken: two lengths that differ, a bad chunk size, a field without a colon, a truncated body.
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
  };
  for (const auto& response : responses) {
    for (const std::size_t step : {std::size_t{1}, std::size_t{7}, response.size()}) {
      for (const std::size_t room : {std::size_t{1}, std::size_t{5}, std::size_t{16384}}) {
        BackendParser ours;
        http::response_parser<http::buffer_body> beasts;
        const Reading a = read_with(
            ours, response, step, room, [](BackendParser& p) -> const BackendHead& { return p.head(); },
            [](BackendParser& p) -> BackendParser::Body& { return p.body(); }, true);
        const Reading b = read_with(
            beasts, response, step, room, [](auto& p) -> const auto& { return p.get(); },
            [](auto& p) -> auto& { return p.get().body(); }, true);
        EXPECT_EQ(a, b) << "step " << step << ", room " << room << ":\n" << response;
      }
    }
  }
  BackendParser head_only;
  head_only.skip(true);  // a HEAD request's response: no body whatever its length says
  const Reading h = read_with(
      head_only, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 64, 16,
      [](BackendParser& p) -> const BackendHead& { return p.head(); },
      [](BackendParser& p) -> BackendParser::Body& { return p.body(); }, false);
  EXPECT_TRUE(h.done);
  EXPECT_TRUE(h.has_length);
  EXPECT_EQ(h.body, "");
}

}  // namespace
}  // namespace mpo::proxy
