// The request head's rules: RFC 9112 (message syntax and framing), RFC 9110 (field values, Host)
// and, where the RFC leaves a choice, what nginx 1.22 does (uppercase methods, one Content-Length,
// only the chunked transfer coding, no empty Host). docs/PROXY.md lists each with its status.
#include "proxy/request_head.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/text.hpp"

namespace mpo::proxy {
namespace {

constexpr std::string_view kCrlf = "\r\n";

Error bad(std::string message) { return make_error(errc::kRequestBad, std::move(message)); }

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool starts_with_i(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// A table of the letters, the digits and `others` (a search of the specials per '-' in every
// field name was a memchr call per name, issue 43).
constexpr std::array<bool, 256> alnum_and(std::string_view others) {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (int c = 'A'; c <= 'Z'; ++c) t[static_cast<std::size_t>(c)] = true;
  for (const char c : others) t[static_cast<unsigned char>(c)] = true;
  return t;
}

bool is_token(std::string_view s) {
  bool token = !s.empty();
  for (const unsigned char c : s) token &= is_token_char(static_cast<char>(c));  // no branch a byte: names are short
  return token;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// RFC 9110 5.5: field-vchar / SP / HTAB (obs-text allowed); no other control character. Sixteen
// bytes at a time, the last sixteen read again where the value's length is not a multiple; a value
// of 8 to 15 bytes as two words of eight; only a shorter one byte by byte (issue 43: a byte at a
// time was a fifth of the head's parse).
bool valid_field_value(std::string_view v) {
  const auto bad_byte = [](unsigned char c) { return (c < 0x20 && c != '\t') || c == 0x7f; };
  const auto bytes_ok = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to; ++k) {
      if (bad_byte(static_cast<unsigned char>(v[k]))) return false;
    }
    return true;
  };
  const std::size_t n = v.size();
#if defined(__SSE2__)
  if (n >= 16) {
    const __m128i space = _mm_set1_epi8(0x20), tab = _mm_set1_epi8('\t'), del = _mm_set1_epi8(0x7f);
    const auto block_ok = [&](std::size_t at) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v.data() + at));
      const __m128i printable = _mm_cmpeq_epi8(_mm_max_epu8(x, space), x);  // x >= 0x20, unsigned
      const __m128i ok = _mm_andnot_si128(_mm_cmpeq_epi8(x, del), _mm_or_si128(printable, _mm_cmpeq_epi8(x, tab)));
      return _mm_movemask_epi8(ok) == 0xffff;
    };
    for (std::size_t i = 0; i + 16 <= n; i += 16) {
      if (!block_ok(i)) return false;
    }
    return n % 16 == 0 || block_ok(n - 16);
  }
#endif
  // A word that may hold a byte below 0x20 or a 0x7F (hasless and haszero, "Bit Twiddling Hacks":
  // exact as to whether one is there; bytes of 0x80 and up are never taken for one) is looked at
  // byte by byte, a tab being allowed.
  const auto word_ok = [&](std::size_t at) {
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    std::uint64_t x = 0;
    std::memcpy(&x, v.data() + at, sizeof x);
    const std::uint64_t y = x ^ (0x7f * kOnes);  // a 0x7F is a zero byte of y
    return ((((x - 0x20 * kOnes) & ~x) | ((y - kOnes) & ~y)) & kHigh) == 0 || bytes_ok(at, at + 8);
  };
  if (n < 8) return bytes_ok(0, n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    if (!word_ok(i)) return false;
  }
  return i == n || word_ok(n - 8);
}

std::string_view trim_ows(std::string_view s) {
  const char* first = s.data();
  const char* last = first + s.size();
  while (first != last && (*first == ' ' || *first == '\t')) ++first;
  while (last != first && (last[-1] == ' ' || last[-1] == '\t')) --last;
  return {first, static_cast<std::size_t>(last - first)};
}

// The header names the head's rules read, told apart by their length first and then compared
// case-blind by setting each byte's 0x20 bit: exact for a token (RFC 9110 tchar), whose only bytes
// that turn into a lower-case letter or '-' so are the letters themselves and '-' (issue 43: three
// case-blind compares per field were a fifth of the head's parse).
enum class NamedField { kOther, kHost, kContentLength, kTransferEncoding };
NamedField named_field(std::string_view token) {
  const auto is = [&](std::string_view lower) {
    for (std::size_t i = 0; i < lower.size(); ++i) {
      if (static_cast<char>(token[i] | 0x20) != lower[i]) return false;
    }
    return true;
  };
  switch (token.size()) {
    case 4: return is("host") ? NamedField::kHost : NamedField::kOther;
    case 14: return is("content-length") ? NamedField::kContentLength : NamedField::kOther;
    case 17: return is("transfer-encoding") ? NamedField::kTransferEncoding : NamedField::kOther;
    default: return NamedField::kOther;
  }
}

