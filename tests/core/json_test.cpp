#include "core/json.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace mpo {
namespace {

TEST(JsonWriter, KeepsKeyOrderAndWritesNullForUnknown) {
  JsonObjectWriter w;
  w.field("schema", "x").field("n", std::int64_t{3}).field("ms", 1.5).null_field("ttft_ms").field("ok", true);
  w.optional_field("maybe", std::optional<double>{});
  EXPECT_EQ(std::move(w).finish(), R"({"schema":"x","n":3,"ms":1.5,"ttft_ms":null,"ok":true,"maybe":null})");
}

TEST(JsonWriter, AMemberIsTheSameWhetherItGoesInAsOnePieceOrByParts) {
  // A member whose key and value need no escape is written in place as one piece (issue 43); the
  // others by parts. Both ways give the same text: values around the writer's first room (64 bytes)
  // and its growth, and keys and values that need an escape.
  for (const std::size_t length : {0, 1, 200, 243, 244, 245, 246, 300}) {
    const std::string value(length, 'v');
    JsonObjectWriter w;
    w.field("first", true).field("key", value).null_field(R"(k\ey)").field(R"(k")", value + "\n").field("n", -2.5);
    EXPECT_EQ(std::move(w).finish(),
              R"({"first":true,"key":")" + value + R"(","k\\ey":null,"k\"":")" + value + R"(\n","n":-2.5})")
        << "length " << length;
  }
  JsonObjectWriter w;
  w.raw_field("raw", "[1,2]").field("u", std::uint64_t{18446744073709551615ULL}).field("i", std::int64_t{-7});
  w.field("inf", INFINITY).field("zero", -0.0).field("f", false);
  EXPECT_EQ(std::move(w).finish(), R"({"raw":[1,2],"u":18446744073709551615,"i":-7,"inf":null,"zero":0,"f":false})");
}

TEST(JsonWriter, AKeyKnownPlainWritesWhatAnyKeyWrites) {
  // `"name"_key` skips the key's scan (a key that needs an escape does not compile); the text is the
  // same as with the key given at run time, whatever room the writer started with.
  for (const std::size_t room : {0, 16, 2048}) {
    for (const std::size_t length : {0, 1, 15, 16, 17, 100, 5000}) {
      const std::string value(length, 'v');
      JsonObjectWriter known(room), given(room);
      known.field("schema"_key, value).null_field("n"_key).field("x"_key, 1.5).raw_field("r"_key, "[]");
      const std::string key = "schema";
      given.field(key, value).null_field("n").field("x", 1.5).raw_field("r", "[]");
      const std::string expected = R"({"schema":")" + value + R"(","n":null,"x":1.5,"r":[]})";
      EXPECT_EQ(std::move(known).finish_line(), expected + "\n") << room << " " << length;
      EXPECT_EQ(std::move(given).finish(), expected) << room << " " << length;
    }
  }
}

TEST(JsonWriter, ObjectsWrittenIntoACallersBufferLieEndToEndWhateverRoomItHad) {
  // A batch of ledger lines is rendered into one buffer whose bytes past the text are room (issue
  // 43): each object starts where the last ended, grows the buffer when it must, and leaves the
  // bytes before it alone; an empty object too.
  for (const std::size_t room : {0, 3, 40, 4096}) {
    std::string buffer(room, '#');
    std::size_t used = 0;
    std::string expected;
    for (int i = 0; i < 5; ++i) {
      const std::string value(static_cast<std::size_t>(i) * 30, 'v');
      JsonObjectWriter w(buffer, used);
      if (i != 2) w.field("n"_key, std::int64_t{i}).field("v"_key, value).field(std::string("k\"") + "ey", value);
      used = std::move(w).finish_line_in();
      expected +=
          i == 2 ? "{}\n" : R"({"n":)" + std::to_string(i) + R"(,"v":")" + value + R"(","k\"ey":")" + value + "\"}\n";
      ASSERT_EQ(buffer.substr(0, used), expected) << room << " " << i;
    }
  }
}

TEST(JsonWriter, NonFiniteNumbersBecomeNull) {
  std::string s;
  append_json_number(s, std::nan(""));
  EXPECT_EQ(s, "null");
}

