// The implementation of core/json.hpp. JSON helpers.
#include "core/json.hpp"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <array>
#include <bit>
#include <boost/json/parse.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mpo {

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) { return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80; };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b0 == 0xF0 && b1 < 0x90) return 0;
    if (b0 == 0xF4 && b1 >= 0x90) return 0;
    return 4;
  }
  return 0;
}

namespace {

#if !defined(__SSE2__)
// Bytes that go into a JSON string as they are: printable ASCII but the quote and the backslash
// (and, HTML-safe, but <, > and &).
constexpr std::array<bool, 256> plain_bytes(bool html_safe) {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[static_cast<std::size_t>(c)] = true;
  t['"'] = false;
  t['\\'] = false;
  if (html_safe) t['<'] = t['>'] = t['&'] = false;
  return t;
}
constexpr auto kPlainByte = plain_bytes(false);
constexpr auto kHtmlSafePlainByte = plain_bytes(true);
#endif

const char* short_escape(char c) {
  switch (c) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: return nullptr;
  }
}

void append_u_escape(std::string& out, unsigned code) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out.push_back(kHex[(code >> shift) & 0xF]);
}

// U+2028 and U+2029 (line and paragraph separators), which JavaScript once took for line ends.
bool is_line_separator(std::string_view s, std::size_t i, std::size_t n) {
  return n == 3 && static_cast<unsigned char>(s[i]) == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
         (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9);
}

#if defined(__SSE2__)
// The bytes of the sixteen at `p` that are not plain (bit k for byte k): below 0x20, not ASCII, a
// quote or a backslash (HTML-safe, or <, > or &). Each byte's test is its own, so a mask can be
// shifted to drop bytes already looked at. The compare is signed: bytes 0x80-0xff are negative, below
// 0x20 like the control characters.
template <bool kHtmlSafe>
unsigned special_bytes(const char* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const auto is = [&v](char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); };
  __m128i hits = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)), _mm_or_si128(is('"'), is('\\')));
  if constexpr (kHtmlSafe) hits = _mm_or_si128(hits, _mm_or_si128(is('<'), _mm_or_si128(is('>'), is('&'))));
  return static_cast<unsigned>(_mm_movemask_epi8(hits));
}

// The end of the run of bytes from `i` on that go into a JSON string as they are. A run of printable
// ASCII goes in at once (most of every ledger line: per-character appends were half the load
// generator's CPU per request), found sixteen bytes at a time: the last few by reading the string's
// last sixteen again, or, in a string shorter than that, from a copy padded with plain bytes.
template <bool kHtmlSafe>
std::size_t plain_run_end(std::string_view s, std::size_t i) {
  const std::size_t n = s.size();
  for (; i + 16 <= n; i += 16) {
    if (const unsigned m = special_bytes<kHtmlSafe>(s.data() + i))
      return i + static_cast<std::size_t>(std::countr_zero(m));
  }
  if (i >= n) return n;
  unsigned m = 0;
  if (n >= 16) {
    m = special_bytes<kHtmlSafe>(s.data() + n - 16) >> (i - (n - 16));
  } else {
    char padded[16];
    std::memset(padded, 'a', sizeof padded);
    // Up to fifteen bytes by two overlapping copies of a fixed size (no call to memcpy).
    const char* from = s.data() + i;
    const std::size_t k = n - i;
    if (k >= 8) {
      std::memcpy(padded, from, 8);
      std::memcpy(padded + k - 8, from + k - 8, 8);
    } else if (k >= 4) {
      std::memcpy(padded, from, 4);
      std::memcpy(padded + k - 4, from + k - 4, 4);
    } else {
      for (std::size_t j = 0; j < k; ++j) padded[j] = from[j];
    }
    m = special_bytes<kHtmlSafe>(padded);
  }
  return m ? i + static_cast<std::size_t>(std::countr_zero(m)) : n;
}
#else
// Without SSE2: the end of the run of bytes from `i` on that go into a JSON string as they are. A run of printable
// ASCII goes in at once (most of every ledger line: per-character appends were half the load
// generator's CPU per request), found eight bytes at a time, its last few by a table lookup per byte.
template <bool kHtmlSafe>
std::size_t plain_run_end(std::string_view s, std::size_t i) {
  const auto& plain_byte = kHtmlSafe ? kHtmlSafePlainByte : kPlainByte;
  std::size_t plain = i;
  std::uint64_t word = 0;
  for (; plain + 8 <= s.size(); plain += 8) {
    std::memcpy(&word, s.data() + plain, 8);
    if (detail::json_word_has_special<kHtmlSafe>(word)) break;
  }
  // The last few bytes of a plain run: the string's last eight, read again, clear them all at once.
  if (plain + 8 > s.size() && plain < s.size() && s.size() >= 8) {
    std::memcpy(&word, s.data() + s.size() - 8, 8);
    if (!detail::json_word_has_special<kHtmlSafe>(word)) return s.size();
  }
  while (plain < s.size() && plain_byte[static_cast<unsigned char>(s[plain])]) ++plain;
  return plain;
}

