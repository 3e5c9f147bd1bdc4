// The implementation of openai/chunk_scan.hpp: the usual chat/completions chunk read in one strict
// pass, without a DOM. Every step either understands what it reads or gives up (false), and a
// give-up anywhere makes the whole answer nullopt, so the full parse decides what the scan is not
// sure of. The JSON rules are RFC 8259's.
#include "openai/chunk_scan.hpp"

#include "core/json.hpp"

namespace mpo::openai {
namespace {

constexpr int kMaxDepth = 64;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// At a backslash at s[i]: the length of one escape, 0 when it is not one the scan accepts. \u of a
// surrogate (whose pairing rules differ between parsers) or of NUL is left to the full parse.
std::size_t escape_length(std::string_view s, std::size_t i) {
  if (i + 1 >= s.size()) return 0;
  const char e = s[i + 1];
  if (e == 'u') {
    if (i + 6 > s.size()) return 0;
    unsigned code = 0;
    for (std::size_t k = 2; k < 6; ++k) {
      const int h = hex_value(s[i + k]);
      if (h < 0) return 0;
      code = code * 16 + static_cast<unsigned>(h);
    }
    if (code == 0 || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return 6;
  }
  return std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos ? 0 : 2;
}

// From s[i], just after a string's opening quote: the offset of its closing quote, npos when the
// string breaks a rule first (a control character, an escape the scan does not accept, invalid
// UTF-8) or has no end. `escaped`: whether it holds an escape.
std::size_t string_body_end(std::string_view s, std::size_t i, bool& escaped) {
  escaped = false;
  for (;;) {
    i = json_plain_run_end(s, i);
    if (i >= s.size()) return std::string_view::npos;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"') return i;
    if (c == '\\') {
      const std::size_t n = escape_length(s, i);
      if (n == 0) return std::string_view::npos;
      escaped = true;
      i += n;
      continue;
    }
    if (c < 0x20) return std::string_view::npos;  // a control character must be escaped
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return std::string_view::npos;
    i += n;
  }
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  bool peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  bool at_end() {
    skip_space();
    return i_ == s_.size();
  }
  std::size_t pos() const { return i_; }

  // A string: `raw` is its text between the quotes, `escaped` whether that holds an escape (raw
  // then differs from the value; it is empty exactly when the value is).
  bool string(std::string_view& raw, bool& escaped) {
    if (!eat('"')) return false;
    const std::size_t start = i_;
    const std::size_t end = string_body_end(s_, start, escaped);
    if (end == std::string_view::npos) return false;
    raw = s_.substr(start, end - start);
    i_ = end + 1;
    return true;
  }

  // A string whose value is needed: one with an escape is left to the full parse.
  bool plain_string(std::string_view& value) {
    bool escaped = false;
    return string(value, escaped) && !escaped;
  }

  // Any value, checked and passed over. `depth` is the value's nesting level.
  bool skip_value(int depth) {
    if (depth > kMaxDepth) return false;
    skip_space();
    if (i_ >= s_.size()) return false;
    switch (s_[i_]) {
      case '"': {
        std::string_view raw;
        bool escaped = false;
        return string(raw, escaped);
      }
      case '{': return skip_object(depth);
      case '[': {
        std::size_t n = 0;
        return skip_array(depth, n);
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  // An object whose keys the caller reads: `member(key)` reads each key's value (false: give up).
  // A key with an escape is left to the full parse.
  template <class Member>
  bool object(Member&& member) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      std::string_view key;
      if (!plain_string(key) || !eat(':') || !member(key)) return false;
    } while (eat(','));
    return eat('}');
  }

  bool skip_object(int depth) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      std::string_view key;
      bool escaped = false;
      if (!string(key, escaped) || !eat(':') || !skip_value(depth + 1)) return false;
    } while (eat(','));
    return eat('}');
  }

  // An array whose elements are passed over; `n` counts them.
  bool skip_array(int depth, std::size_t& n) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    do {
      if (!skip_value(depth + 1)) return false;
      ++n;
    } while (eat(','));
    return eat(']');
  }

