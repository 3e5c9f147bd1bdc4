// The implementation of openai/chunk_scan.hpp: the usual chat/completions chunk read in one strict
// pass, without a DOM. Every step either understands what it reads or gives up (false), and a
// give-up anywhere makes the whole answer nullopt, so the full parse decides what the scan is not
// sure of. The JSON rules are RFC 8259's.
#include "openai/chunk_scan.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/json.hpp"
#include "core/text.hpp"

namespace mpo::openai {
namespace {

constexpr int kMaxDepth = 64;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// At a backslash at s[i]: the length of one escape, 0 when it is not one the scan accepts. \u of a
// surrogate (whose pairing rules differ between parsers) or of NUL is left to the full parse.
std::size_t escape_length(std::string_view s, std::size_t i) {
  if (i + 1 >= s.size()) return 0;
  const char e = s[i + 1];
  if (e == 'u') {
    if (i + 6 > s.size()) return 0;
    unsigned code = 0;
    for (std::size_t k = 2; k < 6; ++k) {
      const int h = hex_digit_value(s[i + k]);
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
  Scanner(std::string_view text, std::vector<ValueSpot>* values) : s_(text), values_(values) {}

  // The role of the value just passed (the last one added to `values`).
  void tag(ValueSpot::Role role, int choice = 0) {
    if (values_ != nullptr && !values_->empty()) {
      values_->back().role = role;
      values_->back().choice = choice;
    }
  }
  std::size_t values_seen() const { return values_ == nullptr ? 0 : values_->size(); }
  // From `at` on: a number token as the scan takes it (no space before it), its end in pos().
  bool number_from(std::size_t at) {
    i_ = at;
    return number_token();
  }
  // Values [first, last) are read by nothing (a message beside a delta, which the reading skips).
  void untag_range(std::size_t first, std::size_t last) {
    if (values_ == nullptr) return;
    for (std::size_t i = first; i < last; ++i) (*values_)[i].role = ValueSpot::Role::kOther;
  }

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
    if (!key_string(raw, escaped)) return false;
    record(raw.data() - s_.data() - 1, raw.size() + 2, true);
    return true;
  }

  // A string whose value is needed: one with an escape is left to the full parse.
  bool plain_string(std::string_view& value) {
    bool escaped = false;
    return string(value, escaped) && !escaped;
  }

  // A key: a string that is not a value.
  bool key_string(std::string_view& raw, bool& escaped) {
    if (!eat('"')) return false;
    const std::size_t start = i_;
    const std::size_t end = string_body_end(s_, start, escaped);
    if (end == std::string_view::npos) return false;
    raw = s_.substr(start, end - start);
    i_ = end + 1;
    return true;
  }
  bool plain_key(std::string_view& key) {
    bool escaped = false;
    return key_string(key, escaped) && !escaped;
  }

  // A number whose value is a count: digits only (what the full parse reads as a non-negative
  // integer), at most 15 of them; its value in `n`.
  bool count(std::int64_t& n) {
    skip_space();
    const std::size_t start = i_;
    if (!number()) return false;
    n = 0;
    for (std::size_t k = start; k < i_; ++k) {
      if (!is_digit(s_[k])) return false;
      n = n * 10 + (s_[k] - '0');
    }
    return true;
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
      if (!plain_key(key) || !eat(':') || !member(key)) return false;
    } while (eat(','));
    return eat('}');
  }

  bool skip_object(int depth) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      std::string_view key;
      bool escaped = false;
      if (!key_string(key, escaped) || !eat(':') || !skip_value(depth + 1)) return false;
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
    const std::size_t start = i_;
    if (!number_token()) return false;
    record(start, i_ - start, false);
    return true;
  }

