// The request head's rules (issue 36): every case of the request-framing corpus
// (tests/fixtures/request-framing: the defects the issue found, RFC 9112's examples) judged as its
// name says, found the same way whether the bytes come at once or one by one, and the scanner's
// limits reached after one pass over the bytes they allow.
#include "proxy/request_head.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace mpo::proxy {
namespace {

struct Case {
  std::string name;
  std::string expect;  // "200", "400", "400body" (the head passes, the body's framing fails), "405", ...
  std::string bytes;
};

std::vector<Case> corpus() {
  std::vector<Case> out;
  for (const auto& e : std::filesystem::directory_iterator(test::fixture_path("request-framing"))) {
    const auto name = e.path().filename().string();
    const auto first = name.find('_');
    const auto second = name.find('_', first + 1);
    out.push_back({name, name.substr(first + 1, second - first - 1), test::read_fixture("request-framing/" + name)});
  }
  return out;
}

HeadScanner::State scan_all(HeadScanner& s, const std::string& bytes, bool byte_by_byte) {
  if (!byte_by_byte) return s.scan(bytes);
  auto state = HeadScanner::State::kNeedMore;
  for (std::size_t n = 1; n <= bytes.size() && state == HeadScanner::State::kNeedMore; ++n) {
    state = s.scan(std::string_view(bytes).substr(0, n));
  }
  return state;
}

TEST(RequestHead, EveryCorpusCaseIsJudgedAsItsNameSays) {
  const auto cases = corpus();
  ASSERT_GE(cases.size(), 50u);
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    HeadScanner whole({}), bytewise({});
    const auto state = scan_all(whole, c.bytes, false);
    EXPECT_EQ(scan_all(bytewise, c.bytes, true), state);
    if (c.expect == "431") {
      EXPECT_EQ(state, HeadScanner::State::kTooManyFields);
      continue;
    }
    ASSERT_EQ(state, HeadScanner::State::kComplete);
    EXPECT_EQ(bytewise.leading(), whole.leading());
    EXPECT_EQ(bytewise.head_size(), whole.head_size());
    const auto head = parse_request_head(std::string_view(c.bytes).substr(whole.leading(), whole.head_size()));
    if (c.expect == "200" || c.expect == "400body") {
      EXPECT_TRUE(head.ok()) << head.error().message;
    } else {
      ASSERT_FALSE(head.ok());
      EXPECT_EQ(std::to_string(status_for(head.error())), c.expect) << head.error().message;
      EXPECT_FALSE(head.error().message.empty());
    }
  }
}

