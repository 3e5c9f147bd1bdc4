// Words about text a server sent back, for messages, and small text helpers. Pure.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

namespace mpo {

// What a response body looks like, for a message about a URL that answered the wrong kind of page:
// "an HTML page", "JSON", "an empty body", or "text beginning '...'".
std::string body_kind(std::string_view body);

// `s` with <, >, & and " written as HTML entities (text and attribute values of the HTML pages).
std::string html_escape(std::string_view s);

// `s` without leading and trailing spaces and tabs (HTTP's optional whitespace, OWS).
std::string_view trim_blanks(std::string_view s);

// memcpy's result, without a call for up to sixteen bytes: two overlapping copies of a fixed size,
// which compile to moves (issue 43: ~200 calls of memcpy a proxied request, most of a few bytes, each
// ~15 instructions through the PLT and its size dispatch). `to` and `from` must not overlap.
inline void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n > 16) {
    std::memcpy(to, from, n);
  } else if (n >= 8) {
    std::uint64_t head = 0, tail = 0;
    std::memcpy(&head, from, 8);
    std::memcpy(&tail, from + n - 8, 8);
    std::memcpy(to, &head, 8);
    std::memcpy(to + n - 8, &tail, 8);
  } else if (n >= 4) {
    std::uint32_t head = 0, tail = 0;
    std::memcpy(&head, from, 4);
    std::memcpy(&tail, from + n - 4, 4);
    std::memcpy(to, &head, 4);
    std::memcpy(to + n - 4, &tail, 4);
  } else if (n > 0) {  // 1 to 3 bytes: the first, the middle and the last
    to[0] = from[0];
    to[n / 2] = from[n / 2];
    to[n - 1] = from[n - 1];
  }
}

// Appends the pieces to `out` after one resize, each copied in place (issue 43: an HTTP head
// written field by field with four appends a field, each its own capacity check and call, was a
// third of the time it took to write).
inline void append_pieces(std::string& out, std::initializer_list<std::string_view> pieces) {
  std::size_t n = 0;
  for (const auto piece : pieces) n += piece.size();
  const std::size_t at = out.size();
  out.resize(at + n);
  char* p = out.data() + at;
  for (const auto piece : pieces) {
    copy_bytes(p, piece.data(), piece.size());
    p += piece.size();
  }
}

}  // namespace mpo
