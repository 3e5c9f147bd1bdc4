// Words about text a server sent back, for messages, and small text helpers. Pure.
#pragma once

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
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  }
}

}  // namespace mpo
