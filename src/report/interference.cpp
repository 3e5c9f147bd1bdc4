// The implementation of report/interference.hpp.
#include "report/interference.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "core/stats.hpp"

namespace mpo::report {
namespace {

// Where the engine produced a row's first token, ms after its start: its TTFT where streamed, else
// e2e less the engine's own decode time.
std::optional<double> first_token_ms(const Row& r) {
  if (r.ttft_ms) return *r.ttft_ms;
  if (r.e2e_ms && r.engine_predicted_ms) return *r.e2e_ms - *r.engine_predicted_ms;
  return std::nullopt;
}

bool decoding(const Row& r) {
  return r.ok() && r.stream && r.ttft_ms && r.tpot_ms && r.ended_at_us && r.itl_p50_ms &&
         r.completion_tokens.value_or(0) >= 2;
}

double p50(std::vector<double> v) { return v.empty() ? 0 : *quantile_cont(std::move(v), 0.5); }

}  // namespace

PrefillOverlap prefill_overlap(const RowList& rows) {
  PrefillOverlap out;
  // Prefill windows in ms from the earliest start (doubles keep a day's microseconds exact).
  std::vector<std::pair<double, double>> windows;
  std::int64_t origin = INT64_MAX;
  for (const Row* r : rows) origin = std::min(origin, r->started_at_us);
  const auto at = [&](const Row& r, double ms) { return static_cast<double>(r.started_at_us - origin) / 1000.0 + ms; };
  struct Owned {
    double from, to;
    const Row* row;
  };
  std::vector<Owned> owned;
  for (const Row* r : rows) {
    const auto first = first_token_ms(*r);
    if (!r->ok() || !r->engine_prompt_ms || !first || *r->engine_prompt_ms <= 0) continue;
    owned.push_back({at(*r, *first - *r->engine_prompt_ms), at(*r, *first), r});
  }
  out.prefill_windows = owned.size();
  if (owned.empty()) return out;
  std::sort(owned.begin(), owned.end(), [](const Owned& a, const Owned& b) { return a.from < b.from; });
  for (const Row* r : rows) {
    if (!decoding(*r)) continue;
    const double from = at(*r, *r->ttft_ms), to = static_cast<double>(*r->ended_at_us - origin) / 1000.0;
    if (to <= from) continue;
    // The others' windows inside [from, to), merged as they come in start order.
    double covered = 0, run_from = 0, run_to = -1;
    for (const Owned& w : owned) {
      if (w.row == r || w.to <= from) continue;
      if (w.from >= to) break;
      const double a = std::max(w.from, from), b = std::min(w.to, to);
      if (a > run_to) {
        if (run_to > run_from) covered += run_to - run_from;
        run_from = a;
        run_to = b;
      } else {
        run_to = std::max(run_to, b);
      }
    }
    if (run_to > run_from) covered += run_to - run_from;
    out.overlap_ms[r] = covered;
  }
  return out;
}

std::optional<DecodeInterference> decode_interference(const RowList& rows, const PrefillOverlap& overlap) {
  if (overlap.overlap_ms.empty()) return std::nullopt;
  DecodeInterference d;
  std::vector<double> overlapped_tpot, others_tpot, overlapped_itl;
  for (const Row* r : rows) {
    const auto it = overlap.overlap_ms.find(r);
    if (it == overlap.overlap_ms.end()) continue;
    const double decode_ms = static_cast<double>(*r->ended_at_us - r->started_at_us) / 1000.0 - *r->ttft_ms;
    if (decode_ms <= 0) continue;
    ++d.decoding;
    d.e2e_ms += decode_ms + *r->ttft_ms;
    if (it->second < kOverlappedShare * decode_ms) {
      others_tpot.push_back(*r->tpot_ms);
      continue;
    }
    overlapped_tpot.push_back(*r->tpot_ms);
    overlapped_itl.push_back(*r->itl_p50_ms);
    const double at_own_pace = static_cast<double>(*r->completion_tokens - 1) * *r->itl_p50_ms;
    d.lost_ms += std::min(it->second, std::max(0.0, decode_ms - at_own_pace));
  }
  d.overlapped = overlapped_tpot.size();
  if (d.overlapped == 0 || d.lost_ms <= 0) return std::nullopt;
  d.overlapped_tpot_p50_ms = p50(overlapped_tpot);
  if (!others_tpot.empty()) d.others_tpot_p50_ms = p50(others_tpot);
  d.overlapped_itl_p50_ms = p50(overlapped_itl);
  return d;
}

}  // namespace mpo::report
