// The implementation of report/interference.hpp.
#include "report/interference.hpp"

#include <algorithm>
#include <climits>
#include <utility>
#include <vector>

#include "core/stats.hpp"

namespace mpo::report {

std::optional<double> first_token_ms(const Row& r) {
  if (r.ttft_ms) return *r.ttft_ms;
  if (r.e2e_ms && r.engine_predicted_ms) return *r.e2e_ms - *r.engine_predicted_ms;
  return std::nullopt;
}

std::optional<double> engine_decode_per_token_ms(const Row& r) {
  if (!r.ok() || (r.stream && !r.tool_call_first) || !r.engine_predicted_ms || r.completion_tokens.value_or(0) < 2)
    return std::nullopt;
  return static_cast<double>(*r.engine_predicted_ms) / static_cast<double>(*r.completion_tokens - 1);
}

namespace {

bool decoding(const Row& r) {
  return r.ok() && r.stream && r.ttft_ms && r.tpot_ms && r.ended_at_us && r.itl_p50_ms && *r.itl_p50_ms >= kMinPaceMs &&
         r.completion_tokens.value_or(0) >= 2;
}

}  // namespace

MergedWindows::MergedWindows(std::vector<std::pair<double, double>> windows) : merged_(std::move(windows)) {
  // Merged where they lie, then the room they left given back.
  std::sort(merged_.begin(), merged_.end());
  std::size_t kept = 0;
  for (std::size_t i = 0; i < merged_.size(); ++i) {
    if (kept > 0 && merged_[i].first <= merged_[kept - 1].second) {
      merged_[kept - 1].second = std::max(merged_[kept - 1].second, merged_[i].second);
    } else {
      merged_[kept++] = merged_[i];
    }
  }
  merged_.resize(kept);
  merged_.shrink_to_fit();
  before_.reserve(kept);
  double total = 0;
  for (const auto& [from, to] : merged_) {
    before_.push_back(total);
    total += to - from;
  }
}

double MergedWindows::covered_before(double x) const {
  // The last window that starts before x.
  const auto it = std::upper_bound(merged_.begin(), merged_.end(), x,
                                   [](double v, const std::pair<double, double>& w) { return v < w.first; });
  if (it == merged_.begin()) return 0;
  const auto i = static_cast<std::size_t>(it - merged_.begin()) - 1;
  return before_[i] + std::min(x, merged_[i].second) - merged_[i].first;
}

PrefillOverlap::PrefillOverlap(const RowList& rows, std::span<const std::pair<std::int64_t, std::int64_t>> traced,
                               std::string traced_source) {
  if (rows.empty()) return;
  origin_us_ = INT64_MAX;
  for (const Row* r : rows) origin_us_ = std::min(origin_us_, r->started_at_us);
  std::vector<std::pair<double, double>> windows;
  for (const Row* r : rows) {
    const auto first = first_token_ms(*r);
    if (!r->ok() || !r->engine_prompt_ms || !first || *r->engine_prompt_ms <= 0) continue;
    windows.emplace_back(at(*r, *first - *r->engine_prompt_ms), at(*r, *first));
  }
  source_ = "llama.cpp timings.prompt_ms";
  if (windows.empty() && !traced.empty()) {
    for (const auto& [from, to] : traced) {
      if (to > from) {
        windows.emplace_back(static_cast<double>(from - origin_us_) / 1000.0,
                             static_cast<double>(to - origin_us_) / 1000.0);
      }
    }
    source_ = std::move(traced_source);
  }
  windows_ = windows.size();
  merged_ = MergedWindows(std::move(windows));
}

double PrefillOverlap::at(const Row& r, double ms) const {
  return static_cast<double>(r.started_at_us - origin_us_) / 1000.0 + ms;
}

std::optional<double> PrefillOverlap::covered_ms(const Row& r) const {
  if (!decoding(r)) return std::nullopt;
  const double from = at(r, *r.ttft_ms), to = static_cast<double>(*r.ended_at_us - origin_us_) / 1000.0;
  return merged_.covered(from, to);
}

namespace {

// A decoding row's decode, first token to end, in ms (PrefillOverlap::covered_ms says it decodes).
double decode_ms_of(const Row& r) {
  return static_cast<double>(*r.ended_at_us - r.started_at_us) / 1000.0 - *r.ttft_ms;
}

}  // namespace

bool decoded_behind_prompts(const Row& r, const PrefillOverlap& overlap) {
  const auto covered = overlap.covered_ms(r);
  if (!covered) return false;
  const double decode_ms = decode_ms_of(r);
  return decode_ms > 0 && *covered >= kOverlappedShare * decode_ms;
}

std::optional<DecodeInterference> decode_interference(const RowList& rows, const PrefillOverlap& overlap) {
  if (overlap.prefill_windows() == 0) return std::nullopt;
  DecodeInterference d;
  d.source = overlap.source();
  struct Decode {
    const Row* row;
    double covered_ms, decode_ms;
  };
  std::vector<Decode> overlapped;
  std::vector<double> overlapped_tpot, others_tpot, overlapped_itl, others_itl;
  for (const Row* r : rows) {
    const auto covered = overlap.covered_ms(*r);
    if (!covered) continue;
    const double decode_ms = decode_ms_of(*r);
    if (decode_ms <= 0) continue;
    ++d.decoding;
    d.e2e_ms += decode_ms + *r->ttft_ms;
    if (*covered < kOverlappedShare * decode_ms) {
      others_tpot.push_back(*r->tpot_ms);
      others_itl.push_back(*r->itl_p50_ms);
      continue;
    }
    overlapped.push_back({r, *covered, decode_ms});
    overlapped_tpot.push_back(*r->tpot_ms);
    overlapped_itl.push_back(*r->itl_p50_ms);
  }
  // A decode mostly inside other prompts' windows has the slowed gap for its median: its pace is
  // then the decodes' outside them, where there are any (and never slower than its own).
  const auto others_pace = median_of(std::move(others_itl));
  for (const Decode& o : overlapped) {
    double pace = *o.row->itl_p50_ms;
    if (others_pace && o.covered_ms >= kMostlyCoveredShare * o.decode_ms) pace = std::min(pace, *others_pace);
    const double at_pace = static_cast<double>(*o.row->completion_tokens - 1) * pace;
    d.lost_ms += std::min(o.covered_ms, std::max(0.0, o.decode_ms - at_pace));
  }
  d.overlapped = overlapped_tpot.size();
  if (d.overlapped == 0 || d.lost_ms <= 0) return std::nullopt;
  d.overlapped_tpot_p50_ms = median_of(std::move(overlapped_tpot));
  d.others_tpot_p50_ms = median_of(std::move(others_tpot));
  d.overlapped_itl_p50_ms = median_of(std::move(overlapped_itl)).value_or(0);
  return d;
}

}  // namespace mpo::report
