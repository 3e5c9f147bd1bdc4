// Words about text a server sent back, for messages, and small text helpers. Pure.
#pragma once

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

}  // namespace mpo