 private:
  void skip_space() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }

  // After a number or a literal: the end of the value, which a delimiter must follow.
  bool delimited() const {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    return is_space(c) || c == ',' || c == ']' || c == '}';
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return delimited();
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)? with at most 15 digits before and after the point: every such
  // number is a double any parser reads alike. Exponents and longer numbers are left to the full parse.
  bool number() {
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !is_digit(s_[i_])) return false;
    if (s_[i_] == '0') {
      ++i_;
    } else if (!digits()) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!digits()) return false;
    }
    return delimited();
  }

  // One to fifteen digits.
  bool digits() {
    const std::size_t start = i_;
    while (i_ < s_.size() && is_digit(s_[i_])) ++i_;
    return i_ > start && i_ - start <= 15;
  }

  std::string_view s_;
  std::size_t i_ = 0;
};

// Marks a key as seen; false when it was already (a key given twice is left to the full parse,
// which reads the first).
bool first_time(bool& seen) {
  if (seen) return false;
  seen = true;
  return true;
}

// A string member's emptiness: a non-string counts as empty, as in the full parse. `spot`, when
// given, gets the string's quotes' offsets.
bool non_empty_string(Scanner& sc, bool& out, int depth, ContentSpot* spot = nullptr) {
  if (!sc.peek('"')) return sc.skip_value(depth);
  const std::size_t open = sc.pos();
  std::string_view raw;
  bool escaped = false;
  if (!sc.string(raw, escaped)) return false;
  out = !raw.empty();
  if (spot != nullptr) *spot = ContentSpot{open, sc.pos() - 1};
  return true;
}

// A delta or message object's members that decide the kind.
bool read_body(Scanner& sc, detail::ChoiceFacts& f, int depth, ContentSpot* spot) {
  bool seen_content = false, seen_reasoning_content = false, seen_reasoning = false, seen_calls = false,
       seen_refusal = false, seen_role = false;
  bool reasoning_content = false, reasoning = false;
  const int inner = depth + 1;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "content") return first_time(seen_content) && non_empty_string(sc, f.content, inner, spot);
    if (key == "reasoning_content") {
      return first_time(seen_reasoning_content) && non_empty_string(sc, reasoning_content, inner);
    }
    if (key == "reasoning") return first_time(seen_reasoning) && non_empty_string(sc, reasoning, inner);
    if (key == "refusal") return first_time(seen_refusal) && non_empty_string(sc, f.refusal, inner);
    if (key == "role") return first_time(seen_role) && non_empty_string(sc, f.role, inner);
    if (key == "tool_calls") {
      std::size_t calls = 0;
      const bool ok = first_time(seen_calls) && (sc.peek('[') ? sc.skip_array(inner, calls) : sc.skip_value(inner));
      f.tool_calls = calls > 0;
      return ok;
    }
    return sc.skip_value(inner);
  });
  if (!read) return false;
  f.body_is_object = true;
  f.reasoning = reasoning_content || reasoning;
  return true;
}

// One choice; its finish_reason into `finish_reason` ("" when absent or not a string). A choice
// that is not an object is left to the full parse.
bool read_choice(Scanner& sc, detail::ChoiceFacts& f, std::string_view& finish_reason, int depth, ContentSpot& spot) {
  bool seen_text = false, seen_delta = false, seen_message = false, seen_finish = false;
  detail::ChoiceFacts delta, message;
  ContentSpot delta_spot;
  const int inner = depth + 1;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "text") return first_time(seen_text) && non_empty_string(sc, f.text, inner);
    if (key == "delta" || key == "message") {
      const bool is_delta = key == "delta";
      detail::ChoiceFacts& body = is_delta ? delta : message;
      body.body = true;
      return first_time(is_delta ? seen_delta : seen_message) &&
             (sc.peek('{') ? read_body(sc, body, inner, is_delta ? &delta_spot : nullptr) : sc.skip_value(inner));
    }
    if (key == "finish_reason") {
      return first_time(seen_finish) && (sc.peek('"') ? sc.plain_string(finish_reason) : sc.skip_value(inner));
    }
    return sc.skip_value(inner);
  });
  if (!read) return false;
  // The full parse reads the delta when there is one, else the message.
  const bool text = f.text;
  f = seen_delta ? delta : message;
  f.text = text;
  if (seen_delta) spot = delta_spot;
  return true;
}

