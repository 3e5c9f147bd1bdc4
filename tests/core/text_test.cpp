// Small text helpers (core/text.hpp): copy_bytes copies what memcpy does for every length, the
// short ones by overlapping fixed-size copies; TextWriter writes a head's pieces end to end.
#include "core/text.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace mpo {
namespace {

TEST(CopyBytes, CopiesWhatMemcpyDoesForEveryLengthAndPlace) {
  std::string from(80, '\0');
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<char>('A' + i % 57);
  for (std::size_t n = 0; n <= 40; ++n) {
    for (std::size_t at = 0; at < 8; ++at) {
      std::string ours(64, '.'), theirs(64, '.');
      copy_bytes(ours.data() + at, from.data() + at + 3, n);
      std::memcpy(theirs.data() + at, from.data() + at + 3, n);
      EXPECT_EQ(ours, theirs) << n << " bytes at " << at;  // and nothing written around them
    }
  }
}

TEST(TextWriter, WritesPiecesAndFieldLinesEndToEndAndCutsTheStringToThem) {
  std::string out;
  TextWriter w(out, 64);
  w.put("GET").put(" ").put("/v1/chat/completions").put("").put(" HTTP/1.1\r\n");
  w.field_line("Host", "a").field_line("X-Empty", "").put("\r\n").finish();
  EXPECT_EQ(out, "GET /v1/chat/completions HTTP/1.1\r\nHost: a\r\nX-Empty: \r\n\r\n");
}

// A kept buffer: the next head is written from its start, whatever the last one left in it, and
// a head larger than the room it began with grows the string (every byte kept).
TEST(TextWriter, WritesAKeptBufferFromItsStartAndGrowsPastTheRoomItBeganWith) {
  std::string out(300, 'x');
  TextWriter(out, 16).put("HTTP/1.1 200 OK\r\n").finish();
  EXPECT_EQ(out, "HTTP/1.1 200 OK\r\n");
  std::string expected;
  TextWriter w(out, 8);
  for (int i = 0; i < 200; ++i) {
    const std::string name = "X-Field-" + std::to_string(i), value(static_cast<std::size_t>(i % 37), 'v');
    w.field_line(name, value);
    expected += name + ": " + value + "\r\n";
  }
  w.finish();
  EXPECT_EQ(out, expected);
}

// Every byte value, in every position of the eight-byte steps and the bytes after them, written as
// printf's %02x would, and nothing written past the 2n digits.
TEST(WriteHexLower, WritesEveryByteAsPrintfDoesForEveryLength) {
  std::vector<std::uint8_t> bytes(256 + 21);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>((i * 7 + i / 256) % 256);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{16},
                        std::size_t{23}, std::size_t{32}, bytes.size()}) {
    std::string expected;
    char two[3];
    for (std::size_t i = 0; i < n; ++i) {
      std::snprintf(two, sizeof two, "%02x", bytes[i]);
      expected += two;
    }
    std::string out(2 * n + 4, '.');
    const char* end = write_hex_lower(out.data(), bytes.data(), n);
    EXPECT_EQ(end, out.data() + 2 * n);
    EXPECT_EQ(out, expected + "....") << n << " bytes";
  }
}

}  // namespace
}  // namespace mpo