TEST(RequestHead, WhatIsForwardedOfValidHeads) {
  auto parse = [](std::string_view text) { return parse_request_head(text); };
  auto abs = parse("GET http://evil.example:9999/steal?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->origin_target(), "/steal?x=1");
  EXPECT_EQ(abs->target, "http://evil.example:9999/steal?x=1");
  auto bare = parse("GET HTTPS://a.example HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->origin_target(), "/");
  auto query = parse("GET http://a.example?q=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  ASSERT_TRUE(query.ok()) << query.error().message;
  EXPECT_EQ(query->origin_target(), "/?q=1");
  auto post = parse("POST /v1/chat/completions HTTP/1.1\r\nhost: x:8000\r\ncontent-length: 17\r\n\r\n");
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->method, "POST");
  EXPECT_EQ(post->content_length, 17u);
  EXPECT_FALSE(post->chunked);
  EXPECT_EQ(post->host, "x:8000");
  EXPECT_EQ(post->fields, 2u);
  EXPECT_EQ(post->origin_target(), "/v1/chat/completions");
  EXPECT_TRUE(post->origin_rewrite.empty());  // the target goes as it came
  // The fields the proxy forwards, in order, each value without its optional whitespace.
  auto fields = parse("GET / HTTP/1.1\r\nHost: a\r\nX-A:  one two \t\r\nx-a:2\r\nAccept:\r\n\r\n");
  ASSERT_TRUE(fields.ok());
  ASSERT_EQ(fields->field_lines.size(), 4u);
  const std::pair<std::string_view, std::string_view> expected[] = {
      {"Host", "a"}, {"X-A", "one two"}, {"x-a", "2"}, {"Accept", ""}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(fields->field_lines[i].name, expected[i].first) << i;
    EXPECT_EQ(fields->field_lines[i].value, expected[i].second) << i;
  }
  auto chunked = parse("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,chunked\r\n\r\n");
  ASSERT_TRUE(chunked.ok());
  EXPECT_TRUE(chunked->chunked);
  auto old = parse("GET / HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->version, 10);
}

// The proxy reads each request's head into the one before's reading (its field list's buffer kept,
// issue 43): nothing of the earlier head stays, whichever of them had a rewrite, a length, chunked
// or more fields, and a refused head in between changes nothing.
TEST(RequestHead, AHeadReadIntoAnEarlierOnesReadingKeepsNothingOfIt) {
  const std::string_view heads[] = {
      "POST http://a.example/v1/x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-A: 1\r\nX-B: 2\r\n\r\n",
      "GET /v1/models HTTP/1.1\r\nHost: b:8000\r\n\r\n",
      "POST /c HTTP/1.1\r\nHost: c\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET /bad HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
      "GET / HTTP/1.0\r\n\r\n",
  };
  RequestHead kept;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto text : heads) {
      const auto fresh = parse_request_head(text);
      const auto st = parse_request_head(text, HeadLimits{}, kept);
      ASSERT_EQ(st.ok(), fresh.ok()) << text;
      if (!fresh.ok()) {
        EXPECT_EQ(st.error().message, fresh.error().message);
        continue;
      }
      EXPECT_EQ(kept.method, fresh->method) << text;
      EXPECT_EQ(kept.origin_target(), fresh->origin_target()) << text;
      EXPECT_EQ(kept.origin_rewrite, fresh->origin_rewrite) << text;
      EXPECT_EQ(kept.version, fresh->version) << text;
      EXPECT_EQ(kept.content_length, fresh->content_length) << text;
      EXPECT_EQ(kept.chunked, fresh->chunked) << text;
      EXPECT_EQ(kept.host, fresh->host) << text;
      EXPECT_EQ(kept.fields, fresh->fields) << text;
      ASSERT_EQ(kept.field_lines.size(), fresh->field_lines.size()) << text;
      for (std::size_t i = 0; i < kept.field_lines.size(); ++i) {
        EXPECT_EQ(kept.field_lines[i].name, fresh->field_lines[i].name) << text;
        EXPECT_EQ(kept.field_lines[i].value, fresh->field_lines[i].value) << text;
      }
    }
  }
}

// A field value may hold any byte but a control character other than HTAB, wherever it stands in
// values of every length (the check reads sixteen, then eight bytes at a time, then one).
TEST(RequestHead, AControlCharacterAnywhereInAValueIsRefusedAndEveryOtherByteIsNot) {
  for (std::size_t length = 1; length <= 40; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int b = 0; b < 256; ++b) {
        std::string value(length + 2, 'v');  // 'v' on both ends: nothing is trimmed
        value[1 + at] = static_cast<char>(b);
        const auto head = parse_request_head("GET / HTTP/1.1\r\nHost: a\r\nX-Value: " + value + "\r\n\r\n");
        const bool allowed = (b >= 0x20 && b != 0x7f) || b == '\t';
        ASSERT_EQ(head.ok(), allowed) << "byte " << b << " at " << at << " of " << length;
      }
    }
  }
}

// The names the rules read are found in any casing, and names that only look like them are not.
TEST(RequestHead, FramingAndHostNamesAreFoundInAnyCasingAndOnlyThem) {
  for (const char* name : {"Content-Length", "content-length", "CONTENT-LENGTH", "cOnTeNt-LeNgTh"}) {
    const auto head = parse_request_head(fmt::format("POST / HTTP/1.1\r\nHost: a\r\n{}: 5\r\n\r\n", name));
    ASSERT_TRUE(head.ok()) << name;
    EXPECT_EQ(head->content_length, 5u) << name;
  }
  for (const char* name : {"Content-Lengthy", "Content_Length", "Content-Lengtx", "Kontent-Length", "Content-Lengt"}) {
    const auto head = parse_request_head(fmt::format("POST / HTTP/1.1\r\nHost: a\r\n{}: 5\r\n\r\n", name));
    ASSERT_TRUE(head.ok()) << name;
    EXPECT_FALSE(head->content_length.has_value()) << name;
  }
  for (const char* name : {"TRANSFER-ENCODING", "transfer-encoding", "Transfer-Encoding"}) {
    const auto head = parse_request_head(fmt::format("POST / HTTP/1.1\r\nHost: a\r\n{}: chunked\r\n\r\n", name));
    ASSERT_TRUE(head.ok()) << name;
    EXPECT_TRUE(head->chunked) << name;
  }
  EXPECT_FALSE(parse_request_head("POST / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: gzip\r\n\r\n")->chunked);
  for (const char* name : {"HOST", "host", "hOsT"}) {
    const std::string text = fmt::format("GET / HTTP/1.1\r\n{}: example.com\r\n\r\n", name);
    const auto head = parse_request_head(text);  // its views are into `text`
    ASSERT_TRUE(head.ok()) << name;
    EXPECT_EQ(head->host, "example.com") << name;
  }
  // "Hosu" is not Host: an HTTP/1.1 request without one is refused.
  EXPECT_FALSE(parse_request_head("GET / HTTP/1.1\r\nHosu: example.com\r\n\r\n").ok());
}

