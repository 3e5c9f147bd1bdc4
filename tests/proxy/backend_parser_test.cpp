// The backend's response parser (proxy/backend_parser.hpp, issue 43) reads every response as
// Beast's own parser with a buffer_body does: the same status, version, head fields in order,
// framing, keep-alive, body bytes and error, however the bytes are split and however small the
// relay's body buffer. The heads of real llama.cpp captures (framed again as the engine sent them),
// invented edge cases named as such, and thousands of mutations of both, each compared.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../fuzz/backend_parser_reading.hpp"
#include "support/fixtures.hpp"

namespace mpo::proxy {
namespace {

using reading::read_beasts;
using reading::read_ours;
using reading::Reading;

// A capture's head and its body framed as the engine sent it: chunked (one chunk per event) or
// with its Content-Length (the captures were taken with curl, which removes the chunking).
std::string as_sent(const std::string& capture) {
  const auto head_end = capture.find("\r\n\r\n") + 4;
  const std::string head = capture.substr(0, head_end), body = capture.substr(head_end);
  if (head.find("Transfer-Encoding: chunked") == std::string::npos) return capture;
  std::string out = head;
  for (std::size_t at = 0; at < body.size();) {
    auto end = body.find("\n\n", at);
    end = end == std::string::npos ? body.size() : end + 2;
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", end - at);
    out += size + body.substr(at, end - at) + "\r\n";
    at = end;
  }
  return out + "0\r\n\r\n";
}

std::vector<std::string> responses() {
  std::vector<std::string> all;
  for (const char* name :
       {"llamacpp/llamacpp_b10309_chat_stream.http", "llamacpp/llamacpp_b10309_responses_stream.http",
        "llamacpp/llamacpp_b10309_messages_stream.http", "llamacpp/llamacpp_b10309_responses_nostream.http",
        "llamacpp/llamacpp_b10309_messages_nostream.http"}) {
    all.push_back(as_sent(test::read_fixture(name)));
  }
  const char* invented[] = {
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "1d;ext=1\r\ndata: {\"a\":1}\n\ndata: [DONE]\n\r\n0\r\nX-Trailer: t\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 ; a = \"q\\\"x\" ; b\r\nhello\r\n0;last\r\n\r\n",
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\nX-Request-Id: r\r\n"
      "x-custom:   spaced value  \r\n\r\n{\"ok\":true}\n",
      "HTTP/1.1 200 OK\r\nX-Folded: first\r\n  second\r\n\tthird\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nX-Folded:\r\n  \r\n after-empty\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX-Obs-Text: caf\xc3\xa9\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread to the close",
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
      "HTTP/1.1 200 OK\r\nConnection: Upgrade, close\r\nContent-Length: 1\r\n\r\nx",
      "HTTP/1.1 200 OK\r\nContent-Length: 4, 4\r\n\r\nabcd",
      "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\nnot chunked: to the close",
      "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
      "HTTP/1.1 304 Not Modified\r\nETag: x\r\nContent-Length: 10\r\n\r\n",
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
      "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 5\r\nConnection: keep-alive\r\nKeep-Alive: "
      "timeout=5\r\n\r\nbusy!",
      "HTTP/1.1 299 Whatever\r\nContent-Length: 0\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n",
      "HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
      // Broken, each in its own way.
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
      "HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd",
      "HTTP/1.1 200 OK\r\nContent-Length: 3,\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;=x\r\nab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 x\r\nab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\rab\r\n0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 1\r\n\r\n",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
      "HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
      "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
      "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\rz\r\n\r\n",
      "HTTP/1.1 200 OK\r\nX: a\nz\r\n\r\n",
      "HTTP/1.1 200 OK\r\nConnection: close;x\r\n\r\n",
      "HTTP/1.1 200 OK\r\n\rX\r\n\r\n",
      "HTTP/1.1 200 O\x01K\r\n\r\n",
      "HTTP/1.1 20 OK\r\n\r\n",
      "HTTP/1.1 200OK\r\n\r\n",
      "HTTP/2.0 200 OK\r\n\r\n",
      "HTTP/1.1-200 OK\r\n\r\n",
      "SSH-2.0-OpenSSH_9.2\r\n",
      "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: t\r\n",
      "HTTP/1.1 200 OK\r\nContent-Le",
  };
  for (const char* r : invented) all.emplace_back(r);
  return all;
}

void expect_same(const std::string& response, std::size_t step, std::size_t room, bool head_request) {
  const Reading a = read_ours(response, step, room, head_request);
  const Reading b = read_beasts(response, step, room, head_request);
  EXPECT_EQ(a, b) << "step " << step << ", room " << room << (head_request ? ", HEAD" : "") << ": ours '" << a.error
                  << "' done " << a.done << " body " << a.body.size() << ", Beast's '" << b.error << "' done " << b.done
                  << " body " << b.body.size() << ":\n"
                  << response;
  // The body left in place (a body relayed as it came): the same reading, its bytes the spans'.
  const Reading c = read_ours(response, step, room, head_request, true);
  EXPECT_EQ(c, b) << "in place, step " << step << ", room " << room << ": '" << c.error << "':\n" << response;
}

TEST(BackendParser, ReadsEveryResponseAsBeastsParserWithABufferBodyDoes) {
  for (const auto& response : responses()) {
    for (const std::size_t step : {std::size_t{1}, std::size_t{2}, std::size_t{7}, response.size()}) {
      for (const std::size_t room : {std::size_t{1}, std::size_t{5}, std::size_t{16384}}) {
        expect_same(response, step, room, false);
      }
    }
    expect_same(response, response.size(), 16384, true);
  }
}

// Each response with a few bytes changed, taken away or put in, from the bytes HTTP's grammar turns
// on: whatever comes of it, both parsers say the same.
TEST(BackendParser, ReadsMutatedResponsesAsBeastsParserDoes) {
  static constexpr char kBytes[] = {'\r', '\n', ' ', '\t', ':', ';', ',', '=',    '"',    '\\',   '0',
                                    '1',  'a',  'f', 'g',  'H', '/', '.', '\x00', '\x7f', '\x80', '\xff'};
  std::mt19937 rng(20261204);
  const auto all = responses();
  int compared = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string r = all[rng() % all.size()];
    for (unsigned edits = 1 + rng() % 3; edits > 0 && !r.empty(); --edits) {
      // Mostly past the status line, which one edit nearly always breaks.
      const std::size_t from = r.size() > 17 && rng() % 5 != 0 ? 17 : 0;
      const std::size_t at = from + rng() % (r.size() - from);
      const char c = kBytes[rng() % sizeof kBytes];
      switch (rng() % 3) {
        case 0: r[at] = c; break;
        case 1: r.erase(at, 1 + rng() % 3); break;
        default: r.insert(at, 1, c); break;
      }
    }
    // Splits as small as a byte, and as large as a status line and part of a field.
    const std::size_t step = rng() % 2 == 0 ? r.size() : 1 + rng() % 48;
    const std::size_t room = rng() % 2 == 0 ? 16384 : 1 + rng() % 32;
    expect_same(r, step, room, rng() % 8 == 0);
    ++compared;

    if (HasFailure()) break;
  }
  EXPECT_EQ(compared, 20000);
}

// What the proxy reads of a real engine's head, written out (not only "as Beast"): llama.cpp's
// streamed chat head, its empty field value kept, its body the engine's events.
TEST(BackendParser, ReadsARealLlamaCppStreamsHeadAndBody) {
  const std::string capture = test::read_fixture("llamacpp/llamacpp_b10309_chat_stream.http");
  const Reading r = read_ours(as_sent(capture), 64, 4096, false);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.error, "Success");
  EXPECT_EQ(r.status, 200u);
  EXPECT_TRUE(r.chunked);
  EXPECT_TRUE(r.keep_alive);
  ASSERT_EQ(r.fields.size(), 6u);
  EXPECT_EQ(r.fields[0], (std::pair<std::string, std::string>("Server", "llama.cpp")));
  EXPECT_EQ(r.fields[1], (std::pair<std::string, std::string>("Access-Control-Allow-Origin", "")));
  EXPECT_EQ(r.fields[5], (std::pair<std::string, std::string>("Keep-Alive", "timeout=5, max=100")));
  EXPECT_EQ(r.ids[3], static_cast<int>(http::field::content_type));
  EXPECT_EQ(r.body, capture.substr(capture.find("\r\n\r\n") + 4));
}

