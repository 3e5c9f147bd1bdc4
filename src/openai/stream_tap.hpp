// Watches a response body as it is forwarded and keeps what timing and accounting need: when the
// first generated-content event arrived, the gaps between content events, the last usage seen,
// ids, finish reason, errors, and whether the stream was well formed. Pure: the caller passes the
// steady time of each read; nothing here delays forwarding.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "openai/chunk.hpp"
#include "openai/chunk_scan.hpp"
#include "openai/sse_framer.hpp"

namespace mpo::openai {

enum class TokenSource { kUsage, kContinuousUsage, kServerTimings, kEstimated, kNone };
std::string_view to_string(TokenSource s);

// What a ledger line's error_message says of a Responses or Messages stream that ended without its
// terminal event.
inline constexpr std::string_view kMissingTerminalEvent =
    "the stream ended without its terminal event (response.completed / message_stop)";

class StreamTap {
 public:
  // `sse`: parse as an event stream; otherwise the body is kept (up to kMaxBody) and parsed whole
  // at finish().
  explicit StreamTap(bool sse) : sse_(sse) {}
  static constexpr std::size_t kMaxBody = 16 * 1024 * 1024;

  void feed(std::string_view bytes, std::int64_t steady_us);
  // Call once at the end of the body; `complete` says whether the body ended properly.
  void finish(bool complete);

  bool sse() const { return sse_; }
  std::optional<std::int64_t> first_content_us() const { return first_content_us_; }
  // What the first generated event carried (content, reasoning, a tool call, a refusal); nullopt
  // before one. Engines hold a tool call's first tokens until they have parsed its name: where the
  // first event is a tool call, it came after part of the decode (docs/FORMATS.md `first_output`).
  std::optional<ChunkKind> first_output() const { return first_output_; }
  std::optional<std::int64_t> last_content_us() const { return last_content_us_; }
  int content_events() const { return content_events_; }
  const std::vector<double>& gaps_ms() const { return gaps_ms_; }
  // The response's id and the gaps, moved out for its ledger line once the response is over (an
  // allocation and a copy each, per request, issue 43); the tap has neither after.
  std::string take_id() { return std::exchange(id_, {}); }
  std::vector<double> take_gaps_ms() { return std::exchange(gaps_ms_, {}); }
  const std::optional<Usage>& usage() const { return usage_; }
  TokenSource token_source() const;
  // Completion tokens by the best available source (estimated: content events).
  std::optional<std::int64_t> completion_tokens() const;
  // The whole prompt (cached tokens included) and its cached part: from usage, else from
  // llama.cpp's timings (prompt_n + cache_n, and cache_n).
  std::optional<std::int64_t> prompt_tokens() const;
  std::optional<std::int64_t> cached_prompt_tokens() const;
  const std::string& model() const { return model_; }
  const std::string& id() const { return id_; }
  const std::string& finish_reason() const { return finish_reason_; }
  int choices() const { return choices_; }
  const std::string& error_type() const { return error_type_; }
  const std::string& error_message() const { return error_message_; }
  const std::string& server_timings() const { return server_timings_; }
  bool saw_done() const { return saw_done_; }
  // The stream's terminal event was seen: "[DONE]", or the last event of a Responses API or
  // Anthropic Messages stream. A client that leaves after it has the whole answer.
  bool saw_terminal() const { return saw_done_ || saw_terminal_event_; }
  // The stream spoke the Responses or Messages API, whose streams end with a terminal event: one
  // that ended without it was cut short (stream_truncated), whatever its framing said.
  bool requires_terminal_event() const { return typed_events_; }
  // An error event arrived inside the stream (chat's `{"error":..}`, an `error` event,
  // `response.failed` with an error).
  bool error_event() const { return error_event_; }
  // Events of a `type` no reader knows: ignored, and counted here.
  int unknown_events() const { return unknown_events_; }
  // Unparsable events, garbage lines, or a partial event at the end of a stream that said it ended.
  bool malformed() const { return malformed_; }
  bool partial_event() const { return partial_event_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  void on_payload(const PayloadInfo& p, std::int64_t steady_us, bool streamed);
  void merge_usage(const Usage& u);
  void add_choice_usage(const Usage& u);

  bool sse_;
  SseFramer framer_;
  // Chunks are read by comparing them with chunks read before: the stream's content chunks with
  // its second one (ChunkTemplate, the cheapest), the others with shapes learnt from earlier chunks
  // of this stream or of any other its thread read (ChunkShapes, one per thread). A chunk that fits
  // neither is parsed, and learnt a few times a stream at most.
  void learn_template(std::string_view data, const PayloadInfo& info, const ChunkShape* read_by);
  ChunkTemplate template_;
  int template_learns_left_ = 4;
  int learns_left_ = 4;
  std::size_t last_shape_ = ChunkShapes::kNone;  // the shape that read this stream's last chunk
  std::string body_;
  std::uint64_t bytes_ = 0;
  std::optional<std::int64_t> first_content_us_, last_content_us_;
  std::optional<ChunkKind> first_output_;
  // Each choice's last content, for its gaps (a request with `n` > 1 streams its choices' chunks
  // interleaved): choice 0's here, the others' (by index - 1, -1: none yet) only where there are others.
  std::optional<std::int64_t> first_choice_last_us_;
  std::vector<std::int64_t> other_choices_last_us_;
  // Usage-only chunks, and usages on a choice's finishing chunk, seen (a request with several
  // choices may state its usage choice by choice: on_payload).
  int usage_only_chunks_ = 0, finishing_usages_ = 0;
  int content_events_ = 0;
  std::vector<double> gaps_ms_;
  static constexpr std::size_t kGapsReserved = 128;
  std::optional<Usage> usage_;
  bool final_usage_ = false;
  bool finish_chunk_usage_ = false;  // a usage on a finish-only chunk (llama.cpp's completions)
  bool typed_events_ = false;
  bool error_event_ = false;
  int unknown_events_ = 0;
  std::optional<std::int64_t> timings_predicted_n_, timings_prompt_n_, timings_cache_n_;
  std::string model_, id_, finish_reason_, error_type_, error_message_, server_timings_;
  int choices_ = 0;
  bool saw_done_ = false;
  bool saw_terminal_event_ = false;
  bool malformed_ = false;
  bool partial_event_ = false;
};

}  // namespace mpo::openai
