// The implementation of openai/stream_tap.hpp. Watches a response body as it is forwarded and keeps
// what timing and accounting need: when the first generated-content event arrived, the gaps between
// content events, the last usage seen, ids, finish reason, errors, and whether the stream was well
// formed.
#include "openai/stream_tap.hpp"

#include <simdjson.h>

#include <algorithm>
#include <utility>

namespace mpo::openai {

std::string_view to_string(TokenSource s) {
  switch (s) {
    case TokenSource::kUsage: return "usage";
    case TokenSource::kContinuousUsage: return "continuous_usage";
    case TokenSource::kServerTimings: return "server_timings";
    case TokenSource::kEstimated: return "estimated";
    case TokenSource::kNone: return "none";
  }
  return "none";
}

void StreamTap::feed(std::string_view bytes, std::int64_t steady_us) {
  bytes_ += bytes.size();
  if (!sse_) {
    if (body_.size() < kMaxBody) body_.append(bytes.substr(0, kMaxBody - body_.size()));
    return;
  }
  thread_local ChunkShapes shapes;
  framer_.feed(bytes, [&](const SseEvent& e) {
    if (e.data == "[DONE]") {  // no chunk's shape: each would be tried in vain (issue 43)
      on_payload(classify_chunk(e.data, IdWanted::kNo), steady_us, true);
      return;
    }
    if (const PayloadInfo* known = template_.read(e.data)) {  // this stream's content chunks
      on_payload(*known, steady_us, true);
      return;
    }
    const IdWanted id = id_.empty() ? IdWanted::kYes : IdWanted::kNo;
    if (const PayloadInfo* known = shapes.read(e.data, id, last_shape_)) {
      on_payload(*known, steady_us, true);
      learn_template(e.data, *known, &shapes.shape(last_shape_));
      return;
    }
    const PayloadInfo info = classify_chunk(e.data, id);
    // Learnt only from what the scan reads (not an error, another API's event, one with llama.cpp's
    // timings or vLLM's metrics): a failed attempt would cost a scan for nothing.
    if (learns_left_ > 0 && info.kind != ChunkKind::kUnparsable && info.kind != ChunkKind::kDone &&
        info.kind != ChunkKind::kError && !info.typed_event && !info.unknown_event && info.server_timings.empty()) {
      --learns_left_;
      shapes.learn(e.data, last_shape_);
    }
    on_payload(info, steady_us, true);
    learn_template(e.data, info, nullptr);
  });
}

// The stream's template is learnt from its second content chunk on (a response of one token never
// pays for it), a few times a stream at most; from the shape that read the chunk when one did
// (no scan: the shape knows where the content lies).
void StreamTap::learn_template(std::string_view data, const PayloadInfo& info, const ChunkShape* read_by) {
  if (info.kind == ChunkKind::kContent && content_events_ > 1 && template_learns_left_ > 0) {
    --template_learns_left_;
    if (read_by != nullptr) {
      template_.learn(data, *read_by);
    } else {
      template_.learn(data);
    }
  }
}

void StreamTap::finish(bool complete) {
  if (!sse_) {
    if (!body_.empty()) on_payload(parse_response_body(body_), 0, false);
    return;
  }
  partial_event_ = framer_.has_partial();
  if (framer_.unknown_lines() > 0 || framer_.oversized_lines() > 0) malformed_ = true;
  if (complete && partial_event_) malformed_ = true;
}

// Anthropic states a stream's usage in two events (input in message_start, output in message_delta):
// each count a payload states replaces the one before, the others are kept.
void StreamTap::merge_usage(const Usage& u) {
  if (!usage_) {
    usage_ = u;
    return;
  }
  auto take = [](std::optional<std::int64_t>& to, const std::optional<std::int64_t>& from) {
    if (from) to = from;
  };
  take(usage_->prompt_tokens, u.prompt_tokens);
  take(usage_->completion_tokens, u.completion_tokens);
  take(usage_->total_tokens, u.total_tokens);
  take(usage_->cached_prompt_tokens, u.cached_prompt_tokens);
  take(usage_->reasoning_tokens, u.reasoning_tokens);
  if (!u.total_tokens && usage_->prompt_tokens && usage_->completion_tokens) {
    usage_->total_tokens = *usage_->prompt_tokens + *usage_->completion_tokens;
  }
}

// Another choice's own usage (each counts that choice's tokens and the shared prompt): its output
// is added, the prompt counted once.
void StreamTap::add_choice_usage(const Usage& u) {
  auto add = [](std::optional<std::int64_t>& to, const std::optional<std::int64_t>& from) {
    if (from) to = to.value_or(0) + *from;
  };
  add(usage_->completion_tokens, u.completion_tokens);
  add(usage_->reasoning_tokens, u.reasoning_tokens);
  if (usage_->prompt_tokens && usage_->completion_tokens) {
    usage_->total_tokens = *usage_->prompt_tokens + *usage_->completion_tokens;
  }
}

void StreamTap::on_payload(const PayloadInfo& p, std::int64_t steady_us, bool streamed) {
  if (p.kind == ChunkKind::kDone) {
    saw_done_ = true;
    return;
  }
  if (p.kind == ChunkKind::kUnparsable) {
    malformed_ = streamed || malformed_;
    return;
  }
  if (streamed) {
    if (p.terminal) saw_terminal_event_ = true;
    if (p.typed_event) typed_events_ = true;
    if (p.unknown_event) ++unknown_events_;
    if (p.kind == ChunkKind::kError) error_event_ = true;
  }
  if (!p.model.empty()) model_ = p.model;
  if (!p.id.empty() && id_.empty()) id_ = p.id;
  if (!p.finish_reason.empty()) finish_reason_ = p.finish_reason;
  choices_ = std::max({choices_, p.choices, p.choices > 0 ? p.first_choice_index + 1 : 0});
  if (p.kind == ChunkKind::kError) {
    error_type_ = p.error_type;
    error_message_ = p.error_message;
  }
  if (p.usage) {
    // With several choices, a usage can be one choice's: llama.cpp b10309 sends a usage-only chunk
    // per choice (chat API), or a usage on each choice's finishing chunk and none alone
    // (completions API); vLLM's continuous usage is a choice's too, and its one usage-only chunk
    // the total. So usage-only chunks after the first add up, and finishing chunks' usages add up
    // until a usage-only chunk states the total.
    const bool finishing = !p.final_usage && p.choices == 1 && !p.finish_reason.empty();
    const bool another_choice =
        choices_ > 1 && usage_ &&
        ((p.final_usage && usage_only_chunks_ > 0) || (finishing && usage_only_chunks_ == 0 && finishing_usages_ > 0));
    if (another_choice) {
      add_choice_usage(*p.usage);
    } else {
      merge_usage(*p.usage);
    }
    if (p.final_usage) {
      final_usage_ = true;
      ++usage_only_chunks_;
    }
    if (finishing) ++finishing_usages_;
    // A usage on a chunk that finishes and carries nothing generated (llama.cpp b10309's completions
    // put theirs there, asked for or not) is the stream's own statement, not a continuous count.
    if (p.kind == ChunkKind::kEmpty && !p.finish_reason.empty()) finish_chunk_usage_ = true;
  }
  if (!p.server_timings.empty()) {
    server_timings_ = p.server_timings;
    simdjson::dom::parser parser;
    simdjson::dom::element t;
    if (parser.parse(server_timings_).get(t) == simdjson::SUCCESS) {
      std::int64_t n = 0;
      if (t["predicted_n"].get_int64().get(n) == simdjson::SUCCESS) timings_predicted_n_ = n;
      if (t["prompt_n"].get_int64().get(n) == simdjson::SUCCESS) timings_prompt_n_ = n;
      if (t["cache_n"].get_int64().get(n) == simdjson::SUCCESS) timings_cache_n_ = n;
    }
  }
  if (streamed && is_generated(p.kind)) {
    if (!first_content_us_) {
      first_content_us_ = steady_us;
      first_output_ = p.kind;
    }
    // The gap since this choice's last content (most streams have one choice: no vector).
    std::optional<std::int64_t> last;
    if (p.first_choice_index == 0) {
      last = std::exchange(first_choice_last_us_, steady_us);
    } else {
      const auto i = static_cast<std::size_t>(p.first_choice_index - 1);
      if (other_choices_last_us_.size() <= i) other_choices_last_us_.resize(i + 1, -1);
      if (other_choices_last_us_[i] >= 0) last = other_choices_last_us_[i];
      other_choices_last_us_[i] = steady_us;
    }
    if (last) {
      // One allocation for a usual stream, not one per doubling; none for a one-token response.
      if (gaps_ms_.empty()) gaps_ms_.reserve(kGapsReserved);
      gaps_ms_.push_back(static_cast<double>(steady_us - *last) / 1000.0);
    }
    last_content_us_ = steady_us;
    ++content_events_;
  }
}

TokenSource StreamTap::token_source() const {
  if (usage_ && usage_->completion_tokens) {
    return (!sse_ || final_usage_ || finish_chunk_usage_) ? TokenSource::kUsage : TokenSource::kContinuousUsage;
  }
  if (timings_predicted_n_) return TokenSource::kServerTimings;
  if (sse_ && content_events_ > 0) return TokenSource::kEstimated;
  return TokenSource::kNone;
}

std::optional<std::int64_t> StreamTap::completion_tokens() const {
  switch (token_source()) {
    case TokenSource::kUsage:
    case TokenSource::kContinuousUsage: return usage_->completion_tokens;
    case TokenSource::kServerTimings: return timings_predicted_n_;
    case TokenSource::kEstimated: return content_events_;
    case TokenSource::kNone: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace mpo::openai

namespace mpo::openai {

// llama.cpp's timings count the prompt in two parts: prompt_n tokens computed, cache_n served
// from its prefix cache (its own usage.prompt_tokens is their sum, and cached_tokens is cache_n:
// tests/fixtures/llamacpp/llamacpp_b10309_chat_stream.http). Without usage the prompt is the sum.
std::optional<std::int64_t> StreamTap::prompt_tokens() const {
  if (usage_ && usage_->prompt_tokens) return usage_->prompt_tokens;
  if (!timings_prompt_n_) return std::nullopt;
  return *timings_prompt_n_ + timings_cache_n_.value_or(0);
}

std::optional<std::int64_t> StreamTap::cached_prompt_tokens() const {
  if (usage_ && usage_->cached_prompt_tokens) return usage_->cached_prompt_tokens;
  return timings_prompt_n_ ? timings_cache_n_ : std::nullopt;
}

}  // namespace mpo::openai
