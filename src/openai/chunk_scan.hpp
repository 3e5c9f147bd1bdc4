// Reads the usual streamed chunk of the chat and completions APIs without building a DOM (issue
// 43: simdjson's DOM parse of every event was a fifth of the proxy's instructions on streams). One
// strict pass over the text finds what the ledger needs: each choice's kind (content, reasoning,
// tool calls, refusal, role only), the first choice's finish_reason, the model, the id and usage.
// That pass costs about what simdjson's parse does; what pays is ChunkTemplate and ChunkShape
// below, which read the chunks after it by comparing bytes.
//
// It answers only when it is sure: the text is one valid JSON object (RFC 8259: the grammar,
// UTF-8, escapes) of the shape it knows. Anything else gives nullopt and the full parse decides:
// a `type`, `error`, `timings` or `metrics` member, a usage count or a choice's `index` that is a
// number but no plain integer (or a usage key given twice), an `object` of "response" or "error",
// a choice that is not an object, a key the scan reads given twice, a key or a read string with an
// escape, a number with an exponent or over 15 digits, a \u escape of a surrogate or of NUL, nesting
// deeper than 64. The fuzz target fuzz_chunk_scan checks that every answer equals the full parse's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "openai/chunk.hpp"

namespace mpo::openai {

std::optional<PayloadInfo> scan_chat_chunk(std::string_view text);

// The full parse's reading of a streamed payload (what classify_chunk falls back to).
PayloadInfo classify_chunk_fully(std::string_view data);

namespace detail {
// What decides a choice's kind, as either reader finds it.
struct ChoiceFacts {
  bool text = false;            // a non-empty `text` (completions API)
  bool body = false;            // a `delta` (stream) or, without one, a `message` (whole body)
  bool body_is_object = false;  // ... that is an object, holding:
  bool content = false, reasoning = false, tool_calls = false, refusal = false, role = false;
};
ChunkKind choice_kind(const ChoiceFacts& f);
// Of a payload's choices' kinds, the one it counts as (content first, then reasoning, ...).
bool outranks(ChunkKind a, ChunkKind b);
}  // namespace detail

// Where the only choice's `delta.content` string is in a chunk's text: its quotes' offsets.
struct ContentSpot {
  std::size_t open = std::string_view::npos, close = std::string_view::npos;
  bool found() const { return open != std::string_view::npos; }
};

// The scan's reading, with what a template needs (scan_chat_chunk is its `info`).
struct ChunkScan {
  PayloadInfo info;
  ContentSpot content;                            // found only with exactly one choice whose delta has a content string
  std::vector<detail::ChoiceFacts> choice_facts;  // every choice's, in order
};

// A string or number value of a scanned chunk (not a key): where its token is and what the reading
// takes from it (ChunkShape reads chunks by these).
struct ValueSpot {
  enum class Role : std::uint8_t {
    kOther,  // read by nothing
    kFixed,  // decides which reader reads the payload (`object`): a template keeps its bytes
    kId,
    kModel,
    kFinishReason,  // values the reading copies (no escape in them)
    kChoiceIndex,   // a choice's `index`, a plain integer
    kText,
    kContent,
    kReasoning,
    kRefusal,
    kRole,  // a choice's strings, read for their emptiness
    kPromptTokens,
    kCompletionTokens,
    kTotalTokens,
    kCachedTokens,
    kReasoningTokens,  // usage counts
  };
  std::size_t at = 0, length = 0;  // the token, a string's quotes included
  bool string = false;             // else a number
  Role role = Role::kOther;
  int choice = 0;  // the choice a choice's string belongs to
};
// With `values`, every value the scan passes is added to it, in order. A chunk with usage is
// answered too when its counts are plain integers (`usage` is read as the full parse reads it).
std::optional<ChunkScan> scan_chat_chunk_spots(std::string_view text, std::vector<ValueSpot>* values = nullptr);

// One chunk of a stream, read once and kept, that the next ones are read by. A stream's chunks
// are, event after event, the same bytes but for the text of one string: the choice's content (the
// id, model, created and the rest repeat). A chunk that is the template's bytes up to that
// string's opening quote and from its closing quote on, with a valid string between, is the
// template's reading but for whether the content is empty: the same JSON with one string token
// replaced by another. That costs two comparisons and a scan of the new text, against a full parse
// of the chunk (issue 43: a fifth of the proxy's instructions on streams). Within one stream it
// is the cheapest reading of its content chunks (ChunkShape below compares every value).
class ChunkShape;

class ChunkTemplate {
 public:
  // Keeps `text` as the template when the scan reads it and finds the content string; false (and
  // the template as it was) otherwise.
  bool learn(std::string_view text);
  // The same without a scan, for `text` that `read_by` has just read (its last read answered): the
  // shape knows where its values, the content string among them, lie in the text. The reading is
  // the shape's (without the id when that read was asked for none).
  bool learn(std::string_view text, const ChunkShape& read_by);
  // The reading of `text` when it is the template but for the content's text; nullptr otherwise
  // (the full parse's then). Valid until the next call.
  const PayloadInfo* read(std::string_view text);
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
  std::size_t open_ = 0;    // the content string's opening quote
  std::size_t suffix_ = 0;  // bytes from its closing quote to the end
  detail::ChoiceFacts facts_;
  PayloadInfo info_;
};

// One chunk, read once and kept, that later chunks are read by (issue 43). A stream's chunks are,
// event after event, the same bytes but for the text of a few values: the choice's content, the
// id and `created` (which also differ from one response to the next), a count. A chunk that is the
// shape's bytes outside those values, with a valid token of the same kind in place of each, is the
// same JSON with some values replaced: its reading is the shape's with what those values say (a
// string's emptiness, a copied id, model or finish_reason without escapes, a count that is a plain
// integer). That costs comparisons and a scan of the new values, against a full parse of the chunk.
class ChunkShape {
 public:
  // Keeps `text` as the shape when the scan reads it; false (and the shape as it was) otherwise.
  bool learn(std::string_view text);
  // The reading of `text` when it is the shape but for its values; nullptr otherwise (the full
  // parse's then). With IdWanted::kNo the id is left empty. Valid until the next call.
  const PayloadInfo* read(std::string_view text, IdWanted id = IdWanted::kYes);
  bool empty() const { return text_.empty(); }