TEST(RequestHead, TransferCodingsTheProxyCannotReframeAre501AndBadFramingIs400) {
  auto status = [](std::string_view te) {
    const auto head =
        parse_request_head(fmt::format("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: {}\r\n\r\n", te));
    return head.ok() ? 200 : status_for(head.error());
  };
  EXPECT_EQ(status("chunked"), 200);
  EXPECT_EQ(status("CHUNKED"), 200);
  EXPECT_EQ(status("identity"), 501);
  EXPECT_EQ(status("gzip, chunked"), 501);
  EXPECT_EQ(status("chunked;ext=1"), 501);
  EXPECT_EQ(status("gzip"), 400);  // known, but chunked is not final: the length cannot be known
  EXPECT_EQ(status("chunked, chunked"), 400);
  EXPECT_EQ(status(" , "), 400);
  EXPECT_EQ(status("chunk ed"), 400);
}

TEST(RequestHead, TheScannerStopsAtItsLimitsAfterOnePassOverWhatTheyAllow) {
  // 10,000 header lines (issue 36: 100 ms of CPU per request in Beast's path): refused once the
  // 101st field line ends, without looking further.
  std::string head = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 10000; ++i) head += "a:b\r\n";
  head += "\r\n";
  HeadScanner s({64 * 1024, 100});
  EXPECT_EQ(s.scan(head), HeadScanner::State::kTooManyFields);
  EXPECT_EQ(s.fields(), 101u);
  EXPECT_EQ(s.scan(head), HeadScanner::State::kTooManyFields);  // stays refused
  // Bytes: a line longer than the limit is refused before it ends.
  HeadScanner small({1024, 100});
  const std::string endless = "GET /" + std::string(2000, 'a');
  EXPECT_EQ(small.scan(endless), HeadScanner::State::kTooLarge);
  // Empty lines forever are bytes too.
  HeadScanner blanks({1024, 100});
  std::string crlfs;
  for (int i = 0; i < 600; ++i) crlfs += "\r\n";
  EXPECT_EQ(blanks.scan(crlfs), HeadScanner::State::kTooLarge);
  // Exactly at the limits: accepted.
  std::string at_limit = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 99; ++i) at_limit += "a:b\r\n";
  at_limit += "\r\n";
  HeadScanner exact({at_limit.size(), 100});
  ASSERT_EQ(exact.scan(at_limit), HeadScanner::State::kComplete);
  EXPECT_EQ(exact.fields(), 100u);
  EXPECT_TRUE(parse_request_head(at_limit, {at_limit.size(), 100}).ok());
  EXPECT_EQ(status_for(parse_request_head(at_limit, {at_limit.size(), 99}).error()), 431);
}

TEST(RequestHead, ACompleteHeadEndsAtItsBlankLineWithTheBodyLeftAfterIt) {
  const std::string bytes = "\r\nPOST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}GET /next";
  HeadScanner s({});
  ASSERT_EQ(s.scan(bytes), HeadScanner::State::kComplete);
  EXPECT_EQ(s.leading(), 2u);
  EXPECT_EQ(bytes.substr(s.leading() + s.head_size()), "{}GET /next");
}

TEST(RequestHead, UnderscoredNamesAreDroppedAsNginxDoes) {
  EXPECT_TRUE(dropped_field_name("X_Forwarded_For"));
  EXPECT_TRUE(dropped_field_name("api_key"));
  EXPECT_FALSE(dropped_field_name("X-Forwarded-For"));
  EXPECT_FALSE(dropped_field_name("Authorization"));
}

}  // namespace
}  // namespace mpo::proxy
