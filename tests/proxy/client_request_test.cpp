// The client's request as the proxy holds it (proxy/client_request.hpp), made from the head
// parse_request_head read instead of Beast's parse (issue 43): the same line, fields, lookups and
// keep-alive as Beast's message of the same head, its views valid after moves, and a request copied
// from Beast's message (a chunked body, a refusal) the same.
#include "proxy/client_request.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "proxy/hop_by_hop.hpp"

namespace mpo::proxy {
namespace {

http::request<http::string_body> beast_parse(const std::string& head) {
  http::request_parser<http::string_body> p;
  p.eager(false);
  boost::system::error_code ec;
  p.put(boost::asio::buffer(head), ec);
  EXPECT_FALSE(ec) << ec.message();
  return p.release();
}

ClientRequest ours(const std::string& head) {
  auto parsed = parse_request_head(head);
  EXPECT_TRUE(parsed.ok()) << head;
  return ClientRequest::from_head(head, *parsed);
}

TEST(ClientRequest, ReadsAHeadAsBeastsMessageDoes) {
  const std::vector<std::string> connection = {"",
                                               "Connection: close\r\n",
                                               "Connection: keep-alive\r\n",
                                               "Connection: Keep-Alive, Upgrade\r\n",
                                               "Connection: foo\r\n",
                                               "Connection: foo\r\nConnection: close\r\n",
                                               "Connection: CLOSE\r\n",
                                               "Connection: Keep-Alive\r\n",
                                               "Connection: foo,close\r\n"};
  for (const std::string version : {"1.1", "1.0"}) {
    for (const auto& c : connection) {
      const std::string head = "POST /v1/chat/completions?x=1 HTTP/" + version + "\r\nHost: a:1\r\nX-Id:  one \r\n" +
                               c + "traceparent: t\r\nx-id: two\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n";
      const auto b = beast_parse(head);
      ClientRequest r = ours(head);
      EXPECT_EQ(r.method(), b.method());
      EXPECT_EQ(r.method_string(), b.method_string());
      EXPECT_EQ(r.target(), b.target());
      EXPECT_EQ(r.version(), b.version());
      EXPECT_EQ(r.keep_alive(), b.keep_alive()) << head;
      EXPECT_EQ(r.find("x-ID"), std::optional<std::string_view>("one"));
      EXPECT_EQ(r.count("X-Id"), b.count("X-Id"));
      EXPECT_EQ(r.find(http::field::content_length), b[http::field::content_length]);
      EXPECT_EQ(r.find("absent"), std::nullopt);
      // Fields in the order they came (Beast keeps those of one name together), each with its enum.
      ASSERT_GE(r.fields().size(), 6u);
      EXPECT_EQ(r.fields()[0].name, "Host");
      EXPECT_EQ(r.fields()[0].id, http::field::host);
      EXPECT_EQ(r.fields()[1].value, "one");
      EXPECT_EQ(r.fields()[1].id, http::field::unknown);
      r.erase(http::field::expect);
      EXPECT_EQ(r.find(http::field::expect), std::nullopt);
      EXPECT_EQ(r.find("traceparent"), std::optional<std::string_view>("t"));
    }
  }
}

// A field the Connection field names is not forwarded, whether the value is one token (compared
// whole) or a list (read by Beast's parser); the nine connection-specific fields never are.
TEST(HopByHop, FieldsTheConnectionFieldNamesAreDroppedOneTokenOrAList) {
  EXPECT_TRUE(is_hop_by_hop_field(http::field::unknown, "X-Secret", "x-secret"));
  EXPECT_FALSE(is_hop_by_hop_field(http::field::unknown, "X-Secrets", "x-secret"));
  EXPECT_FALSE(is_hop_by_hop_field(http::field::unknown, "X-Secret", "close"));
  EXPECT_TRUE(is_hop_by_hop_field(http::field::unknown, "X-Secret", "close, X-Secret"));
  EXPECT_TRUE(is_hop_by_hop_field(http::field::unknown, "X-Secret", "close,x-SECRET"));
  EXPECT_FALSE(is_hop_by_hop_field(http::field::unknown, "X-Other", "close, X-Secret"));
  EXPECT_TRUE(is_hop_by_hop_field(http::field::keep_alive, "Keep-Alive", ""));
  EXPECT_TRUE(is_hop_by_hop_field(http::field::upgrade, "Upgrade", "close"));
  EXPECT_FALSE(is_hop_by_hop_field(http::field::content_type, "Content-Type", "close"));
  EXPECT_FALSE(is_hop_by_hop_field(http::field::unknown, "X-Secret", ""));
}

TEST(ClientRequest, EveryFieldNameHasBeastsEnumWhateverNamesCameBefore) {
  // Each thread keeps the names it saw with their enum (issue 43): every name Beast knows, in three
  // casings, with unknown ones between (slots shared, names that differ in one letter or length),
  // over several requests, must get what Beast's own lookup gives.
  std::vector<std::string> names;
  for (unsigned i = 1; i <= static_cast<unsigned>(http::field::xref); ++i) {
    const std::string name(http::to_string(static_cast<http::field>(i)));
    if (name.empty() || name.size() > 40 || name.find_first_of(" /") != std::string::npos) continue;
    std::string lower = name, upper = name;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    // The head's own checks read these three (a value "v" is not a length or a coding, one Host).
    const bool checked = lower == "content-length" || lower == "transfer-encoding" || lower == "host";
    for (const auto& n : {name, lower, upper}) {
      if (!checked) names.push_back(n);
    }
    names.push_back("X-" + name);
    names.push_back(name + "s");
  }
  for (int round = 0; round < 3; ++round) {
    for (std::size_t first = 0; first < names.size(); first += 40) {
      std::string head = "GET / HTTP/1.1\r\nHost: a\r\n";
      for (std::size_t i = first; i < names.size() && i < first + 40; ++i) head += names[i] + ": v\r\n";
      head += "\r\n";
      HeadLimits limits;
      limits.max_fields = 100;
      auto parsed = parse_request_head(head, limits);
      ASSERT_TRUE(parsed.ok()) << parsed.error().message;
      const ClientRequest r = ClientRequest::from_head(head, *parsed);
      for (const auto& f : r.fields()) ASSERT_EQ(f.id, http::string_to_field(f.name)) << f.name;
    }
  }
}

// find_each says of each name what find and count say: the first value (case-blind names), the
// count, nothing for a name no field has and for an empty name.
TEST(ClientRequest, FindEachSaysWhatFindAndCountSay) {
  const auto r = ours(
      "POST / HTTP/1.1\r\nHost: h\r\nX-Request-Id: first\r\ntraceparent: t1\r\nx-request-id: second\r\n"
      "TraceParent: t2\r\nX-Session: s\r\n\r\n");
  const std::array<std::string_view, 6> names{"x-request-id", "traceparent", "X-SESSION", "absent", "", "HOST"};
  std::array<ClientRequest::Wanted, 6> wanted;
  for (std::size_t i = 0; i < names.size(); ++i) wanted[i] = ClientRequest::wanted(names[i]);
  std::array<ClientRequest::Match, 6> found;
  found[3].count = 9;  // whatever `out` held is replaced
  r.find_each(wanted, found);
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(found[i].first, names[i].empty() ? std::nullopt : r.find(names[i])) << names[i];
    EXPECT_EQ(found[i].count, names[i].empty() ? 0 : r.count(names[i])) << names[i];
  }
  EXPECT_EQ(found[0].first, "first");
  EXPECT_EQ(found[1].count, 2u);
  EXPECT_EQ(found[2].first, "s");
  EXPECT_EQ(found[3].count, 0u);
  EXPECT_EQ(found[5].first, "h");  // a name Beast knows, matched by its enum
}

TEST(ClientRequest, ItsViewsOutliveTheHeadAndMoves) {
  std::string head = "GET /a HTTP/1.1\r\nHost: h\r\nX-Long: " + std::string(300, 'v') + "\r\n\r\n";
  ClientRequest r = ours(head);
  head.assign(head.size(), '#');  // the bytes read are reused for the next request
  ClientRequest moved = std::move(r);
  ClientRequest assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.method_string(), "GET");
  EXPECT_EQ(assigned.find("host"), std::optional<std::string_view>("h"));
  EXPECT_EQ(assigned.find("x-long"), std::optional<std::string_view>(std::string(300, 'v')));
}

TEST(ClientRequest, CopiedFromBeastsMessage) {
  auto b = beast_parse("PATCH /p HTTP/1.0\r\nA: 1\r\nConnection: keep-alive\r\nA: 2\r\n\r\n");
  b.body() = "body";
  const ClientRequest r = ClientRequest::from_message(std::move(b));
  EXPECT_EQ(r.method(), http::verb::patch);
  EXPECT_EQ(r.version(), 10u);
  EXPECT_TRUE(r.keep_alive());
  EXPECT_EQ(r.count("a"), 2u);
  EXPECT_EQ(r.body(), "body");
  const ClientRequest line = ClientRequest::from_line("BREW", "/pot", 11);
  EXPECT_EQ(line.method_string(), "BREW");
  EXPECT_EQ(line.method(), http::verb::unknown);
  EXPECT_EQ(line.target(), "/pot");
  EXPECT_TRUE(line.fields().empty());
}

}  // namespace
}  // namespace mpo::proxy