  bool number_token() {
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

  void record(std::size_t at, std::size_t length, bool is_string) {
    if (values_ != nullptr) values_->push_back(ValueSpot{at, length, is_string, ValueSpot::Role::kOther, 0});
  }

  std::string_view s_;
  std::size_t i_ = 0;
  std::vector<ValueSpot>* values_ = nullptr;
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
bool non_empty_string(Scanner& sc, bool& out, int depth, ValueSpot::Role role, int choice,
                      ContentSpot* spot = nullptr) {
  if (!sc.peek('"')) return sc.skip_value(depth);
  const std::size_t open = sc.pos();
  std::string_view raw;
  bool escaped = false;
  if (!sc.string(raw, escaped)) return false;
  sc.tag(role, choice);
  out = !raw.empty();
  if (spot != nullptr) *spot = ContentSpot{open, sc.pos() - 1};
  return true;
}

// A delta or message object's members that decide the kind.
bool read_body(Scanner& sc, detail::ChoiceFacts& f, int depth, int choice, ContentSpot* spot) {
  using Role = ValueSpot::Role;
  bool seen_content = false, seen_reasoning_content = false, seen_reasoning = false, seen_calls = false,
       seen_refusal = false, seen_role = false;
  bool reasoning_content = false, reasoning = false;
  const int inner = depth + 1;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "content") {
      return first_time(seen_content) && non_empty_string(sc, f.content, inner, Role::kContent, choice, spot);
    }
    if (key == "reasoning_content") {
      return first_time(seen_reasoning_content) &&
             non_empty_string(sc, reasoning_content, inner, Role::kReasoning, choice);
    }
    if (key == "reasoning") {
      return first_time(seen_reasoning) && non_empty_string(sc, reasoning, inner, Role::kReasoning, choice);
    }
    if (key == "refusal") {
      return first_time(seen_refusal) && non_empty_string(sc, f.refusal, inner, Role::kRefusal, choice);
    }
    if (key == "role") return first_time(seen_role) && non_empty_string(sc, f.role, inner, Role::kRole, choice);
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
bool read_choice(Scanner& sc, detail::ChoiceFacts& f, std::string_view& finish_reason, int& index, int depth,
                 int choice, ContentSpot& spot) {
  bool seen_text = false, seen_delta = false, seen_message = false, seen_finish = false, seen_index = false;
  detail::ChoiceFacts delta, message;
  ContentSpot delta_spot;
  std::size_t message_from = 0, message_to = 0;  // the message's values
  const int inner = depth + 1;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "text")
      return first_time(seen_text) && non_empty_string(sc, f.text, inner, ValueSpot::Role::kText, choice);
    if (key == "delta" || key == "message") {
      const bool is_delta = key == "delta";
      detail::ChoiceFacts& body = is_delta ? delta : message;
      body.body = true;
      if (!first_time(is_delta ? seen_delta : seen_message)) return false;
      if (!is_delta) message_from = sc.values_seen();
      const bool ok =
          sc.peek('{') ? read_body(sc, body, inner, choice, is_delta ? &delta_spot : nullptr) : sc.skip_value(inner);
      if (!is_delta) message_to = sc.values_seen();
      return ok;
    }
    if (key == "index") {
      // A plain integer, or another value the full parse reads as 0; a number that is no plain
      // integer (-1, 1.5) is left to it.
      if (!first_time(seen_index)) return false;
      std::int64_t n = 0;
      if (sc.peek('"') || sc.peek('n') || sc.peek('t') || sc.peek('f') || sc.peek('[') || sc.peek('{'))
        return sc.skip_value(inner);
      if (!sc.count(n)) return false;
      sc.tag(ValueSpot::Role::kChoiceIndex, choice);
      index = choice_index_of(n);
      return true;
    }
    if (key == "finish_reason") {
      if (!first_time(seen_finish)) return false;
      if (!sc.peek('"')) return sc.skip_value(inner);
      if (!sc.plain_string(finish_reason)) return false;
      sc.tag(ValueSpot::Role::kFinishReason, choice);
      return true;
    }
    return sc.skip_value(inner);
  });
  if (!read) return false;
  // The full parse reads the delta when there is one: the message's values then decide nothing.
  if (seen_delta && seen_message) sc.untag_range(message_from, message_to);
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
    int index = 0;
    ContentSpot spot;
    if (!read_choice(sc, f, finish_reason, index, 3, n, spot)) return false;
    out.choice_facts.push_back(f);
    out.content = spot;
    const ChunkKind k = detail::choice_kind(f);
    if (detail::outranks(k, best)) best = k;
    if (n == 0) {
      info.finish_reason = std::string(finish_reason);
      info.first_choice_index = index;
    }
    ++n;
  } while (sc.eat(','));
  info.choices = n;
  info.kind = best;
  return sc.eat(']');
}

}  // namespace