// The head's fields in the order they came, two of a name apart included (the client gets them so,
// as nginx forwards them; Beast's container put the second beside the first), a folded value joined.
TEST(BackendParser, KeepsTheHeadsFieldsInTheOrderTheyCame) {
  BackendParser p;
  boost::system::error_code ec;
  const std::string head =
      "HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nX-Folded: one\r\n two\r\nset-cookie: b=2\r\nContent-Length: 0\r\n\r\n";
  p.put(boost::asio::buffer(head), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(p.is_done());
  std::vector<std::string> seen;
  for (const auto& f : p.head()) seen.push_back(std::string(f.name_string()) + "=" + std::string(f.value()));
  EXPECT_EQ(seen,
            (std::vector<std::string>{"Set-Cookie=a=1", "X-Folded=one two", "set-cookie=b=2", "Content-Length=0"}));
  EXPECT_EQ(p.head().find(http::field::set_cookie)->value(), "a=1");
}

// A chunk that came whole is taken whole, the CRLF after its data included: the relay forwards the
// bytes the parser took, so the client gets each event's chunk complete in one write (Beast kept
// that CRLF back until the next chunk's size line came).
TEST(BackendParser, TakesAWholeChunkWithTheCrlfAfterItsData) {
  BackendParser p;
  boost::system::error_code ec;
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  ASSERT_EQ(p.put(boost::asio::buffer(head), ec), head.size());
  char room[64];
  for (const std::string chunk : {"5\r\nhello\r\n", "6\r\n world\r\n"}) {
    p.body().data = room;
    p.body().size = sizeof room;
    EXPECT_EQ(p.put(boost::asio::buffer(chunk), ec), chunk.size()) << chunk;
    EXPECT_FALSE(ec) << ec.message();
  }
  const std::string end = "0\r\n\r\n";
  EXPECT_EQ(p.put(boost::asio::buffer(end), ec), end.size());
  EXPECT_TRUE(p.is_done());
  // A chunk's data followed by anything but CRLF is still a bad chunk, once four bytes show it.
  BackendParser q;
  q.put(boost::asio::buffer(head), ec);
  q.body().data = room;
  q.body().size = sizeof room;
  const std::string bad = "2\r\nabXY0\r\n\r\n";
  q.put(boost::asio::buffer(bad), ec);
  EXPECT_EQ(ec, http::error::bad_chunk);
}

// A HEAD request's response has no body whatever its length says; the parser is done at its head.
TEST(BackendParser, AHeadRequestsResponseEndsWithItsHead) {
  const Reading h = read_ours("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 64, 16, true);
  EXPECT_TRUE(h.done);
  EXPECT_TRUE(h.has_length);
  EXPECT_EQ(h.length, 99u);
  EXPECT_EQ(h.body, "");
}

// A head over the limit is refused once the limit's worth of bytes came without its end, whether
// it came in one read or many.
TEST(BackendParser, AHeadOverTheLimitIsRefusedHoweverItArrives) {
  const std::string head = "HTTP/1.1 200 OK\r\nX-Long: " + std::string(70 * 1024, 'x') + "\r\n\r\n";
  for (const std::size_t step : {std::size_t{1000}, head.size()}) {
    EXPECT_EQ(read_ours(head, step, 16384, false).error, "header limit exceeded") << step;
  }
  // Many fields each under the limit count together.
  std::string many = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 4000; ++i) many += "X-Field-" + std::to_string(i) + ": value\r\n";
  many += "\r\n";
  EXPECT_EQ(read_ours(many, 500, 16384, false).error, "header limit exceeded");
}

}  // namespace
}  // namespace mpo::proxy