// A reg-name's or IPv4 address's characters (RFC 3986 3.2.2: unreserved, sub-delims and the
// percent sign of pct-encoded).
constexpr std::array<bool, 256> kHostChar = alnum_and("-._~!$&'()*+,;=%");

// RFC 3986 3.2.2 host with an optional port (RFC 9110 7.2). nginx also refuses an empty host.
bool valid_host(std::string_view h) {
  if (h.empty()) return false;
  std::string_view port;
  if (h.front() == '[') {
    const auto close = h.find(']');
    if (close == std::string_view::npos || close < 2) return false;
    for (char c : h.substr(1, close - 1)) {
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')) return false;
    }
    const auto rest = h.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
    }
  } else {
    const auto colon = h.rfind(':');
    std::string_view name = h;
    if (colon != std::string_view::npos) {
      name = h.substr(0, colon);
      port = h.substr(colon + 1);
    }
    if (name.empty()) return false;
    for (char c : name) {
      if (!kHostChar[static_cast<unsigned char>(c)]) return false;
    }
  }
  return port.size() <= 5 && (port.empty() || all_digits(port));
}

// A path segment that climbs ("..", also percent-encoded): nginx refuses those above the root; the
// proxy refuses them all (no API path has one, and a backend could resolve them differently).
bool climbs(std::string_view path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(start, end - start);
    int dots = 0;
    bool other = false;
    for (std::size_t i = 0; i < seg.size() && !other;) {
      if (seg[i] == '.') {
        ++dots;
        ++i;
      } else if (seg.size() - i >= 3 && seg[i] == '%' && seg[i + 1] == '2' &&
                 (seg[i + 2] == 'e' || seg[i + 2] == 'E')) {
        ++dots;
        i += 3;
      } else {
        other = true;
      }
    }
    if (!other && dots == 2) return true;
    start = end + 1;
  }
  return false;
}

// The request target (RFC 9112 3.2) to the origin-form the backend gets, into `rewrite`: left "" when
// that is the target itself (a Status, not a Result<std::string>: issue 43, a string built and moved
// twice for every request that needed none).
Status origin_form(std::string_view target, std::string& rewrite) {
  for (unsigned char c : target) {
    if (c <= 0x20 || c == 0x7f) return bad("the request target has a control character or a space");
  }
  if (target.find('#') != std::string_view::npos) return bad("the request target has a fragment ('#')");
  std::string_view path_and_query;
  if (target.front() == '/') {
    path_and_query = target;
  } else if (target == "*") {
    return bad("asterisk-form targets (OPTIONS *) are not forwarded");
  } else if (starts_with_i(target, "http://") || starts_with_i(target, "https://")) {
    // absolute-form: the authority replaces Host for the request's identity (RFC 9112 3.2.2); the
    // backend gets the path and query.
    const auto rest = target.substr(target.find("//") + 2);
    const auto path_at = rest.find_first_of("/?");
    const auto authority = rest.substr(0, path_at);
    if (authority.find('@') != std::string_view::npos || !valid_host(authority)) {
      return bad(fmt::format("the absolute-form target's authority '{}' is not a valid host", authority));
    }
    path_and_query = path_at == std::string_view::npos ? std::string_view() : rest.substr(path_at);
  } else {
    return bad("the request target must be a path (origin-form) or an absolute http(s) URI");
  }
  const auto path = path_and_query.substr(0, path_and_query.find('?'));
  if (climbs(path)) return bad("the request path has a '..' segment");
  if (path_and_query.size() == target.size()) return Ok{};  // the target as it is (it starts with '/')
  if (path_and_query.empty() || path_and_query.front() == '?') rewrite = "/";
  rewrite += path_and_query;
  return Ok{};
}

