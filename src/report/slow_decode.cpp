// The implementation of report/slow_decode.hpp.
#include "report/slow_decode.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "report/queued.hpp"

namespace mpo::report {
namespace {

// A request's time per token after the first: the proxy's TPOT, or (`engine`) the engine's own.
std::optional<double> per_token_ms(const Row& r, bool engine) {
  if (engine) return engine_decode_per_token_ms(r);
  return r.ok() && r.tpot_ms ? std::optional<double>(*r.tpot_ms) : std::nullopt;
}

}  // namespace

std::optional<SlowDecode> slow_decode_at_times(const RowList& rs, double threshold_ms, const PrefillOverlap* overlap) {
  const bool engine = std::none_of(rs.begin(), rs.end(), [](const Row* r) { return r->ok() && r->tpot_ms; });
  // Counted as report/queued.hpp counts waits: a request's time per token in place of its wait.
  std::vector<QueueWait> paces;
  std::vector<const Row*> slow;
  for (const Row* r : rs) {
    const auto t = per_token_ms(*r, engine);
    if (!t) continue;
    if (*t > threshold_ms) slow.push_back(r);
    const auto in = r->in_flight_at_start ? std::optional<double>(static_cast<double>(*r->in_flight_at_start))
                                          : std::optional<double>();
    paces.push_back({*t, *t, r->started_at_us, in});
  }
  const auto q = queued_at_times(paces, threshold_ms);
  if (!q) return std::nullopt;
  SlowDecode d;
  d.threshold_ms = threshold_ms;
  d.source = engine ? "the engine's own decode per token (llama.cpp timings.predicted_ms), not streamed"
                    : "TPOT, the proxy's: from the first content event to the last";
  d.n = q->n;
  d.of = q->of;
  d.tpot_ms = q->wait_ms;
  d.others_tpot_p50_ms = q->others_ttft_p50_ms;
  d.in_flight_p50 = q->in_flight_p50;
  d.others_in_flight_p50 = q->others_in_flight_p50;
  d.first_start_us = q->first_start_us;
  d.last_start_us = q->last_start_us;
  if (overlap && overlap->prefill_windows() > 0) {
    d.prompts_source = overlap->source();
    d.behind_prompts = static_cast<std::size_t>(
        std::count_if(slow.begin(), slow.end(), [&](const Row* r) { return decoded_behind_prompts(*r, *overlap); }));
  }
  return d;
}

std::string slow_decode_sentence(const SlowDecode& d) {
  std::string out = fmt::format(
      "{} of {} requests ({:.0f}%) decoded slower than {:.0f} ms a token ({}): {:.1f} ms p50, {:.1f} ms max, against "
      "{:.1f} ms p50 for the others",
      d.n, d.of, 100.0 * static_cast<double>(d.n) / static_cast<double>(d.of), d.threshold_ms, d.source, d.tpot_ms.p50,
      d.tpot_ms.max, d.others_tpot_p50_ms);
  const bool loaded = d.in_flight_p50 && d.others_in_flight_p50;
  out += at_times_context(d.in_flight_p50, d.others_in_flight_p50, d.first_start_us, d.last_start_us);
  const std::size_t behind = d.behind_prompts.value_or(0);
  if (behind > 0 && 2 * behind >= d.n) {
    out += fmt::format(
        ". Other requests' prompts were read during {} of them ({}): the engine reads a prompt in the same batches "
        "as the decode steps, and a step that carries a prompt's chunk lasts as long as the chunk (decode behind "
        "other requests' prompts, in the decode candidate's evidence)",
        behind, d.prompts_source);
  } else if (loaded && *d.in_flight_p50 > *d.others_in_flight_p50) {
    out +=
        ". Decode slowed when more requests shared the engine's batches (each step carries every request decoding; "
        "TPOT's slope over the requests in flight is in the decode candidate's evidence)";
  } else {
    out +=
        ". They met no more of this proxy's requests than the others did, so what slowed them was not its own load: "
        "clients that bypass the proxy, other requests' prompts read in the same batches, preemption under memory "
        "pressure, or the hardware";
  }
  out +=
      "; the median request decoded within the threshold, so the ranking, which weighs medians, does not call it "
      "decode, and it is these requests' TPOT tail";
  return out;
}

std::string slow_decode_evidence(const SlowDecode& d) {
  return fmt::format(
      "decode slow at times: {} of {} requests decoded slower than {:.0f} ms a token ({:.1f} ms p50), against "
      "{:.1f} ms p50 for the others",
      d.n, d.of, d.threshold_ms, d.tpot_ms.p50, d.others_tpot_p50_ms);
}

}  // namespace mpo::report
