// Reads the usual streamed chunk of the chat and completions APIs without building a DOM (issue
// 43: simdjson's DOM parse of every event was a fifth of the proxy's instructions on streams). One
// strict pass over the text finds what the ledger needs: each choice's kind (content, reasoning,
// tool calls, refusal, role only), the first choice's finish_reason, the model and the id. That
// pass costs about what simdjson's parse does; what pays is ChunkTemplate below, which reads the
// chunks after it by comparing bytes.
//
// It answers only when it is sure: the text is one valid JSON object (RFC 8259: the grammar,
// UTF-8, escapes) of the shape it knows. Anything else gives nullopt and the full parse decides:
// a `type`, `error`, `usage`, `timings` or `metrics` member, an `object` of "response" or "error",
// a choice that is not an object, a key the scan reads given twice, a key or a read string with an
// escape, a number with an exponent or over 15 digits, a \u escape of a surrogate or of NUL, nesting
// deeper than 64. The fuzz target fuzz_chunk_scan checks that every answer equals the full parse's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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
  ContentSpot content;        // found only with exactly one choice whose delta has a content string
  detail::ChoiceFacts facts;  // that choice's
};
std::optional<ChunkScan> scan_chat_chunk_spots(std::string_view text);

// One chunk of a stream, read once and kept, that the next ones are read by. A stream's chunks
// are, event after event, the same bytes but for the text of one string: the choice's content (the
// id, model, created and the rest repeat). A chunk that is the template's bytes up to that
// string's opening quote and from its closing quote on, with a valid string between, is the
// template's reading but for whether the content is empty: the same JSON with one string token
// replaced by another. That costs two comparisons and a scan of the new text, against a full parse
// of the chunk (issue 43: a fifth of the proxy's instructions on streams).
class ChunkTemplate {
 public:
  // Keeps `text` as the template when the scan reads it and finds the content string; false (and
  // the template as it was) otherwise.
  bool learn(std::string_view text);
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

}  // namespace mpo::openai