 private:
  friend class ChunkTemplate;
  // What a value that differs from the shape's says (`hole` is its index); false when the reading
  // cannot take it (a count that is no plain integer).
  bool take(std::size_t hole, std::string_view value, IdWanted id);
  // The reading's fields a differing value changed, set back to the shape's.
  void restore(IdWanted id);
  static bool is_fact(ValueSpot::Role r) { return r >= ValueSpot::Role::kText && r <= ValueSpot::Role::kRole; }

  std::string text_;
  std::vector<ValueSpot> holes_;  // the values that may differ, in order
  // The shape's own reading, which a read starts from: a value in a run of the shape's bytes says
  // what it said in the shape, and only a value where the bytes differ changes the reading.
  PayloadInfo base_;
  std::vector<detail::ChoiceFacts> facts_;    // each choice's, as the shape's strings make them
  std::vector<detail::ChoiceFacts> scratch_;  // a read's (facts_ while no choice string differed)
  std::vector<std::uint8_t> base_filled_;     // per hole: a choice string the shape has non-empty
  std::vector<std::uint8_t> filled_;          // the same, for a read
  PayloadInfo info_;                          // the last read's
  bool id_is_base_ = true, model_changed_ = false, finish_changed_ = false, usage_changed_ = false,
       index_changed_ = false;
  bool scratch_is_base_ = true;
  std::size_t content_hole_ = kNoHole;  // the hole of the scan's content spot (ChunkScan::content)
  ContentSpot content_;                 // where the last read found that string in its text
  static constexpr std::size_t kNoHole = static_cast<std::size_t>(-1);
};

// The shapes one thread has learnt, for all the streams it reads. A stream's chunks come in an
// order its next responses repeat (a role chunk, content chunks, a finish chunk, a usage chunk):
// each stream keeps which shape read its last chunk (`last`), and the shape that last followed
// that one, in any stream, is tried first; when all are taken a new one replaces them in turn.
class ChunkShapes {
 public:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const PayloadInfo* read(std::string_view text, IdWanted id, std::size_t& last);
  // Learns `text` as a shape; `last` becomes it (the stream's chunk after it is read by what follows).
  bool learn(std::string_view text, std::size_t& last);
  // The shape a stream's `last` names (the one that read its last chunk).
  const ChunkShape& shape(std::size_t last) const { return shapes_[last]; }

 private:
  static constexpr std::size_t kShapes = 6;
  std::array<ChunkShape, kShapes> shapes_;
  std::array<std::size_t, kShapes> next_{};  // the shape that last followed each
  std::size_t first_ = 0;                    // the shape that last read a stream's first chunk
  std::size_t used_ = 0, replace_ = 0;
};

}  // namespace mpo::openai