TEST(JsonWriter, ANumberIsItsShortestRoundTripTextWhateverPathWritesIt) {
  // Durations in milliseconds measured in nanoseconds or microseconds are written from their
  // integer millionths (issue 43); every number's text must still be fmt's shortest round trip, and
  // read back as the same double. Values around the fast path's edges (1e-4, 1e8, trailing zeros,
  // whole numbers, negatives) and random ones in and out of it.
  std::vector<double> values = {
      1e-4,   9.9999e-5,       0.0001, 0.00015, 0.5,        1,    -1,   100,  12345.5, 0.000001, 0.1, 0.3,
      2.5e-7, 99999999.999999, 1e8,    -0.0004, 123.456789, 1e-3, 7.25, 1e15, 1.5e16,  0.123,    -2.5};
  std::mt19937_64 random(43);
  for (int i = 0; i < 200'000; ++i) {
    const auto n = static_cast<std::int64_t>(random() % 200'000'000'000'000ULL) >> (random() % 48);
    const double divisor = (i % 3 == 0) ? 1e6 : (i % 3 == 1) ? 1e3 : 1e9;
    values.push_back(static_cast<double>(i % 7 == 0 ? -n : n) / divisor);
    if (i % 11 == 0)
      values.push_back(std::ldexp(static_cast<double>(random() >> 11), -static_cast<int>(random() % 80)));
  }
  for (const double v : values) {
    std::string text;
    append_json_number(text, v);
    ASSERT_EQ(text, fmt::format("{}", v == 0 ? 0.0 : v)) << fmt::format("{:.17g}", v);
    ASSERT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(JsonWriter, AnIntegerIsItsDecimalTextAtEveryLengthAndSign) {
  // Written two digits at a time (issue 43): every length from one digit to twenty, both signs, and
  // the extremes, as std::to_string writes them.
  std::vector<std::int64_t> values = {
      0, 9, 10, 99, 100, -1, -10, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  for (std::int64_t p = 1;; p *= 10) {  // 10^0 to 10^18, the last that fits
    for (const std::int64_t v : {p - 1, p, p + 1, -p, -(p - 1)}) values.push_back(v);
    if (p > std::numeric_limits<std::int64_t>::max() / 10) break;
  }
  std::mt19937_64 random(43);
  for (int i = 0; i < 100'000; ++i) values.push_back(static_cast<std::int64_t>(random()) >> (random() % 64));
  for (const std::int64_t v : values) {
    char text[24];
    ASSERT_EQ(std::string_view(text, json_integer_text(text, v)), std::to_string(v));
  }
  for (const std::uint64_t v : {std::uint64_t{0}, std::uint64_t{7}, std::numeric_limits<std::uint64_t>::max(),
                                std::uint64_t{10'000'000'000'000'000'000ULL}}) {
    char text[24];
    ASSERT_EQ(std::string_view(text, json_integer_text(text, v)), std::to_string(v));
  }
}

TEST(JsonWriter, AStringIsAllPlainExactlyWhenNoByteOfItNeedsAnEscape) {
  // json_all_plain reads a short string as two words of its own bytes (issue 43): at every length up
  // to past sixteen, a byte that needs an escape (a quote, a backslash, a control, non-ASCII) at any
  // place is seen, and plain ones (DEL, ~, space) are not taken for one.
  const std::string plain_bytes = "a~ \x7fZ0";
  const std::string special_bytes = std::string("\"\\\x1f\x80\xff\n", 6) + std::string(1, '\0');
  for (std::size_t n = 0; n <= 40; ++n) {
    for (const char filler : plain_bytes) {
      std::string text(n, filler);
      ASSERT_TRUE(json_all_plain(text)) << n;
      for (std::size_t at = 0; at < n; ++at) {
        for (const char bad : special_bytes) {
          text[at] = bad;
          ASSERT_FALSE(json_all_plain(text))
              << "length " << n << ", byte " << +static_cast<unsigned char>(bad) << " at " << at;
          ASSERT_EQ(json_plain_run_end(text, 0), at);
        }
        text[at] = filler;
      }
    }
  }
}

TEST(JsonWriter, EscapesControlCharactersAndRepairsInvalidUtf8) {
  EXPECT_EQ(json_quote("a\"b\\c\n\x01"), R"("a\"b\\c\n\u0001")");
  // Runs of plain text between escapes and multi-byte characters, at both ends.
  EXPECT_EQ(json_quote("plain text \"quoted\" caf\xc3\xa9 tab\there\\ end"), R"("plain text \"quoted\" caf)"
                                                                             "\xc3\xa9"
                                                                             R"( tab\there\\ end")");
  EXPECT_EQ(json_quote(""), R"("")");
  EXPECT_EQ(json_quote("\x7f~ "), "\"\x7f~ \"");
  EXPECT_EQ(json_quote("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(json_quote("bad\xff"), R"("bad\ufffd")");
  EXPECT_EQ(json_quote("\xe2\x82"), R"("\ufffd\ufffd")");  // truncated sequence
  auto parsed = parse_json(json_quote("x\xc0\xafy"));      // overlong encoding
  EXPECT_TRUE(parsed.ok());
}

TEST(JsonWriter, ACharacterToEscapeIsFoundAtEveryPlaceInAWord) {
  // Plain runs are skipped sixteen bytes at a time (eight without SSE2), a run's last bytes by
  // re-reading the string's last sixteen or from a padded copy (issue 43): each character that needs
  // care, at every offset of strings of 1 to 40 bytes, comes out as it does alone.
  const std::pair<std::string, std::string> cases[] = {{"\"", "\\\""},
                                                       {"\\", "\\\\"},
                                                       {"\n", "\\n"},
                                                       {std::string(1, '\x01'), "\\u0001"},
                                                       {std::string(1, '\x1f'), "\\u001f"},
                                                       {"\x7f", "\x7f"},
                                                       {"\xc3\xa9", "\xc3\xa9"},
                                                       {"\xff", "\\ufffd"},
                                                       {" ", " "},
                                                       {"<", "<"}};
  for (const auto& [c, escaped] : cases) {
    for (std::size_t length = c.size(); length <= 40; ++length) {
      for (std::size_t at = 0; at + c.size() <= length; ++at) {
        std::string s(length - c.size(), 'a');
        s.insert(at, c);
        const std::string expected =
            "\"" + std::string(at, 'a') + escaped + std::string(length - c.size() - at, 'a') + "\"";
        std::string out;
        append_json_string(out, s);
        EXPECT_EQ(out, expected) << "length " << length << " at " << at;
      }
    }
  }
  // Two in one string, the second in the last eight bytes with the first: each escaped.
  for (const auto& [s, expected] : {std::pair<std::string, std::string>{"x\"yyyyyyy\n", R"("x\"yyyyyyy\n")"},
                                    {"\\abcdefghij\t", R"("\\abcdefghij\t")"},
                                    {"abcdefgh\"\x01", R"("abcdefgh\"\u0001")"}}) {
    std::string out;
    append_json_string(out, s);
    EXPECT_EQ(out, expected);
  }
  // Every pair of places in strings up to 40 bytes: the second is found after the first was escaped
  // (the re-read of the last bytes must not see the first again).
  for (std::size_t length = 2; length <= 40; ++length) {
    for (std::size_t first = 0; first < length; ++first) {
      for (std::size_t second = first + 1; second < length; ++second) {
        std::string s(length, 'a');
        s[first] = '"';
        s[second] = '\n';
        std::string expected = "\"" + s + "\"";
        expected.replace(second + 1, 1, "\\n");
        expected.replace(first + 1, 1, "\\\"");
        std::string out;
        append_json_string(out, s);
        ASSERT_EQ(out, expected) << "length " << length << " at " << first << " and " << second;
      }
    }
  }
  std::string html;
  append_json_string_html_safe(html, "aaaaaaaa<b>&aaaaaaaaaa");
  EXPECT_EQ(html, R"("aaaaaaaa\u003cb\u003e\u0026aaaaaaaaaa")");
}

TEST(JsonRead, TypedLookupsSayAbsentForWrongTypes) {
  auto v = parse_json(R"({"s":"x","i":3,"d":2.0,"b":true,"n":null,"big":1e300})");
  ASSERT_TRUE(v.ok());
  const auto& o = v->get_object();
  EXPECT_EQ(json_string(o, "s"), "x");
  EXPECT_EQ(json_int(o, "i"), 3);
  EXPECT_EQ(json_int(o, "d"), 2);
  EXPECT_FALSE(json_int(o, "big").has_value());
  EXPECT_FALSE(json_string(o, "i").has_value());
  EXPECT_FALSE(json_bool(o, "n").has_value());
  EXPECT_EQ(json_double(o, "i"), 3.0);
}

TEST(JsonRead, ParseErrorIsAResultNotAnException) {
  auto v = parse_json("{\"a\":");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, "json.parse");
}

}  // namespace
}  // namespace mpo
