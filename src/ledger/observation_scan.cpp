// The implementation of ledger/observation_scan.hpp.
#include "ledger/observation_scan.hpp"

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>

#include "core/json.hpp"
#include "core/time.hpp"
#include "ledger/line_fields.hpp"
#include "ledger/observation.hpp"

namespace mpo::ledger::detail {
namespace {

// One value of a line, as the scan read it.
struct Token {
  enum Kind : std::uint8_t { kString, kInteger, kFraction, kTrue, kFalse, kNull, kObject } kind = kNull;
  std::string_view text;     // a string's contents (no escape in them), or an object's text, braces included
  std::int64_t integer = 0;  // kInteger
  double number = 0;         // kInteger (converted, as the DOM's get_double does) and kFraction
};

// Where the string whose contents start at line[p] ends: the index of its closing quote, or npos
// for an escape, a control byte or no closing quote (UTF-8 is checked for the whole line). An index,
// not a view: a view returned through memory and read back at once stalled the scan (a store not
// forwarded to the wider load after it).
std::size_t plain_string_end(std::string_view line, std::size_t i) {
  const char* s = line.data();
  const std::size_t n = line.size();
  for (;;) {
    // Eight bytes at a time (inline: most strings of a line are under 30 bytes) to the first that is
    // not plain: the lowest byte the masks flag is one (a borrow can flag bytes only above a true
    // one), then that byte.
    constexpr std::uint64_t kOnes = 0x0101010101010101ULL, kHighs = 0x8080808080808080ULL;
    for (std::uint64_t x; i + 8 <= n; i += 8) {
      std::memcpy(&x, s + i, 8);
      const std::uint64_t quote = x ^ (kOnes * '"'), backslash = x ^ (kOnes * '\\');
      const std::uint64_t hits = ((x - kOnes * 0x20) & ~x & kHighs) | (x & kHighs) |
                                 ((quote - kOnes) & ~quote & kHighs) | ((backslash - kOnes) & ~backslash & kHighs);
      if (hits != 0) {
        i += static_cast<std::size_t>(__builtin_ctzll(hits)) / 8;  // little-endian: the lowest byte first
        break;
      }
    }
    if (i >= n) return std::string_view::npos;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') return i;
    if (c == '\\' || c < 0x20) return std::string_view::npos;  // an escape or a control byte
    ++i;                                                       // a byte of a UTF-8 sequence
  }
}

bool digit(char c) { return c >= '0' && c <= '9'; }

// A digit run at line[p], accumulated into `m` (it wraps past 19 digits: `digits` says how many),
// `p` past it.
void digits_into(std::string_view line, std::size_t& p, std::uint64_t& m, std::size_t& digits) {
  const std::size_t from = p;
  for (; p < line.size() && digit(line[p]); ++p) m = m * 10 + static_cast<std::uint64_t>(line[p] - '0');
  digits += p - from;
}

// A number without a sign at line[p] by JSON's grammar (0 or a digit run without a leading zero,
// then an optional fraction and exponent), read: `p` past it. false when it is not one, or one the
// scan leaves to the DOM walk: an integer of more than 18 digits (it may not fit an int64), a
// fraction out of a double's range.
//
// A fraction of at most 15 digits in all, at most 22 after the point and no exponent ("123.456") is
// 123456 / 10^3 where both are exact doubles: one division, correctly rounded as IEEE 754 rounds it,
// so the nearest double to the decimal, as simdjson and from_chars give it (Clinger's fast path;
// what the writer derives, to a millionth, takes it). Other fractions go to from_chars.
bool number(std::string_view line, std::size_t& p, Token& t) {
  static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const std::size_t from = p, n = line.size();
  if (p >= n || !digit(line[p])) return false;
  std::uint64_t m = 0;
  std::size_t digits = 0;
  if (line[p] == '0') {
    ++p;
    digits = 1;
  } else {
    digits_into(line, p, m, digits);
  }
  const std::size_t integral = digits;
  bool fraction = false, exponent = false;
  if (p < n && line[p] == '.') {
    fraction = true;
    if (++p >= n || !digit(line[p])) return false;
    digits_into(line, p, m, digits);
  }
  if (p < n && (line[p] == 'e' || line[p] == 'E')) {
    fraction = exponent = true;
    ++p;
    if (p < n && (line[p] == '+' || line[p] == '-')) ++p;
    if (p >= n || !digit(line[p])) return false;
    while (p < n && digit(line[p])) ++p;
  }
  if (!fraction) {
    if (digits > 18) return false;
    t.kind = Token::kInteger;
    t.integer = static_cast<std::int64_t>(m);
    t.number = static_cast<double>(t.integer);
    return true;
  }
  t.kind = Token::kFraction;
  const std::size_t after_point = digits - integral;
  if (!exponent && digits <= 15 && after_point <= 22) {  // 10^15 < 2^53: m is exact
    t.number = static_cast<double>(m) / kPow10[after_point];
    return true;
  }
  const char* end = line.data() + p;
  const auto [stop, ec] = std::from_chars(line.data() + from, end, t.number);
  return ec == std::errc() && stop == end;
}

template <std::size_t N>
bool literal(std::string_view line, std::size_t& p, const char (&word)[N]) {
  constexpr std::size_t kLength = N - 1;
  if (line.size() - p < kLength || std::memcmp(line.data() + p, word, kLength) != 0) return false;
  p += kLength;
  return true;
}

// Where the object whose opening brace is at line[p] ends: the index of its closing brace, found by
// its nesting (strings stepped over whole), or npos (a string with an escape, no end). What lies
// between is checked by the DOM parse of the object that reads it.
std::size_t object_end(std::string_view line, std::size_t p) {
  std::size_t depth = 0;
  for (std::size_t i = p; i < line.size(); ++i) {
    switch (line[i]) {
      case '"':
        i = plain_string_end(line, i + 1);
        if (i == std::string_view::npos) return i;
        break;
      case '{':
      case '[': ++depth; break;
      case '}':
      case ']':
        if (--depth == 0) return i;
        break;
      default: break;
    }
  }
  return std::string_view::npos;
}

// The value at line[p]; false for one the scan leaves to the DOM walk (an array, a negative number,
// anything malformed).
bool value(std::string_view line, std::size_t& p, Token& t) {
  if (p >= line.size()) return false;
  switch (line[p]) {
    case '"': {
      const std::size_t end = plain_string_end(line, p + 1);
      if (end == std::string_view::npos) return false;
      t.kind = Token::kString;
      t.text = line.substr(p + 1, end - p - 1);
      p = end + 1;
      return true;
    }
    case 't': t.kind = Token::kTrue; return literal(line, p, "true");
    case 'f': t.kind = Token::kFalse; return literal(line, p, "false");
    case 'n': t.kind = Token::kNull; return literal(line, p, "null");
    case '{': {
      const std::size_t end = object_end(line, p);
      if (end == std::string_view::npos) return false;
      t.kind = Token::kObject;
      t.text = line.substr(p, end + 1 - p);
      p = end + 1;
      return true;
    }
    default: return number(line, p, t);
  }
}

// A token read as detail::read_field reads values (core/simdjson_values.hpp's rules): a value of
// another type is absent. An object never comes here: the scan reads server_timings' itself.
struct TokenValue {
  const Token& t;
  std::optional<std::string_view> string() const {
    return t.kind == Token::kString ? std::optional<std::string_view>(t.text) : std::nullopt;
  }
  std::optional<std::int64_t> time() const {
    if (t.kind != Token::kString) return std::nullopt;
    auto us = parse_rfc3339(t.text);
    return us ? std::optional<std::int64_t>(*us) : std::nullopt;
  }
  std::optional<double> number() const {
    return t.kind == Token::kInteger || t.kind == Token::kFraction ? std::optional<double>(t.number) : std::nullopt;
  }
  std::optional<std::int64_t> integer() const {
    if (t.kind == Token::kInteger) return t.integer;
    // In range and integral (sj::integer_of).
    const double d = t.number;
    if (t.kind == Token::kFraction && d >= -9.2e18 && d <= 9.2e18 &&
        d == static_cast<double>(static_cast<std::int64_t>(d))) {
      return static_cast<std::int64_t>(d);
    }
    return std::nullopt;
  }
  std::optional<bool> boolean() const {
    if (t.kind != Token::kTrue && t.kind != Token::kFalse) return std::nullopt;
    return t.kind == Token::kTrue;
  }
  std::optional<std::string_view> object() const { return std::nullopt; }
};

// `object` parsed by simdjson's DOM (copied with the room it reads past an input's end) and
// minified into `scratch`; false where the parse fails.
bool minified_object(std::string_view object, ScanState& state, simdjson::dom::parser& dom, std::string& scratch) {
  state.object.assign(object);
  state.object.resize(object.size() + simdjson::SIMDJSON_PADDING, ' ');
  simdjson::dom::element parsed;
  if (dom.parse(state.object.data(), object.size(), false).get(parsed) != simdjson::SUCCESS || !parsed.is_object()) {
    return false;
  }
  scratch = simdjson::minify(parsed);
  return true;
}

}  // namespace

ScanRead scan_observation(std::string_view line, LedgerRecordView& r, ScanState& state, simdjson::dom::parser& dom,
                          std::string& scratch) {
  KeyOrder& order = state.order;
  static constexpr std::string_view kPrefix = R"({"schema":"modelperfobs.observation.v1")";
  static_assert(kPrefix.substr(11, kPrefix.size() - 12) == kObservationSchema);
  if (!line.starts_with(kPrefix) || !simdjson::validate_utf8(line.data(), line.size())) return ScanRead::kLeftOver;
  r.source_schema = kObservationSchema;
  bool seen[static_cast<std::size_t>(Field::kOther)] = {};
  Required got;
  const char* s = line.data();
  const std::size_t n = line.size();
  std::size_t p = kPrefix.size();
  for (std::size_t k = 0;; ++k) {
    if (p >= n) return ScanRead::kLeftOver;
    if (s[p] == '}') break;
    if (s[p] != ',' || ++p >= n || s[p] != '"') return ScanRead::kLeftOver;
    // The key the last line had here, if this is it: `"key":` compared, no scan and no lookup.
    Field f;
    KeyOrder::Key* expected = k < std::size(order.keys) ? &order.keys[k] : nullptr;
    if (expected != nullptr && expected->length != 0 && n - p > expected->length + 2u &&
        same_bytes(s + p + 1, expected->text, expected->length) && s[p + 1 + expected->length] == '"' &&
        s[p + 2 + expected->length] == ':') {
      f = expected->field;
      p += expected->length + 3;
    } else {
      const std::size_t key_end = plain_string_end(line, p + 1);
      if (key_end == std::string_view::npos || key_end + 1 >= n || s[key_end + 1] != ':') return ScanRead::kLeftOver;
      const std::string_view key(s + p + 1, key_end - p - 1);
      f = field_of(key);
      if (expected != nullptr) {
        // Learnt for the next line; a key too short or too long to compare that way is not.
        const bool fits = key.size() >= 2 && key.size() <= kMaxKeyLength;
        expected->length = fits ? static_cast<std::uint8_t>(key.size()) : 0;
        if (fits) std::memcpy(expected->text, key.data(), key.size());
        expected->field = f;
      }
      p = key_end + 2;
    }
    Token t;
    if (!value(line, p, t)) return ScanRead::kLeftOver;
    if (f != Field::kOther) {
      bool& once = seen[static_cast<std::size_t>(f)];
      if (once) f = Field::kOther;  // the first of a key given twice is the one read
      once = true;
    }
    if (t.kind == Token::kObject) {
      // server_timings (llama.cpp's on every line) as the DOM walk keeps it: the object parsed by
      // simdjson's DOM on its own and minified; an object anywhere else is the DOM walk's.
      if (f != Field::kServerTimings || !minified_object(t.text, state, dom, scratch)) return ScanRead::kLeftOver;
      r.server_timings = scratch;
      continue;
    }
    read_field(f, TokenValue{t}, r, got);
  }
  // Nothing after the object; a line without its required fields is the DOM walk's to name.
  if (p + 1 != n || !got.all()) return ScanRead::kLeftOver;
  return ScanRead::kRead;
}

}  // namespace mpo::ledger::detail