// Transfer-Encoding (RFC 9112 6.1, 6.3): only chunked, once, last; anything else the proxy cannot
// re-frame. Unknown codings are 501 (RFC 9112 6.1); chunked missing or not final is 400.
Status check_transfer_encoding(std::string_view joined) {
  static constexpr std::array<std::string_view, 6> kKnown = {"chunked", "gzip",     "x-gzip",
                                                             "deflate", "compress", "x-compress"};
  std::size_t elements = 0, chunked = 0;
  std::string last, other;
  std::size_t start = 0;
  while (start <= joined.size()) {
    auto end = joined.find(',', start);
    if (end == std::string_view::npos) end = joined.size();
    const auto element = trim_ows(joined.substr(start, end - start));
    start = end + 1;
    if (element.empty()) continue;  // RFC 9110 5.6.1: empty list elements do not count
    ++elements;
    std::string coding;
    for (char c : element) coding += lower(c);
    const auto known = std::find(kKnown.begin(), kKnown.end(), coding) != kKnown.end();
    if (!known) {
      if (!is_token(element) && element.find(';') == std::string_view::npos) {
        return bad(fmt::format("Transfer-Encoding '{}' is not a list of codings", joined));
      }
      return make_error(errc::kRequestTransferCoding,
                        fmt::format("transfer coding '{}' is not implemented (only chunked)", element));
    }
    if (coding == "chunked") {
      ++chunked;
    } else if (other.empty()) {
      other = coding;
    }
    last = coding;
  }
  if (elements == 0) return bad("an empty Transfer-Encoding");
  if (chunked > 1) return bad("chunked applied more than once");
  if (last != "chunked") return bad("Transfer-Encoding without chunked as the final coding (RFC 9112 6.3)");
  if (!other.empty()) {
    return make_error(errc::kRequestTransferCoding,
                      fmt::format("transfer coding '{}' is not implemented (only chunked)", other));
  }
  return Ok{};
}

}  // namespace

HeadScanner::State HeadScanner::scan(std::string_view bytes) {
  if (state_ != State::kNeedMore) return state_;
  while (pos_ < bytes.size()) {
    if (!started_) {
      if (bytes[pos_] == '\n') {
        leading_ = ++pos_;
        continue;
      }
      if (bytes[pos_] == '\r') {
        if (pos_ + 1 >= bytes.size()) break;
        if (bytes[pos_ + 1] == '\n') {
          pos_ += 2;
          leading_ = pos_;
          continue;
        }
      }
      started_ = true;
      line_start_ = pos_;
    }
    const void* nl = std::memchr(bytes.data() + pos_, '\n', bytes.size() - pos_);
    if (nl == nullptr) {
      pos_ = bytes.size();
      break;
    }
    const std::size_t at = static_cast<std::size_t>(static_cast<const char*>(nl) - bytes.data());
    const std::size_t len = at - line_start_;
    const bool blank = len == 0 || (len == 1 && bytes[line_start_] == '\r');
    pos_ = at + 1;
    if (pos_ > limits_.max_bytes) return state_ = State::kTooLarge;
    if (blank) {
      end_ = pos_;
      return state_ = State::kComplete;
    }
    ++lines_;
    if (fields() > limits_.max_fields) return state_ = State::kTooManyFields;
    line_start_ = pos_;
  }
  if (pos_ > limits_.max_bytes) return state_ = State::kTooLarge;
  return state_;
}

namespace {

// The request line: METHOD SP TARGET SP VERSION, HTTP/1.1 or 1.0, an upper-case method other than
// CONNECT, a target in origin form.
Status read_request_line(std::string_view line, RequestHead& h) {
  const auto sp1 = line.find(' ');
  const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return bad("the request line is not METHOD SP TARGET SP VERSION");
  }
  h.method = line.substr(0, sp1);
  h.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    h.version = 11;
  } else if (version == "HTTP/1.0") {
    h.version = 10;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && is_digit(version[5]) && version[6] == '.' &&
             is_digit(version[7]) && version[5] >= '2') {
    return make_error(errc::kRequestVersion, fmt::format("{} is not supported (HTTP/1.1 and 1.0 are)", version));
  } else {
    return bad("the request line's version is not HTTP/1.1 or HTTP/1.0");
  }
  if (h.method.empty() || h.method.size() > 32) return bad("the request method is empty or too long");
  for (char c : h.method) {
    if (!((c >= 'A' && c <= 'Z') || c == '_' || c == '-')) {
      return bad(fmt::format("invalid request method '{}' (methods are upper case)", h.method));
    }
  }
  if (h.method == "CONNECT") return make_error(errc::kRequestMethod, "CONNECT is not proxied");
  if (h.target.empty()) return bad("an empty request target");
  return origin_form(h.target, h.origin_rewrite);
}

// What the whole head's header lines gather: Host lines and Transfer-Encoding codings.
struct HeaderTally {
  std::size_t host_lines = 0;
  std::string te;
  bool te_seen = false;
};