// A usage object's counts, as the full parse reads them (read_usage_object): the three counts and
// the two details' counts, each a plain integer here (anything else is left to the full parse).
bool read_usage(Scanner& sc, Usage& u) {
  using Role = ValueSpot::Role;
  bool seen_prompt = false, seen_completion = false, seen_total = false, seen_prompt_details = false,
       seen_completion_details = false;
  const auto a_count = [&sc](bool& seen, std::optional<std::int64_t>& into, Role role) {
    std::int64_t n = 0;
    if (!first_time(seen) || !sc.count(n)) return false;
    sc.tag(role);
    into = n;
    return true;
  };
  // A details object: its one count read, the rest passed over; not an object: no count.
  const auto details = [&sc, &a_count](bool& seen, std::string_view name, std::optional<std::int64_t>& into,
                                       Role role) {
    if (!first_time(seen)) return false;
    if (!sc.peek('{')) return sc.skip_value(4);
    bool seen_count = false;
    return sc.object(
        [&](std::string_view key) { return key == name ? a_count(seen_count, into, role) : sc.skip_value(5); });
  };
  return sc.object([&](std::string_view key) {
    if (key == "prompt_tokens") return a_count(seen_prompt, u.prompt_tokens, Role::kPromptTokens);
    if (key == "completion_tokens") return a_count(seen_completion, u.completion_tokens, Role::kCompletionTokens);
    if (key == "total_tokens") return a_count(seen_total, u.total_tokens, Role::kTotalTokens);
    if (key == "prompt_tokens_details") {
      return details(seen_prompt_details, "cached_tokens", u.cached_prompt_tokens, Role::kCachedTokens);
    }
    if (key == "completion_tokens_details") {
      return details(seen_completion_details, "reasoning_tokens", u.reasoning_tokens, Role::kReasoningTokens);
    }
    return sc.skip_value(3);
  });
}

std::optional<ChunkScan> scan_chat_chunk_spots(std::string_view text, std::vector<ValueSpot>* values) {
  Scanner sc(text, values);
  ChunkScan out;
  PayloadInfo& info = out.info;
  bool seen_object = false, seen_model = false, seen_id = false, seen_choices = false, seen_usage = false,
       seen_error = false;
  std::string_view object, model, id;
  const bool read = sc.object([&](std::string_view key) {
    if (key == "object" || key == "model" || key == "id") {
      const bool is_object = key == "object", is_model = key == "model";
      std::string_view& value = is_object ? object : is_model ? model : id;
      if (!first_time(is_object ? seen_object : is_model ? seen_model : seen_id)) {
        return false;
      }
      if (!sc.peek('"')) return sc.skip_value(2);
      if (!sc.plain_string(value)) return false;
      // The object decides which reader reads the payload: a template keeps it as it is.
      sc.tag(is_object ? ValueSpot::Role::kFixed : is_model ? ValueSpot::Role::kModel : ValueSpot::Role::kId);
      return true;
    }
    if (key == "choices") return first_time(seen_choices) && (sc.peek('[') ? read_choices(sc, out) : sc.skip_value(2));
    if (key == "usage") {
      if (!first_time(seen_usage)) return false;
      if (!sc.peek('{')) return sc.skip_value(2);  // null, or not an object: no usage
      info.usage.emplace();
      return read_usage(sc, *info.usage);
    }
    if (key == "error") {
      // null says nothing; an error is read by the full parse.
      return first_time(seen_error) && sc.peek('n') && sc.skip_value(2);
    }
    // `type`: another API's event; `timings`/`metrics`: llama.cpp's or vLLM's, the full parse's.
    if (key == "type" || key == "timings" || key == "metrics") return false;
    return sc.skip_value(2);
  });
  if (!read) return std::nullopt;
  if (!sc.at_end() || object == "response" || object == "error") return std::nullopt;
  info.model = std::string(model);
  info.id = std::string(id);
  if (info.choices == 0) {  // no choices (or none that is an array): what usage says, as the full parse
    info.kind = info.usage ? ChunkKind::kUsageOnly : ChunkKind::kEmpty;
    info.final_usage = info.usage.has_value();
  }
  if (info.choices != 1) out.content = ContentSpot{};  // a template needs the one choice's content
  return out;
}