bool read_choices(Scanner& sc, ChunkScan& out) {
  PayloadInfo& info = out.info;
  if (!sc.eat('[')) return false;
  if (sc.eat(']')) return true;
  int n = 0;
  ChunkKind best = ChunkKind::kEmpty;
  do {
    detail::ChoiceFacts f;
    std::string_view finish_reason;
    ContentSpot spot;
    if (!read_choice(sc, f, finish_reason, 3, spot)) return false;
    out.facts = f;
    out.content = spot;
    const ChunkKind k = detail::choice_kind(f);
    if (detail::outranks(k, best)) best = k;
    if (n == 0) info.finish_reason = std::string(finish_reason);
    ++n;
  } while (sc.eat(','));
  info.choices = n;
  info.kind = best;
  return sc.eat(']');
}

}  // namespace

std::optional<ChunkScan> scan_chat_chunk_spots(std::string_view text) {
  Scanner sc(text);
  ChunkScan out;
  PayloadInfo& info = out.info;
  bool seen_object = false, seen_model = false, seen_id = false, seen_choices = false, seen_usage = false,
       seen_error = false;
  std::string_view object, model, id;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "object" || key == "model" || key == "id") {
      const bool is_object = key == "object", is_model = key == "model";
      std::string_view& value = is_object ? object : is_model ? model : id;
      return first_time(is_object  ? seen_object
                        : is_model ? seen_model
                                   : seen_id) &&
             (sc.peek('"') ? sc.plain_string(value) : sc.skip_value(2));
    }
    if (key == "choices") return first_time(seen_choices) && (sc.peek('[') ? read_choices(sc, out) : sc.skip_value(2));
    if (key == "usage" || key == "error") {
      // null says nothing; usage or an error is read by the full parse.
      return first_time(key == "usage" ? seen_usage : seen_error) && sc.peek('n') && sc.skip_value(2);
    }
    // `type`: another API's event; `timings`/`metrics`: llama.cpp's or vLLM's, the full parse's.
    if (key == "type" || key == "timings" || key == "metrics") return false;
    return sc.skip_value(2);
  });
  if (!read) return std::nullopt;
  if (!sc.at_end() || object == "response" || object == "error") return std::nullopt;
  info.model = std::string(model);
  info.id = std::string(id);
  if (info.choices != 1) out.content = ContentSpot{};  // a template needs the one choice's content
  return out;
}

std::optional<PayloadInfo> scan_chat_chunk(std::string_view text) {
  auto scanned = scan_chat_chunk_spots(text);
  if (!scanned) return std::nullopt;
  return std::move(scanned->info);
}

bool ChunkTemplate::learn(std::string_view text) {
  auto scanned = scan_chat_chunk_spots(text);
  if (!scanned || !scanned->content.found()) return false;
  text_.assign(text.data(), text.size());
  open_ = scanned->content.open;
  suffix_ = text.size() - scanned->content.close;
  facts_ = scanned->facts;
  info_ = std::move(scanned->info);
  return true;
}

const PayloadInfo* ChunkTemplate::read(std::string_view text) {
  if (text_.empty() || text.size() < open_ + 1 + suffix_) return nullptr;
  const std::string_view t = text_;
  // The same bytes up to the content string's opening quote and from its closing quote on ...
  if (text.substr(0, open_ + 1) != t.substr(0, open_ + 1)) return nullptr;
  const std::size_t close = text.size() - suffix_;
  if (text.substr(close) != t.substr(t.size() - suffix_)) return nullptr;
  // ... and between them a string that ends at that quote.
  bool escaped = false;
  if (string_body_end(text, open_ + 1, escaped) != close) return nullptr;
  detail::ChoiceFacts f = facts_;
  f.content = close > open_ + 1;
  info_.kind = detail::choice_kind(f);
  return &info_;
}

}  // namespace mpo::openai