#endif

template <bool kHtmlSafe>
void append_escaped(std::string& out, std::string_view s) {
  out.push_back('"');
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t plain = plain_run_end<kHtmlSafe>(s, i);
    if (plain > i) {
      out.append(s.data() + i, plain - i);
      i = plain;
      if (i == s.size()) break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (const char* e = short_escape(s[i])) {
      out += e;
      ++i;
      continue;
    }
    if (c < 0x80) {  // a control character, or (HTML-safe) <, > or &
      append_u_escape(out, c);
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (kHtmlSafe && is_line_separator(s, i, n)) {
      append_u_escape(out, static_cast<unsigned char>(s[i + 2]) == 0xA8 ? 0x2028 : 0x2029);
    } else {
      out.append(s.data() + i, n);
    }
    i += n;
  }
  out.push_back('"');
}

}  // namespace

std::size_t json_plain_run_end(std::string_view s, std::size_t i) { return plain_run_end<false>(s, i); }
void append_json_string(std::string& out, std::string_view s) { append_escaped<false>(out, s); }
void append_json_string_html_safe(std::string& out, std::string_view s) { append_escaped<true>(out, s); }

namespace {

// v's text when v is a whole number of millionths, n / 10^6 with |v| in [1e-4, 1e8) (a duration in
// milliseconds measured in nanoseconds or microseconds, what most ledger numbers are): the digits of
// n with the point six places from the right and the trailing zeros dropped. That is the shortest
// text that reads back as v: the doubles near v are under 1.5e-8 apart, and any other text of as
// many digits or fewer is at least 1e-6 away from n / 10^6. 0 when v is not such a number.
std::size_t millionths_text(char (&text)[32], double v) {
  const double a = std::fabs(v);
  if (!(a >= 1e-4 && a < 1e8)) return 0;
  const auto n = static_cast<std::uint64_t>(a * 1e6 + 0.5);
  if (static_cast<double>(n) / 1e6 != a) return 0;
  char* p = text;
  if (v < 0) *p++ = '-';
  p = write_decimal(p, n / 1'000'000);
  if (const auto part = static_cast<std::uint32_t>(n % 1'000'000); part != 0) {
    // The six places two digits at a time, then the trailing zeros dropped.
    *p++ = '.';
    write_two_digits(p, part / 10'000);
    write_two_digits(p + 2, part / 100 % 100);
    write_two_digits(p + 4, part % 100);
    std::size_t places = 6;
    while (p[places - 1] == '0') --places;
    p += places;
  }
  return static_cast<std::size_t>(p - text);
}

}  // namespace

std::size_t json_number_text(char (&text)[32], double v) {
  if (!std::isfinite(v)) {
    std::memcpy(text, "null", 4);
    return 4;
  }
  // Zero (a ledger's lag of 0 ms, often) without fmt's float search (issue 43). -0 is written as 0
  // too: a reader that stores "-0" as an integer would lose the sign anyway, and no measurement here
  // means anything by it.
  if (v == 0) {
    text[0] = '0';
    return 1;
  }
  if (const std::size_t n = millionths_text(text, v)) return n;
  // fmt's shortest round-trip form fits in 24 ("-2.2250738585072014e-308"), so it is written
  // straight into `text`, its format compiled.
  return static_cast<std::size_t>(fmt::format_to(text, FMT_COMPILE("{}"), v) - text);
}

std::size_t json_integer_text(char (&text)[24], std::int64_t v) {
  char* p = text;
  // The magnitude as unsigned: -INT64_MIN does not fit an int64.
  auto magnitude = static_cast<std::uint64_t>(v);
  if (v < 0) {
    *p++ = '-';
    magnitude = ~magnitude + 1;
  }
  return static_cast<std::size_t>(write_decimal(p, magnitude) - text);
}

std::size_t json_integer_text(char (&text)[24], std::uint64_t v) {
  return static_cast<std::size_t>(write_decimal(text, v) - text);
}

void append_json_number(std::string& out, double v) {
  char text[32];
  out.append(text, json_number_text(text, v));
}

std::string json_quote(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

std::string json_string_array(std::span<const std::string> items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    append_json_string(out, items[i]);
  }
  return out + "]";
}

std::string json_string_array(std::initializer_list<std::string_view> items) {
  std::string out = "[";
  bool first = true;
  for (std::string_view s : items) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, s);
  }
  return out + "]";
}

