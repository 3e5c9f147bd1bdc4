// The client's response head (proxy/client_head.hpp): its bytes written directly, for a body relayed
// as it came, are exactly what Beast's serializer writes for the same head as a message (issue 43),
// over backend heads of every framing, hop-by-hop fields, the proxy's own fields given by the
// backend, HTTP/1.0 and 1.1 clients, keep-alive or not, HEAD, 204, 304 and a status Beast does not know.
#include "proxy/client_head.hpp"

#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/write.hpp>  // operator<< of a header: what the serializer writes
#include <sstream>
#include <string>

namespace mpo::proxy {
namespace {

struct Backend {
  explicit Backend(const std::string& head) {
    parser.header_limit(64 * 1024);
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(head), ec);
    EXPECT_TRUE(parser.is_header_done()) << ec.message() << "\n" << head;
  }
  BackendParser parser;
};

std::string serialized(const http::response<http::buffer_body>& res) {
  std::ostringstream os;
  os << res.base();
  return os.str();
}

TEST(ClientHead, ItsBytesAreWhatBeastsSerializerWritesForTheSameHead) {
  const std::string heads[] = {
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: "
      "keep-alive\r\nKeep-Alive: timeout=5\r\nX-Request-Id: abc\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nx-fak-observation-id: "
      "from-backend\r\nX-Accel-Buffering: yes\r\nServer: engine\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: X-Drop, close\r\nX-Drop: 1\r\nX-Keep: 2\r\nTrailer: X-T\r\nTE: "
      "trailers\r\nUpgrade: h2c\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 204 No Content\r\nDate: Thu, 03 Dec 2026 16:00:00 GMT\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n",
      "HTTP/1.1 599 Whatever\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n",
      "HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n\r\n",
  };
  int compared = 0;
  for (const auto& head : heads) {
    for (const unsigned version : {10u, 11u}) {
      for (const auto method : {http::verb::post, http::verb::head}) {
        for (const bool sse : {false, true}) {
          for (const bool strip : {false, true}) {
            for (const bool keep_alive : {false, true}) {
              Backend b(head);
              http::request<http::string_body> req(method, "/v1/chat/completions", version);
              const ClientHeadInput in{
                  req.version(), req.method() == http::verb::head, b.parser, "X-Fak-Observation-ID", "run-1.req_9", sse,
                  strip};
              EXPECT_EQ(client_response_head_text(in, keep_alive), serialized(client_response_head(in, keep_alive)))
                  << head << "version " << version << " method " << method << " sse " << sse << " strip " << strip
                  << " keep-alive " << keep_alive;
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 7 * 32);
}

TEST(ClientHead, DropsHopByHopFieldsAndPutsTheProxysOwnLast) {
  Backend b(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive, "
      "X-Drop\r\nKeep-Alive: timeout=5\r\nX-Drop: 1\r\nX-Fak-Observation-ID: from-backend\r\nX-Request-Id: "
      "abc\r\n\r\n");
  http::request<http::string_body> req(http::verb::post, "/v1/chat/completions", 11);
  const ClientHeadInput in{
      req.version(), req.method() == http::verb::head, b.parser, "X-Fak-Observation-ID", "run-1.req_9", true, false};
  EXPECT_EQ(client_framing(in), ClientFraming::kChunked);
  EXPECT_EQ(client_response_head_text(in, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Request-Id: abc\r\nX-Fak-Observation-ID: "
            "run-1.req_9\r\nX-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n\r\n");
  http::request<http::string_body> old(http::verb::post, "/v1/chat/completions", 10);
  const ClientHeadInput in10{old.version(), false, b.parser, "X-Fak-Observation-ID", "run-1.req_9", true, false};
  EXPECT_EQ(client_framing(in10), ClientFraming::kNone);  // read to the close
}

}  // namespace
}  // namespace mpo::proxy
