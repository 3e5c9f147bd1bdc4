// Words about text a server sent back, for messages, and small text helpers. Pure.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mpo {

// What a response body looks like, for a message about a URL that answered the wrong kind of page:
// "an HTML page", "JSON", "an empty body", or "text beginning '...'".
std::string body_kind(std::string_view body);

// `s` with <, >, & and " written as HTML entities (text and attribute values of the HTML pages).
std::string html_escape(std::string_view s);

// `s` without leading and trailing spaces and tabs (HTTP's optional whitespace, OWS).
std::string_view trim_blanks(std::string_view s);

namespace detail {
// n bytes (sizeof(Word) to 2 * sizeof(Word)) as two copies of a Word, the second ending at n.
template <class Word>
void copy_two_words(char* to, const char* from, std::size_t n) {
  Word head{}, tail{};
  std::memcpy(&head, from, sizeof head);
  std::memcpy(&tail, from + n - sizeof tail, sizeof tail);
  std::memcpy(to, &head, sizeof head);
  std::memcpy(to + n - sizeof tail, &tail, sizeof tail);
}
}  // namespace detail

// "00", "01", ... "99": a number's digits written two at a time (one table load and one 2-byte
// store per pair, where a digit at a time costs a division each; issue 43).
inline constexpr std::array<char, 200> kDigitPairs = [] {
  std::array<char, 200> t{};
  for (int i = 0; i < 100; ++i) {
    t[static_cast<std::size_t>(2 * i)] = static_cast<char>('0' + i / 10);
    t[static_cast<std::size_t>(2 * i + 1)] = static_cast<char>('0' + i % 10);
  }
  return t;
}();

// v (below 100) as two digits at `to`.
inline void write_two_digits(char* to, std::uint32_t v) { std::memcpy(to, kDigitPairs.data() + 2 * v, 2); }

// How many decimal digits v has.
inline std::size_t decimal_digits(std::uint64_t v) {
  std::size_t n = 1;
  for (;;) {
    if (v < 10) return n;
    if (v < 100) return n + 1;
    if (v < 1000) return n + 2;
    if (v < 10000) return n + 3;
    v /= 10000;
    n += 4;
  }
}

// v's decimal digits at `to` (room for twenty); where they end.
inline char* write_decimal(char* to, std::uint64_t v) {
  char* const end = to + decimal_digits(v);
  char* p = end;
  while (v >= 100) {
    p -= 2;
    write_two_digits(p, static_cast<std::uint32_t>(v % 100));
    v /= 100;
  }
  if (v >= 10) {
    write_two_digits(p - 2, static_cast<std::uint32_t>(v));
  } else {
    p[-1] = static_cast<char>('0' + v);
  }
  return end;
}

// memcpy's result, without a call for up to sixteen bytes: two overlapping copies of a fixed size,
// which compile to moves (issue 43: ~200 calls of memcpy a proxied request, most of a few bytes, each
// ~15 instructions through the PLT and its size dispatch). `to` and `from` must not overlap.
inline void copy_bytes(char* to, const char* from, std::size_t n) {
  if (n > 16) {
    std::memcpy(to, from, n);
  } else if (n >= 8) {
    detail::copy_two_words<std::uint64_t>(to, from, n);
  } else if (n >= 4) {
    detail::copy_two_words<std::uint32_t>(to, from, n);
  } else if (n > 0) {  // 1 to 3 bytes: the first, the middle and the last
    to[0] = from[0];
    to[n / 2] = from[n / 2];
    to[n - 1] = from[n - 1];
  }
}

// A hex digit's value (either case), or -1.
inline int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `n` bytes as two lowercase hex digits each, written from `out` on; returns the end. Ids and
// digests (trace context, the ledger's trace ids, identity digests). Eight bytes at a time with
// SSE2 (a trace id and a span id on every ledger line and upstream request: issue 43).
inline char* write_hex_lower(char* out, const std::uint8_t* bytes, std::size_t n) {
  std::size_t i = 0;
#if defined(__SSE2__)
  for (; i + 8 <= n; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    const __m128i v = _mm_cvtsi64_si128(static_cast<long long>(word));
    const __m128i low_nibbles = _mm_set1_epi8(0x0f);
    const __m128i high = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibbles);
    const __m128i low = _mm_and_si128(v, low_nibbles);
    const __m128i nibbles = _mm_unpacklo_epi8(high, low);  // each byte's high nibble first
    // '0' + d, and 'a' - '0' - 10 = 39 more for d > 9
    const __m128i letters = _mm_and_si128(_mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9)), _mm_set1_epi8(39));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_add_epi8(_mm_add_epi8(nibbles, _mm_set1_epi8('0')), letters));
    out += 16;
  }
#endif
  static constexpr char kDigits[] = "0123456789abcdef";
  for (; i < n; ++i) {
    *out++ = kDigits[bytes[i] >> 4];
    *out++ = kDigits[bytes[i] & 0xf];
  }
  return out;
}

// RFC 9110 5.6.2 tchar: a byte of a token (header names, methods, chunk-extension names).
inline bool is_token_char(char c) {
  static constexpr auto kTable = [] {
    std::array<bool, 256> t{};
    for (int b = '0'; b <= '9'; ++b) t[static_cast<std::size_t>(b)] = true;
    for (int b = 'a'; b <= 'z'; ++b) t[static_cast<std::size_t>(b)] = true;
    for (int b = 'A'; b <= 'Z'; ++b) t[static_cast<std::size_t>(b)] = true;
    for (const char b : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(b)] = true;
    return t;
  }();
  return kTable[static_cast<unsigned char>(c)];
}

// Text written through a cursor into a string whose bytes past the text are room to write into:
// one resize for a whole HTTP head, not one a piece. Grows as needed; finish() cuts the string to
// the text. (Issue 43: a field line appended with a resize of its own cost ~130 instructions;
// pieces appended inline at each field made each head's writer 15 KB of code. This costs a request
// as many instructions and cache misses as those inlined appends did, in less code: BENCHMARKS.md,
// fifty-second session.)
class TextWriter {
 public:
  // Writing `out` from its start, with room for `expect` bytes to begin with.
  TextWriter(std::string& out, std::size_t expect) : out_(&out) {
    if (out.size() < expect) out.resize(expect);
  }
  TextWriter& put(std::string_view s) {
    copy_bytes(room(s.size()), s.data(), s.size());
    size_ += s.size();
    return *this;
  }
  // "NAME: VALUE\r\n", an HTTP head's field line (out of line: one copy for every head's writer).
  TextWriter& field_line(std::string_view name, std::string_view value);
  // The string cut to the text written.
  void finish() { out_->resize(size_); }

 private:
  char* room(std::size_t n) { return size_ + n <= out_->size() ? out_->data() + size_ : grow(n); }
  char* grow(std::size_t n);
  std::string* out_;
  std::size_t size_ = 0;
};

}  // namespace mpo