std::optional<PayloadInfo> scan_chat_chunk(std::string_view text) {
  auto scanned = scan_chat_chunk_spots(text);
  if (!scanned) return std::nullopt;
  return std::move(scanned->info);
}

bool ChunkShape::learn(std::string_view text) {
  std::vector<ValueSpot> values;
  auto scanned = scan_chat_chunk_spots(text, &values);
  if (!scanned) return false;
  text_.assign(text.data(), text.size());
  holes_.clear();
  base_filled_.clear();
  content_hole_ = kNoHole;
  for (const auto& v : values) {
    if (v.role == ValueSpot::Role::kFixed) continue;
    if (scanned->content.found() && v.at == scanned->content.open) content_hole_ = holes_.size();
    holes_.push_back(v);
    base_filled_.push_back(v.string && v.length > 2 ? 1 : 0);
  }
  filled_ = base_filled_;
  content_ = {};
  facts_ = std::move(scanned->choice_facts);
  scratch_ = facts_;
  scratch_is_base_ = true;
  base_ = std::move(scanned->info);
  info_ = base_;
  id_is_base_ = true;
  model_changed_ = finish_changed_ = usage_changed_ = false;
  return true;
}

bool ChunkTemplate::learn(std::string_view text) {
  auto scanned = scan_chat_chunk_spots(text);
  if (!scanned || !scanned->content.found()) return false;
  text_.assign(text.data(), text.size());
  open_ = scanned->content.open;
  suffix_ = text.size() - scanned->content.close;
  facts_ = scanned->choice_facts.front();  // the one choice (a content spot is found only then)
  info_ = std::move(scanned->info);
  return true;
}

bool ChunkTemplate::learn(std::string_view text, const ChunkShape& read_by) {
  if (!read_by.content_.found()) return false;
  text_.assign(text.data(), text.size());
  open_ = read_by.content_.open;
  suffix_ = text.size() - read_by.content_.close;
  facts_ = read_by.scratch_.front();  // the one choice (a content spot is found only then)
  info_ = read_by.info_;
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

namespace {

// How many bytes `a` and `b` share from their starts.
std::size_t same_bytes(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
#if defined(__SSE2__)
  const auto differ_at = [&](std::size_t at) {  // a mask of the bytes at..at+15 that differ
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.data() + at));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.data() + at));
    return ~static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(x, y))) & 0xffffu;
  };
  for (; i + 16 <= n; i += 16) {
    if (const unsigned d = differ_at(i)) return i + static_cast<std::size_t>(std::countr_zero(d));
  }
  // The last few bytes as the last sixteen, read again (those before i are known equal).
  if (i < n && n >= 16) {
    const unsigned d = differ_at(n - 16);
    return d == 0 ? n : n - 16 + static_cast<std::size_t>(std::countr_zero(d));
  }
#endif
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

