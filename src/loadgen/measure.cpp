// The implementation of loadgen/measure.hpp. The pure half of measuring one request of a sweep:
// from what the load generator saw (when it sent the request and when the body ended, the status,
// the stream tap over the body, how the body ended) to fak's sample fields and the ledger line's
// outcome.
#include "loadgen/measure.hpp"

#include <fmt/format.h>

#include <cctype>

#include "ledger/from_tap.hpp"

namespace mpo::loadgen {

void record_failure(Sample& s, ledger::Observation& o, const RequestFailure& f) {
  s.ok = false;
  s.error_class = f.timeout ? "timeout" : "transport";
  s.error = fmt::format("{}: {}", f.stage, f.message);
  o.outcome = f.timeout ? "upstream_timeout" : (f.stage == "header" ? "upstream_reset" : "upstream_unreachable");
  o.error_type = o.outcome;
  o.error_message = s.error;
}

void record_response(Sample& s, ledger::Observation& o, openai::StreamTap&& tap, const Response& r) {
  s.http_status = r.http_status;
  o.http_status = r.http_status;
  s.stream_mode = r.sse ? "sse" : "non_sse";
  if (tap.first_content_us()) s.ttft_ms = round_ms(static_cast<double>(*tap.first_content_us() - r.sent_us) / 1000.0);
  if (const auto kind = tap.first_output()) s.first_output = std::string(openai::to_string(*kind));
  for (double g : tap.gaps_ms()) s.itl_ms.push_back(round_ms(g));
  s.output_events = tap.content_events();
  if (const auto& u = tap.usage()) {
    s.usage = SampleUsage{u->prompt_tokens, u->completion_tokens, u->total_tokens, u->cached_prompt_tokens};
    if (u->completion_tokens) s.output_tokens_exact = *u->completion_tokens;
  }
  if (s.output_tokens_exact) {
    s.output_token_estimate = *s.output_tokens_exact;
    s.output_token_count_basis = "usage.completion_tokens";
  } else if (s.output_events > 0) {
    s.output_token_estimate = s.output_events;
    s.output_token_count_basis = "stream_content_events";
  } else {
    s.output_token_estimate = static_cast<std::int64_t>(tap.bytes() / 4);
    s.output_token_count_basis = "estimated_content_tokens";
  }
  // fak's tpot over the tokens after the first: unknown where the first event was a tool call (the
  // engine held back the tokens before the function's name; docs/FORMATS.md `first_output`).
  if (tap.first_content_us() && first_token_ms(s)) {
    const double span = static_cast<double>(r.end_us - *tap.first_content_us()) / 1000.0;
    const std::int64_t units = s.output_tokens_exact ? *s.output_tokens_exact : s.output_events;
    if (units > 1) s.tpot_ms = round_ms(span / static_cast<double>(units - 1));
  }
  s.response_model = tap.model();
  s.response_id = tap.id();

  ledger::fill_from_tap(o, tap, r.sent_us, false);
  if (o.finish_reason) s.finish_reason = *o.finish_reason;

  if (r.body_end != BodyEnd::kComplete) {
    const bool timeout = r.body_end == BodyEnd::kTimeout;
    s.ok = false;
    s.error_class = timeout ? "timeout" : "stream_read";
    s.error = fmt::format("the response ended early: {}", r.body_error);
    o.outcome = timeout ? "upstream_timeout" : r.body_end == BodyEnd::kReset ? "upstream_reset" : "stream_truncated";
    o.error_type = o.outcome;
    o.error_message = s.error;
  } else if (r.http_status < 200 || r.http_status > 299) {
    s.ok = false;
    s.error_class = "http_status";
    std::string trimmed = r.error_body;
    while (!trimmed.empty() && std::isspace(static_cast<unsigned char>(trimmed.back()))) trimmed.pop_back();
    s.error = trimmed.empty() ? fmt::format("HTTP {}", r.http_status) : trimmed;
    o.outcome = "http_error";
  } else if (r.sse && tap.error_event()) {
    s.ok = false;  // fak would count it ok; an error the backend states is not a success
    s.error_class = "stream_read";
    s.error = fmt::format("the backend reported an error in the stream: {}: {}", o.error_type.value_or(""),
                          o.error_message.value_or(""));
    o.outcome = "stream_error";
  } else if (r.sse && tap.requires_terminal_event() && !tap.saw_terminal()) {
    s.ok = false;
    s.error_class = "stream_read";
    s.error = openai::kMissingTerminalEvent;
    o.outcome = "stream_truncated";
    o.error_type = o.outcome;
    o.error_message = s.error;
  } else if (r.sse && (tap.malformed() || (!tap.saw_terminal() && tap.partial_event()))) {
    s.ok = true;  // fak counts what it could read; the ledger says the stream was malformed
    o.outcome = "malformed_stream";
  } else {
    s.ok = true;
    o.outcome = "ok";
  }
}

}  // namespace mpo::loadgen