char* JsonObjectWriter::grow(std::size_t n) {
  out_->resize(std::max(out_->size() * 2, size_ + n));
  return out_->data() + size_;
}

void JsonObjectWriter::key(std::string_view k) {
  out_->resize(size_);
  out_->push_back(',');
  append_json_string(*out_, k);
  out_->push_back(':');
  size_ = out_->size();
}

// A member whose key and (`quoted`) text need no escape, the usual case, is written in place as one
// piece, `,"key":text`; the others by parts.
void JsonObjectWriter::member(JsonKey key_text, std::string_view text, bool quoted) {
  const std::string_view k = key_text.text();
  if ((key_text.known_plain() || plain_run_end<false>(k, 0) == k.size()) &&
      (!quoted || plain_run_end<false>(text, 0) == text.size())) {
    char* const start = room(k.size() + text.size() + 6);
    char* p = start;
    *p++ = ',';
    *p++ = '"';
    copy_bytes(p, k.data(), k.size());
    p += k.size();
    *p++ = '"';
    *p++ = ':';
    if (quoted) *p++ = '"';
    copy_bytes(p, text.data(), text.size());
    p += text.size();
    if (quoted) *p++ = '"';
    size_ += static_cast<std::size_t>(p - start);
    return;
  }
  key(k);  // the text from size_ on
  if (quoted) {
    append_json_string(*out_, text);
  } else {
    out_->append(text);
  }
  size_ = out_->size();
}

JsonObjectWriter& JsonObjectWriter::field(JsonKey k, std::string_view v) {
  member(k, v, true);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::field(JsonKey k, double v) {
  char text[32];
  member(k, std::string_view(text, json_number_text(text, v)), false);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::field(JsonKey k, std::int64_t v) {
  char text[24];
  member(k, std::string_view(text, json_integer_text(text, v)), false);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::field(JsonKey k, std::uint64_t v) {
  char text[24];
  member(k, std::string_view(text, json_integer_text(text, v)), false);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::field(JsonKey k, bool v) {
  member(k, v ? std::string_view("true") : std::string_view("false"), false);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::null_field(JsonKey k) {
  member(k, "null", false);
  return *this;
}
JsonObjectWriter& JsonObjectWriter::raw_field(JsonKey k, std::string_view json) {
  member(k, json, false);
  return *this;
}
// The first member's comma becomes the opening brace; `end` closes the object.
std::string JsonObjectWriter::close_own(std::string_view end) {
  own_.resize(size_);
  if (own_.empty()) {
    own_ = "{";
  } else {
    own_[0] = '{';
  }
  own_.append(end);
  return std::move(own_);
}
std::string JsonObjectWriter::finish() && { return close_own("}"); }
std::string JsonObjectWriter::finish_line() && { return close_own("}\n"); }
std::size_t JsonObjectWriter::finish_line_in() && {
  char* p = room(3);
  if (size_ == start_) *p++ = '{';
  (*out_)[start_] = '{';
  *p++ = '}';
  *p++ = '\n';
  return static_cast<std::size_t>(p - out_->data());
}

Result<boost::json::value> parse_json(std::string_view text) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(text, ec);
  if (ec) {
    return make_error(errc::kJsonParse, fmt::format("invalid JSON: {}", ec.message()));
  }
  return v;
}

std::optional<std::string_view> json_string(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  const auto& s = v->get_string();
  return std::string_view(s.data(), s.size());
}

std::optional<std::int64_t> json_int(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(v->get_uint64());
  }
  if (v->is_double()) {
    const double d = v->get_double();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
      return static_cast<std::int64_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<double> json_double(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_double()) return v->get_double();
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  return std::nullopt;
}

std::optional<bool> json_bool(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  if (v == nullptr || !v->is_bool()) return std::nullopt;
  return v->get_bool();
}

const boost::json::object* json_object(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

const boost::json::array* json_array(const boost::json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? &v->get_array() : nullptr;
}

}  // namespace mpo
