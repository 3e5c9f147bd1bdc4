// JSON helpers. Writing: a fixed-key-order object writer producing C-locale numbers (records on
// disk and on the wire keep a stable shape). Reading: Boost.JSON parse into Result, and typed
// lookups that say what was wrong.
#pragma once

#include <algorithm>
#include <array>
#include <boost/json/value.hpp>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/text.hpp"

namespace mpo {

// Appends `s` as a JSON string literal (quotes included). Invalid UTF-8 bytes are replaced by
// U+FFFD so the output is always valid JSON.
void append_json_string(std::string& out, std::string_view s);
// The same, escaping also as Go's encoding/json does (<, > and & as \u003c..., U+2028 and U+2029 as
// \u2028 and \u2029), for receipts byte-identical with fak's.
void append_json_string_html_safe(std::string& out, std::string_view s);
// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong form, no surrogate, nothing
// past U+10FFFF), or 0 when none starts there.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);
// The end of the run of bytes from `i` on that a JSON string holds as they are (printable ASCII but
// the quote and the backslash): where the next quote, backslash, control or non-ASCII byte is, or
// the end. Sixteen bytes at a time.
std::size_t json_plain_run_end(std::string_view s, std::size_t i);
namespace detail {
// Whether any of the eight bytes in `x` is not plain: below 0x20, not ASCII, a quote or a backslash
// (HTML-safe, or <, > or &). Exact (no false alarm), by the bit tricks of "Bit Twiddling Hacks"
// (haszero, hasless): a byte-at-a-time table lookup was most of the cost of a ledger line.
template <bool kHtmlSafe = false>
bool json_word_has_special(std::uint64_t x) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
  const auto equal = [x](unsigned char c) {
    const std::uint64_t y = x ^ (kOnes * c);
    return (y - kOnes) & ~y & kHighs;
  };
  std::uint64_t hits = ((x - kOnes * 0x20) & ~x & kHighs) | (x & kHighs) | equal('"') | equal('\\');
  if constexpr (kHtmlSafe) hits |= equal('<') | equal('>') | equal('&');
  return hits != 0;
}
}  // namespace detail

// Whether a JSON string holds all of `s` as it is (json_plain_run_end(s, 0) == s.size()). Inline for
// up to sixteen bytes, read as two words of its own bytes (overlapping, or repeated when it is
// shorter than eight): most of a ledger line's strings, each a call and a padded copy before
// (issue 43).
inline bool json_all_plain(std::string_view s) {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::uint64_t a = 0, b = 0;
  if (n >= 8) {
    if (n > 16) return json_plain_run_end(s, 0) == n;
    std::memcpy(&a, p, 8);
    std::memcpy(&b, p + n - 8, 8);
  } else if (n >= 4) {
    std::uint32_t head = 0, tail = 0;
    std::memcpy(&head, p, 4);
    std::memcpy(&tail, p + n - 4, 4);
    a = b = (std::uint64_t{tail} << 32) | head;
  } else if (n > 0) {
    const auto byte = [p](std::size_t i) { return std::uint64_t{static_cast<unsigned char>(p[i])}; };
    a = b = (byte(0) | byte(n / 2) << 8 | byte(n - 1) << 16 | byte(0) << 24) * 0x0000000100000001ULL;
  } else {
    return true;
  }
#if defined(__SSE2__)
  // Both words at once: below 0x20 or not ASCII (negative as signed bytes), a quote, a backslash.
  const __m128i v = _mm_set_epi64x(static_cast<long long>(b), static_cast<long long>(a));
  const __m128i hits =
      _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
  return _mm_movemask_epi8(hits) == 0;
#else
  return !(detail::json_word_has_special(a) | detail::json_word_has_special(b));
#endif
}

// Shortest round-trip representation, C locale; NaN and infinities become null.
void append_json_number(std::string& out, double v);
// A number's JSON text into `text` (what append_json_number appends); its length.
std::size_t json_number_text(char (&text)[32], double v);
// An integer's decimal text into `text`; its length.
std::size_t json_integer_text(char (&text)[24], std::int64_t v);
std::size_t json_integer_text(char (&text)[24], std::uint64_t v);
std::string json_quote(std::string_view s);
// ["a","b"]: a JSON array of strings.
std::string json_string_array(std::span<const std::string> items);
std::string json_string_array(std::initializer_list<std::string_view> items);