void ChunkShape::restore(IdWanted id) {
  if (id == IdWanted::kNo) {
    info_.id.clear();
    id_is_base_ = base_.id.empty();
  } else if (!id_is_base_) {
    info_.id.assign(base_.id);
    id_is_base_ = true;
  }
  if (model_changed_) info_.model.assign(base_.model);
  if (finish_changed_) info_.finish_reason.assign(base_.finish_reason);
  if (usage_changed_) info_.usage = base_.usage;
  if (index_changed_) info_.first_choice_index = base_.first_choice_index;
  model_changed_ = finish_changed_ = usage_changed_ = index_changed_ = false;
}

bool ChunkShape::take(std::size_t hole, std::string_view value, IdWanted id) {
  using Role = ValueSpot::Role;
  const ValueSpot& h = holes_[hole];
  if (h.role >= Role::kPromptTokens) {  // digits only: what the full parse reads as a non-negative integer
    std::int64_t n = 0;
    for (const char c : value) {
      if (!is_digit(c)) return false;
      n = n * 10 + (c - '0');
    }
    Usage& u = *info_.usage;
    (h.role == Role::kPromptTokens       ? u.prompt_tokens
     : h.role == Role::kCompletionTokens ? u.completion_tokens
     : h.role == Role::kTotalTokens      ? u.total_tokens
     : h.role == Role::kCachedTokens     ? u.cached_prompt_tokens
                                         : u.reasoning_tokens) = n;
    usage_changed_ = true;
    return true;
  }
  switch (h.role) {
    case Role::kId:
      if (id == IdWanted::kYes) {
        info_.id.assign(value);
        id_is_base_ = false;
      }
      break;
    case Role::kModel:
      info_.model.assign(value);
      model_changed_ = true;
      break;
    case Role::kFinishReason:
      if (h.choice == 0) {
        info_.finish_reason.assign(value);
        finish_changed_ = true;
      }
      break;
    case Role::kChoiceIndex: {
      std::int64_t n = 0;
      for (const char c : value) {  // digits only, as the scan took it (at most 15 of them)
        if (!is_digit(c) || n > kMaxChoiceIndex) return false;
        n = n * 10 + (c - '0');
      }
      if (h.choice == 0) {
        info_.first_choice_index = choice_index_of(n);
        index_changed_ = true;
      }
      break;
    }
    default:
      if (is_fact(h.role)) filled_[hole] = value.empty() ? 0 : 1;
      break;
  }
  return true;
}

