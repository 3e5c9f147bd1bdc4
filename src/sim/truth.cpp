// The implementation of sim/truth.hpp. The simulator's ground truth: one JSONL line per finished
// request (schema "modelperfobs.sim-truth.v1"), with the engine's own times on the wall clock.
#include "sim/truth.hpp"

#include <cmath>

#include "core/json.hpp"
#include "core/time.hpp"

namespace mpo::sim {

std::string render_truth_line(const FinishedRequest& f, const TruthContext& ctx) {
  auto wall = [&](double t) { return ctx.wall_origin_us + static_cast<std::int64_t>(std::llround(t * 1e6)); };
  auto opt_time = [&](JsonObjectWriter& w, std::string_view key, const std::optional<double>& t) {
    if (t) {
      w.field(key, format_rfc3339_us(wall(*t)));
    } else {
      w.null_field(key);
    }
  };
  auto opt_str = [&](JsonObjectWriter& w, std::string_view key, const std::string& s) {
    if (s.empty()) {
      w.null_field(key);
    } else {
      w.field(key, s);
    }
  };
  JsonObjectWriter w;
  w.field("schema", "modelperfobs.sim-truth.v1")
      .field("engine_request_id", static_cast<std::uint64_t>(f.id))
      .field("origin", f.background ? "background" : "client")
      .field("model", ctx.model);
  opt_str(w, "response_id", ctx.response_id);
  opt_str(w, "x_request_id", ctx.x_request_id);
  opt_str(w, "observation_id", ctx.observation_id);
  opt_str(w, "traceparent", ctx.traceparent);
  if (ctx.choice) w.field("choice", *ctx.choice);
  w.field("arrival_at", format_rfc3339_us(wall(f.arrival_s)));
  opt_time(w, "scheduled_at", f.scheduled_s);
  opt_time(w, "first_token_at", f.first_token_s);
  opt_time(w, "first_token_sent_at", ctx.first_token_sent_s);
  opt_time(w, "last_token_at", f.last_token_s);
  w.field("finished_at", format_rfc3339_us(wall(f.finished_s)));
  w.field("finish_reason", to_string(f.reason))
      .field("prompt_tokens", f.prompt_tokens)
      .field("cached_prompt_tokens", f.cached_prompt_tokens)
      .field("completion_tokens", f.completion_tokens)
      .field("preemptions", f.preemptions);
  if (f.first_token_s) {
    w.field("ttft_ms", (*f.first_token_s - f.arrival_s) * 1e3);
  } else {
    w.null_field("ttft_ms");
  }
  w.field("e2e_ms", (f.finished_s - f.arrival_s) * 1e3);
  return std::move(w).finish() + "\n";
}

}  // namespace mpo::sim