// The text of a key written in the source as `"name"_key`. It must need no escape: a key that would
// is a compile error.
template <std::size_t N>
struct KeyLiteral {
  char text[N]{};
  consteval KeyLiteral(const char (&s)[N]) {
    for (std::size_t i = 0; i + 1 < N; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if (u < 0x20 || u >= 0x80 || s[i] == '"' || s[i] == '\\') throw "a _key literal must need no JSON escape";
      text[i] = s[i];
    }
  }
};

template <KeyLiteral K>
struct StaticKey;

// A member's key. Any text converts to one and is escaped when written; a `"name"_key` converts to
// one known to need no escape.
class JsonKey {
 public:
  JsonKey(std::string_view k) : text_(k) {}
  JsonKey(const char* k) : text_(k) {}
  JsonKey(const std::string& k) : text_(k) {}
  std::string_view text() const { return text_; }
  bool known_plain() const { return known_plain_; }

 private:
  struct Plain {};
  constexpr JsonKey(std::string_view k, Plain) : text_(k), known_plain_(true) {}
  template <KeyLiteral K>
  friend struct StaticKey;
  std::string_view text_;
  bool known_plain_ = false;
};

// A key known at compile time, with its member's opening `,"name":` as a constant: a ledger line's
// sixty members are written without a scan of their keys or a copy of unknown length (issue 43).
template <KeyLiteral K>
struct StaticKey {
  static constexpr std::size_t kSize = sizeof(K.text) - 1;
  static constexpr std::array<char, kSize + 4> kOpening = [] {
    std::array<char, kSize + 4> a{};
    a[0] = ',';
    a[1] = '"';
    for (std::size_t i = 0; i < kSize; ++i) a[i + 2] = K.text[i];
    a[kSize + 2] = '"';
    a[kSize + 3] = ':';
    return a;
  }();
  operator JsonKey() const { return JsonKey(std::string_view(K.text, kSize), JsonKey::Plain{}); }
};
template <KeyLiteral K>
consteval StaticKey<K> operator""_key() {
  return {};
}

// Writes one JSON object with keys in the order they are added.
class JsonObjectWriter {
 public:
  JsonObjectWriter() : JsonObjectWriter(64) {}
  // With room for `reserve` bytes, where the object's usual size is known (a ledger line).
  explicit JsonObjectWriter(std::size_t reserve) : own_(std::max<std::size_t>(reserve, 16), '\0') {}
  // Writing after the first `used` bytes of `buffer`, whose bytes after those are room to write
  // into (grown as needed; a batch of ledger lines rendered end to end, issue 43): finish with
  // finish_line_in(), which says where the text ends.
  JsonObjectWriter(std::string& buffer, std::size_t used) : out_(&buffer), start_(used), size_(used) {}
  JsonObjectWriter(const JsonObjectWriter&) = delete;
  JsonObjectWriter& operator=(const JsonObjectWriter&) = delete;
  JsonObjectWriter& field(JsonKey key, std::string_view v);
  JsonObjectWriter& field(JsonKey key, const char* v) { return field(key, std::string_view(v)); }
  JsonObjectWriter& field(JsonKey key, const std::string& v) { return field(key, std::string_view(v)); }
  JsonObjectWriter& field(JsonKey key, double v);
  JsonObjectWriter& field(JsonKey key, std::int64_t v);
  JsonObjectWriter& field(JsonKey key, int v) { return field(key, static_cast<std::int64_t>(v)); }
  JsonObjectWriter& field(JsonKey key, std::uint64_t v);
  JsonObjectWriter& field(JsonKey key, bool v);
  JsonObjectWriter& null_field(JsonKey key);
  // `json` must already be valid JSON text (an object, array, ...).
  JsonObjectWriter& raw_field(JsonKey key, std::string_view json);
  template <typename Key, typename T>
  JsonObjectWriter& optional_field(Key key, const std::optional<T>& v) {
    return v ? field(key, *v) : null_field(key);
  }