const PayloadInfo* ChunkShape::read(std::string_view text, IdWanted id) {
  if (text_.empty()) return nullptr;
  const std::string_view t = text_;
  restore(id);
  content_ = {};
  ContentSpot content;
  bool facts_differ = false;  // a choice string where the bytes differ
  // Runs of bytes equal to the shape's are found sixteen at a time; every value inside such a run
  // is the shape's, and only a value where the bytes differ is scanned (a stream's chunks differ
  // from one another in the content, and from another response's in the id and `created`).
  std::size_t tp = 0, np = 0;  // where the shape and the text are
  std::size_t next = 0;        // the next value of the shape's
  for (;;) {
    const std::size_t equal_to = tp + same_bytes(t.substr(tp), text.substr(np));  // in the shape
    // Values wholly inside the run are the shape's; a number must end inside it too (the byte after
    // it the shape's: it ends where the shape's did).
    for (; next < holes_.size(); ++next) {
      const ValueSpot& h = holes_[next];
      const std::size_t end = h.at + h.length;
      if (end > equal_to || (end == equal_to && !h.string)) break;
      if (next == content_hole_) content = ContentSpot{np + (h.at - tp), np + (end - 1 - tp)};
    }
    if (next == holes_.size()) {
      // The rest is the shape's, to its end.
      if (equal_to != t.size() || text.size() - np != t.size() - tp) return nullptr;
      break;
    }
    const std::size_t hole = next++;
    const ValueSpot& h = holes_[hole];
    if (equal_to < h.at) return nullptr;  // the bytes differ outside a value
    np += h.at - tp;
    tp = h.at + h.length;
    // A value of the same kind where the shape's was.
    std::string_view value;
    if (h.string) {
      if (np >= text.size() || text[np] != '"') return nullptr;
      bool escaped = false;
      const std::size_t close = string_body_end(text, np + 1, escaped);
      if (close == std::string_view::npos) return nullptr;
      value = text.substr(np + 1, close - np - 1);
      const bool copied = h.role == ValueSpot::Role::kId || h.role == ValueSpot::Role::kModel ||
                          h.role == ValueSpot::Role::kFinishReason;
      if (escaped && copied) return nullptr;
      if (hole == content_hole_) content = ContentSpot{np, close};
      np = close + 1;
    } else {
      Scanner sc(text, nullptr);
      if (!sc.number_from(np)) return nullptr;
      value = text.substr(np, sc.pos() - np);
      np = sc.pos();
    }
    if (h.role == ValueSpot::Role::kOther) continue;
    if (is_fact(h.role) && !facts_differ) {
      facts_differ = true;
      filled_ = base_filled_;
    }
    if (!take(hole, value, id)) return nullptr;
  }
  if (facts_differ) {
    // Each choice's facts again, from its strings' emptiness.
    for (std::size_t c = 0; c < facts_.size(); ++c) {
      auto& f = scratch_[c];
      f = facts_[c];
      f.text = f.content = f.reasoning = f.refusal = f.role = false;
    }
    for (std::size_t i = 0; i < holes_.size(); ++i) {
      const ValueSpot& h = holes_[i];
      if (!is_fact(h.role) || filled_[i] == 0) continue;
      auto& f = scratch_[static_cast<std::size_t>(h.choice)];
      switch (h.role) {
        case ValueSpot::Role::kText: f.text = true; break;
        case ValueSpot::Role::kContent: f.content = true; break;
        case ValueSpot::Role::kReasoning: f.reasoning = true; break;
        case ValueSpot::Role::kRefusal: f.refusal = true; break;
        default: f.role = true; break;
      }
    }
    ChunkKind best = ChunkKind::kEmpty;
    for (const auto& f : scratch_) {
      const ChunkKind k = detail::choice_kind(f);
      if (detail::outranks(k, best)) best = k;
    }
    info_.kind = best;  // a differing choice string means there are choices
    scratch_is_base_ = false;
  } else {
    if (!scratch_is_base_) {
      scratch_ = facts_;
      scratch_is_base_ = true;
    }
    info_.kind = base_.kind;
  }
  content_ = content;
  return &info_;
}

const PayloadInfo* ChunkShapes::read(std::string_view text, IdWanted id, std::size_t& last) {
  if (used_ == 0) return nullptr;
  const std::size_t expected = last == kNone ? first_ : next_[last];
  const auto take = [&](std::size_t i) {
    if (last == kNone) {
      first_ = i;
    } else {
      next_[last] = i;
    }
    last = i;
  };
  if (expected < used_) {
    if (const PayloadInfo* p = shapes_[expected].read(text, id)) {
      last = expected;
      return p;
    }
  }
  for (std::size_t i = 0; i < used_; ++i) {
    if (i == expected) continue;
    if (const PayloadInfo* p = shapes_[i].read(text, id)) {
      take(i);
      return p;
    }
  }
  return nullptr;
}

bool ChunkShapes::learn(std::string_view text, std::size_t& last) {
  const std::size_t slot = replace_;
  if (!shapes_[slot].learn(text)) return false;
  replace_ = (replace_ + 1) % kShapes;
  used_ = std::min(used_ + 1, kShapes);
  if (last == kNone) {
    first_ = slot;
  } else {
    next_[last] = slot;
  }
  next_[slot] = slot;  // a content chunk is followed by another, most often
  last = slot;
  return true;
}

}  // namespace mpo::openai