// One header line: no folding, a token name and its colon, a value without control characters;
// Content-Length, Transfer-Encoding and Host read.
Status read_header_line(std::string_view line, const HeadLimits& limits, RequestHead& h, HeaderTally& t) {
  if (line.front() == ' ' || line.front() == '\t') {
    return bad("a folded header line (obsolete line folding, RFC 9112 5.2)");
  }
  if (++h.fields > limits.max_fields) {
    return make_error(errc::kRequestTooLarge, fmt::format("more than {} header fields", limits.max_fields));
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos) return bad("a header line without a colon");
  const auto name = line.substr(0, colon);
  if (!is_token(name)) {
    return bad(name.find_first_of(" \t") != std::string_view::npos
                   ? "whitespace between a header name and its colon (RFC 9112 5.1)"
                   : "a header name with a character that is not allowed");
  }
  const auto value = trim_ows(line.substr(colon + 1));
  if (!valid_field_value(value)) return bad(fmt::format("the {} header's value has a control character", name));
  h.field_lines.push_back({name, value});
  const NamedField named = named_field(name);
  if (named == NamedField::kContentLength) {
    if (h.content_length) return bad("more than one Content-Length");
    if (!all_digits(value) || value.size() > 18) return bad(fmt::format("invalid Content-Length '{}'", value));
    std::uint64_t n = 0;
    for (const char c : value) n = n * 10 + static_cast<std::uint64_t>(c - '0');  // 18 digits at most
    h.content_length = n;
  } else if (named == NamedField::kTransferEncoding) {
    if (t.te_seen) t.te += ',';
    t.te += value;
    t.te_seen = true;
  } else if (named == NamedField::kHost) {
    ++t.host_lines;
    h.host = value;
  }
  return Ok{};
}

}  // namespace

Result<RequestHead> parse_request_head(std::string_view head, const HeadLimits& limits) {
  RequestHead h;
  if (auto st = parse_request_head(head, limits, h); !st) return st.error();
  return h;
}

Status parse_request_head(std::string_view head, const HeadLimits& limits, RequestHead& h) {
  // A new head's reading, in the field list's buffer (and the rewrite's) that `h` already has.
  std::vector<RequestHead::Field> lines = std::move(h.field_lines);
  lines.clear();
  h = RequestHead{};
  h.field_lines = std::move(lines);
  if (head.size() > limits.max_bytes) {
    return make_error(errc::kRequestTooLarge, fmt::format("request headers over {} bytes", limits.max_bytes));
  }
  if (head.size() < 4 || head.substr(head.size() - 4) != "\r\n\r\n") {
    return bad("the request head does not end with an empty line (CRLF CRLF)");
  }
  h.field_lines.reserve(16);
  HeaderTally t;
  std::size_t pos = 0;
  bool first = true;
  // A CR or LF inside a line breaks the rules every part of a line is checked by (the request line's
  // method, target and version, a field's name and value), so each line is searched for them only
  // when it fails, to say that this was the fault.
  const auto line_error = [](std::string_view line, Error e) -> Error {
    if (line.find('\n') != std::string_view::npos || line.find('\r') != std::string_view::npos) {
      return bad("a line of the request head ends without CRLF");
    }
    return e;
  };
  while (pos < head.size()) {
    const auto eol = head.find(kCrlf, pos);
    const auto line = head.substr(pos, eol - pos);
    pos = eol + 2;
    if (line.empty()) break;  // the blank line: the end
    if (first) {
      first = false;
      if (auto st = read_request_line(line, h); !st) return line_error(line, st.error());
      continue;
    }
    if (auto st = read_header_line(line, limits, h, t); !st) return line_error(line, st.error());
  }
  if (first) return bad("no request line");
  if (t.host_lines > 1) return bad("more than one Host (RFC 9112 3.2)");
  if (t.host_lines == 0 && h.version == 11) return bad("no Host in an HTTP/1.1 request (RFC 9112 3.2)");
  if (t.host_lines == 1 && !valid_host(h.host)) return bad(fmt::format("invalid Host '{}'", h.host));
  if (t.te_seen) {
    if (h.version == 10) return bad("Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)");
    // As nginx: an unknown coding is 501 whatever else the head says; chunked beside a
    // Content-Length is 400.
    if (auto st = check_transfer_encoding(t.te); !st) return st.error();
    if (h.content_length) return bad("both Content-Length and Transfer-Encoding (RFC 9112 6.1)");
    h.chunked = true;
  }
  return Ok{};
}

int status_for(const Error& e) {
  if (e.code == errc::kRequestMethod.name()) return 405;
  if (e.code == errc::kRequestTooLarge.name()) return 431;
  if (e.code == errc::kRequestTransferCoding.name()) return 501;
  if (e.code == errc::kRequestVersion.name()) return 505;
  return 400;
}

bool dropped_field_name(std::string_view name) { return name.find('_') != std::string_view::npos; }

}  // namespace mpo::proxy