  // The same with a key known at compile time: written in place, inline.
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K> key, std::string_view v) {
    return json_all_plain(v) ? plain_field(key, v) : field(JsonKey(key), v);
  }
  // A string the caller made of plain bytes only (a timestamp, hex digits, a constant): written
  // without looking for a byte to escape.
  template <KeyLiteral K>
  JsonObjectWriter& plain_field(StaticKey<K>, std::string_view v) {
    char* p = opening<K>(v.size() + 2);
    *p++ = '"';
    copy_bytes(p, v.data(), v.size());
    p[v.size()] = '"';
    return close(p + v.size() + 1);
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K> key, const char* v) {
    return field(key, std::string_view(v));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K> key, const std::string& v) {
    return field(key, std::string_view(v));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K>, double v) {
    char text[32];
    return raw<K>(std::string_view(text, json_number_text(text, v)));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K>, std::int64_t v) {
    char text[24];
    return raw<K>(std::string_view(text, json_integer_text(text, v)));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K> key, int v) {
    return field(key, static_cast<std::int64_t>(v));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K>, std::uint64_t v) {
    char text[24];
    return raw<K>(std::string_view(text, json_integer_text(text, v)));
  }
  template <KeyLiteral K>
  JsonObjectWriter& field(StaticKey<K>, bool v) {
    return v ? raw<K>("true") : raw<K>("false");
  }
  template <KeyLiteral K>
  JsonObjectWriter& null_field(StaticKey<K>) {
    return raw<K>("null");
  }
  template <KeyLiteral K>
  JsonObjectWriter& raw_field(StaticKey<K>, std::string_view json) {
    return raw<K>(json);
  }

  // Closes the object and returns its text; the writer is spent afterwards.
  std::string finish() &&;
  // The same with a newline after it (a JSON Lines record).
  std::string finish_line() &&;
  // A writer on a caller's buffer: closes the object, a newline after it; where the text ends.
  std::size_t finish_line_in() &&;

 private:
  void key(std::string_view k);
  // The owned text closed by `end` ("}" or "}\n").
  std::string close_own(std::string_view end);
  // `k` and `text` as a member; `text` is JSON already unless `quoted` (a string to escape).
  void member(JsonKey k, std::string_view text, bool quoted);
  // Room for `n` more bytes after the text (issue 43: a member written in place, not appended).
  char* room(std::size_t n) { return size_ + n <= out_->size() ? out_->data() + size_ : grow(n); }
  char* grow(std::size_t n);
  // Writes a member's opening with room for `value_size` bytes after it; where the value goes.
  template <KeyLiteral K>
  char* opening(std::size_t value_size) {
    constexpr auto& text = StaticKey<K>::kOpening;
    char* p = room(text.size() + value_size);
    std::memcpy(p, text.data(), text.size());
    return p + text.size();
  }
  template <KeyLiteral K>
  JsonObjectWriter& raw(std::string_view json) {
    char* p = opening<K>(json.size());
    copy_bytes(p, json.data(), json.size());
    return close(p + json.size());
  }
  JsonObjectWriter& close(char* end) {
    size_ = static_cast<std::size_t>(end - out_->data());
    return *this;
  }
  // Every member is written with a comma before it; finishing turns the first one into the brace.
  std::string own_;           // the text, unless the writer was given a buffer
  std::string* out_ = &own_;  // the text, (*out_)[start_, size_), then room to write into
  std::size_t start_ = 0;     // where the object begins
  std::size_t size_ = 0;      // where the text ends
};

// Parses one JSON document; the error names the byte offset.
Result<boost::json::value> parse_json(std::string_view text);

// Lookups on an object; nullopt when absent, null, or of another type.
std::optional<std::string_view> json_string(const boost::json::object& o, std::string_view key);
std::optional<std::int64_t> json_int(const boost::json::object& o, std::string_view key);
std::optional<double> json_double(const boost::json::object& o, std::string_view key);
std::optional<bool> json_bool(const boost::json::object& o, std::string_view key);
const boost::json::object* json_object(const boost::json::object& o, std::string_view key);
const boost::json::array* json_array(const boost::json::object& o, std::string_view key);

// Member `key` of `o`, when it is an object, parsed by `parse` (a `Result<T>(const object&)`) into
// `out`; absent, `out` is left as it is. The parser's error otherwise.
template <class Parse, class T>
Status parse_json_member(const boost::json::object& o, std::string_view key, Parse parse, T& out) {
  if (const auto* member = json_object(o, key)) {
    auto parsed = parse(*member);
    if (!parsed) return parsed.error();
    out = std::move(*parsed);
  }
  return Ok{};
}

}  // namespace mpo
