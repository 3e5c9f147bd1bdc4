// The implementation of sweep/merge.hpp. `sweep merge`: joins the receipts of a sweep driven from
// many machines (docs/SWEEP.md "Sharded sweeps"; each shard's share of the load is
// loadgen/shard.hpp's).
#include "sweep/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/go_json.hpp"
#include "core/time.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/verify.hpp"

namespace mpo::sweep {
namespace {

struct Parsed {
  const ShardInput* input;
  SweepReceipt receipt;
  int index = 0;
};

std::string who(const Parsed& p) { return fmt::format("shard {} ({})", p.index, p.input->name); }

// The settings every shard must share: how the points were driven and judged.
Status same_settings(const Parsed& base, const Parsed& other) {
  const auto& a = base.receipt;
  const auto& b = other.receipt;
  auto differ = [&](std::string_view what, const std::string& x, const std::string& y) {
    return make_error(errc::kSweepMerge,
                      fmt::format("{}: {} {} differs from shard {}'s {}", who(other), what, y, base.index, x));
  };
  if (a.mode != b.mode) return differ("the load axis", axis_name(a.mode), axis_name(b.mode));
  if (a.workload_digest != b.workload_digest) return differ("workload digest", a.workload_digest, b.workload_digest);
  if (a.model != b.model) return differ("model", a.model, b.model);
  if (a.coordinates != b.coordinates) {
    auto list = [](const std::vector<double>& v) {
      std::string s;
      for (double c : v) s += (s.empty() ? "" : ",") + go_float_text(c);
      return s;
    };
    return differ("points", list(a.coordinates), list(b.coordinates));
  }
  if (a.contracts.size() != b.contracts.size()) return differ("tracks", "", "");
  for (std::size_t i = 0; i < a.contracts.size(); ++i) {
    const auto& x = a.contracts[i];
    const auto& y = b.contracts[i];
    const std::string cx =
        fmt::format("{}/{}/{}/{}/{}", x.track, x.model, x.engine, x.batch_capacity, x.capacity_source);
    const std::string cy =
        fmt::format("{}/{}/{}/{}/{}", y.track, y.model, y.engine, y.batch_capacity, y.capacity_source);
    if (cx != cy) return differ("contract (track/model/engine/capacity/source)", cx, cy);
  }
  if (a.sla.ttft_p99_ms != b.sla.ttft_p99_ms || a.sla.itl_p99_ms != b.sla.itl_p99_ms ||
      a.sla.e2e_p99_ms != b.sla.e2e_p99_ms) {
    return differ("p99 budgets", "", "");
  }
  const auto& la = *a.load;
  const auto& lb = *b.load;
  auto text = [](const auto& v) {
    if (!v) return std::string("(none)");
    if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>)
      return *v;
    else
      return go_float_text(static_cast<double>(*v));
  };
  if (la.seed != lb.seed) return differ("seed", text(la.seed), text(lb.seed));
  if (la.slo_ms != lb.slo_ms) return differ("slo_ms", text(la.slo_ms), text(lb.slo_ms));
  if (la.api != lb.api) return differ("api", text(la.api), text(lb.api));
  if (la.arrival != lb.arrival) return differ("arrival", text(la.arrival), text(lb.arrival));
  if (la.requests_per_point != lb.requests_per_point)
    return differ("requests per point", text(la.requests_per_point), text(lb.requests_per_point));
  if (la.lateness_bound_ms != lb.lateness_bound_ms)
    return differ("lateness bound", text(la.lateness_bound_ms), text(lb.lateness_bound_ms));
  if (a.rules_generation != b.rules_generation)
    return differ("rules generation", std::to_string(a.rules_generation), std::to_string(b.rules_generation));
  return Ok{};
}

Result<std::int64_t> point_start_us(const Parsed& p, const TrackPoint& tp, double coordinate) {
  const auto& load = tp.evidence.load;
  auto at =
      load ? parse_rfc3339(load->started_at) : Result<std::int64_t>(make_error(errc::kSweepMerge, "no start time"));
  if (!at) {
    return make_error(errc::kSweepMerge,
                      fmt::format("{}: the point at {} {} has no start time (evidence.load.started_at)", who(p),
                                  point_key(p.receipt.mode), go_float_text(coordinate)));
  }
  return *at;
}

// The shards' receipts, read and in shard order: each a shard's, all of one count, none missing or
// given twice, all run with the same settings.
Result<std::vector<Parsed>> read_shards(const std::vector<ShardInput>& inputs) {
  if (inputs.size() < 2) return make_error(errc::kSweepMerge, "sweep merge needs the receipts of two or more shards");
  std::vector<Parsed> shards;
  for (const auto& in : inputs) {
    auto r = parse_sweep_receipt(in.text);
    if (!r) return make_error(errc::kSweepMerge, fmt::format("{}: {}", in.name, r.error().message));
    if (!r->load || !r->load->shard) {
      return make_error(errc::kSweepMerge,
                        fmt::format("{}: not a shard's receipt (it was not run with --shard I/N)", in.name));
    }
    const int index = static_cast<int>(r->load->shard->index);
    shards.push_back(Parsed{&in, std::move(*r), index});
  }
  std::sort(shards.begin(), shards.end(), [](const Parsed& a, const Parsed& b) { return a.index < b.index; });
  const auto count = shards.front().receipt.load->shard->count;
  for (const auto& s : shards) {
    if (s.receipt.load->shard->count != count) {
      return make_error(errc::kSweepMerge, fmt::format("{} is one of {} shards, shard {} one of {}", who(s),
                                                       s.receipt.load->shard->count, shards.front().index, count));
    }
  }
  std::string missing, doubled;
  for (std::int64_t i = 0; i < count; ++i) {
    const auto n = std::count_if(shards.begin(), shards.end(), [&](const Parsed& s) { return s.index == i; });
    if (n == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
    if (n > 1) doubled += (doubled.empty() ? "" : ", ") + std::to_string(i);
  }
  if (!doubled.empty()) return make_error(errc::kSweepMerge, "the same shard given twice: " + doubled);
  if (!missing.empty()) {
    return make_error(errc::kSweepMerge, fmt::format("shards {} of {} are missing: a merge of part of the load would "
                                                     "state figures for a load that was not offered",
                                                     missing, count));
  }
  for (std::size_t i = 1; i < shards.size(); ++i) {
    if (auto st = same_settings(shards.front(), shards[i]); !st) return st.error();
  }

  return shards;
}

// Which shard files the merge was made of, on which machines, when.
void record_shards(const std::vector<Parsed>& shards, SweepReceipt& merged) {
  std::vector<ShardRecord> records;
  std::string machines;
  for (const auto& s : shards) {
    ShardRecord rec;
    rec.index = s.index;
    rec.file = s.input->name;
    rec.receipt_sha256 = sha256_digest(s.input->text);
    rec.machine_id = s.receipt.machine_id;
    rec.generated_at = s.receipt.generated_at;
    rec.start_lateness_ms = s.receipt.load->shard->start_lateness_ms;
    rec.clock_offset = "not measured: the shards' clocks are taken to be synchronised (NTP/chrony)";
    records.push_back(std::move(rec));
    if (machines.find(s.receipt.machine_id) == std::string::npos)
      machines += (machines.empty() ? "" : ",") + s.receipt.machine_id;
  }
  merged.load->shards = std::move(records);
  merged.machine_id = machines;
  merged.generated_at = std::max_element(shards.begin(), shards.end(), [](const Parsed& a, const Parsed& b) {
                          return a.receipt.generated_at < b.receipt.generated_at;
                        })->receipt.generated_at;
}

// One track at one point: the shards must have started it together; their samples are put on one
// time line from the earliest start, their generators' CPU added up; energy is not carried over.
Status merge_track_point(const std::vector<Parsed>& shards, std::size_t p, std::size_t t, const MergeOptions& options,
                         SweepReceipt& merged) {
  const Point& point = merged.points[p];
  TrackPoint& into = merged.points[p].tracks[t];
  // The point's window on each shard: they must start together.
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> starts;
  for (const auto& s : shards) {
    if (s.receipt.points.size() != merged.points.size() || s.receipt.points[p].tracks.size() <= t) {
      return make_error(errc::kSweepMerge, fmt::format("{} has no point at {} {}", who(s), point_key(merged.mode),
                                                       go_float_text(point.coordinate)));
    }
    const auto& tp = s.receipt.points[p].tracks[t];
    auto start = point_start_us(s, tp, point.coordinate);
    if (!start) return start.error();
    starts.push_back(*start);
    first = std::min(first, *start);
    last = std::max(last, *start);
    if (auto e = parse_rfc3339(tp.evidence.load->ended_at)) end = std::max(end, *e);
  }
  const double skew_s = static_cast<double>(last - first) / 1e6;
  if (skew_s > options.max_start_skew_s) {
    const auto late = std::max_element(starts.begin(), starts.end()) - starts.begin();
    const auto early = std::min_element(starts.begin(), starts.end()) - starts.begin();
    return make_error(
        errc::kSweepMerge,
        fmt::format("the point at {} {}: shard {} started {:.3f} s after shard {} (at most {} s apart): the "
                    "shards did not offer the point's load together; start them with --start-at (and "
                    "--point-period when a sweep has several points)",
                    point_key(merged.mode), go_float_text(point.coordinate), shards[late].index, skew_s,
                    shards[early].index, go_float_text(options.max_start_skew_s)));
  }
  // Every shard's samples on one time line, from the earliest shard's start.
  into.samples.clear();
  double cpu_seconds = 0, wall_seconds = 0;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    const auto& tp = shards[k].receipt.points[p].tracks[t];
    const double shift_ms = static_cast<double>(starts[k] - first) / 1000.0;
    for (loadgen::Sample smp : tp.samples) {
      smp.scheduled_offset_ms = loadgen::round_ms(smp.scheduled_offset_ms + shift_ms);
      smp.sent_offset_ms = loadgen::round_ms(smp.sent_offset_ms + shift_ms);
      smp.shard = shards[k].index;
      into.samples.push_back(std::move(smp));
    }
    if (tp.evidence.generator) {
      cpu_seconds += tp.evidence.generator->cpu_seconds;
      wall_seconds = std::max(wall_seconds, tp.evidence.generator->wall_seconds);
    }
  }
  std::stable_sort(into.samples.begin(), into.samples.end(), [](const loadgen::Sample& a, const loadgen::Sample& b) {
    return a.scheduled_offset_ms < b.scheduled_offset_ms;
  });
  auto& e = into.evidence;
  if (e.load) {
    e.load->started_at = format_rfc3339_us(first);
    if (end != std::numeric_limits<std::int64_t>::min()) e.load->ended_at = format_rfc3339_us(end);
  }
  if (e.generator) {
    e.generator->cpu_seconds = cpu_seconds;  // every shard's generator, over its own wall time
    e.generator->wall_seconds = wall_seconds;
  }
  // Power measured on one client machine says nothing of the server's: not carried over.
  e.energy.reset();
  return Ok{};
}

}  // namespace

Result<SweepReceipt> merge_shards(const std::vector<ShardInput>& inputs, const MergeOptions& options) {
  auto read = read_shards(inputs);
  if (!read) return read.error();
  const std::vector<Parsed>& shards = *read;
  SweepReceipt merged = shards.front().receipt;
  merged.load->shard.reset();
  record_shards(shards, merged);
  merged.artifact = options.output_name;
  for (std::size_t p = 0; p < merged.points.size(); ++p) {
    for (std::size_t t = 0; t < merged.points[p].tracks.size(); ++t) {
      if (auto st = merge_track_point(shards, p, t, options, merged); !st) return st.error();
    }
  }
  rederive_from_samples(merged);
  if (auto st = evaluate_sweep(merged); !st) return st.error();
  return merged;
}

}  // namespace mpo::sweep
