// The implementation of ledger/from_tap.hpp. What a stream tap saw, written into a ledger line:
// response identity, timing from `t0_us` (the steady time the request started), tokens and their
// source.
#include "ledger/from_tap.hpp"

namespace mpo::ledger {

void fill_from_tap(Observation& o, openai::StreamTap& tap, std::int64_t t0_us, bool itl_full) {
  if (!tap.model().empty()) o.response_model = tap.model();
  if (!tap.id().empty()) o.response_id = tap.take_id();
  if (!tap.finish_reason().empty()) o.finish_reason = tap.finish_reason();
  if (tap.choices() > 0) o.choices = tap.choices();
  if (!tap.error_type().empty()) o.error_type = tap.error_type();
  if (!tap.error_message().empty()) o.error_message = tap.error_message();
  o.server_timings = tap.server_timings();
  if (tap.sse()) {
    if (tap.first_content_us()) o.ttft_ms = static_cast<double>(*tap.first_content_us() - t0_us) / 1000.0;
    o.content_events = tap.content_events();
    if (const auto kind = tap.first_output()) o.first_output = openai::to_string(*kind);
    o.itl_ms = tap.take_gaps_ms();
    o.itl_full = itl_full;
  }
  o.token_source = std::string(openai::to_string(tap.token_source()));
  o.completion_tokens = tap.completion_tokens();
  o.prompt_tokens = tap.prompt_tokens();
  o.cached_prompt_tokens = tap.cached_prompt_tokens();
  if (const auto& u = tap.usage()) {
    o.total_tokens = u->total_tokens;
    o.reasoning_tokens = u->reasoning_tokens;
  }
}

}  // namespace mpo::ledger
