// The implementation of sweep/compare.hpp. `sweep compare A.json B.json`: two sweep receipts of the
// same workload, point by point (docs/SWEEP.md "Comparing two sweeps").
#include "sweep/compare.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "compare/bootstrap.hpp"
#include "compare/table.hpp"
#include "core/go_json.hpp"
#include "core/json.hpp"
#include "core/stats.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"

namespace mpo::sweep {
namespace {

constexpr int kComparisonsPerPoint = 5;

// What one receipt measured at one point: its measured requests (warm-up and failures left out),
// one entry per request in every vector, so one draw of request indices resamples them all.
struct PointData {
  std::vector<double> ttft;  // NaN: the request had no first token (not streamed)
  std::vector<double> e2e;
  std::vector<std::vector<double>> itl;  // per request, so a resample keeps a request's gaps together
  std::vector<double> tokens;            // output tokens per request
  double total_tokens = 0, total_e2e = 0;
  std::optional<double> throughput;  // the receipt's figure (the mean of the runs' figures)
  bool closed_loop = true;           // throughput follows request time (closed) or the arrivals (open)
  // Several runs of one side pooled: each run's requests are [run_start[r], run_start[r + 1]).
  std::vector<std::size_t> run_start{0};
  // Requests that timed out (the generator's own limit): their TTFT, where they had none, and their
  // e2e are longer than what they waited.
  std::vector<double> ttft_waits, e2e_waits;
};

// One side's runs of a point, pooled (one run: its requests as they are).
PointData data_of(const std::vector<const TrackPoint*>& runs, loadgen::LoadMode mode) {
  PointData d;
  d.closed_loop = mode == loadgen::LoadMode::kConcurrency;
  d.run_start.clear();
  double figures = 0;
  std::size_t with_figure = 0;
  for (const TrackPoint* tp : runs) {
    d.run_start.push_back(d.e2e.size());
    for (const auto& s : tp->samples) {
      if (!s.warmup && !s.ok && s.error_class == "timeout") {
        if (!s.ttft_ms) d.ttft_waits.push_back(s.end_to_end_ms);
        d.e2e_waits.push_back(s.end_to_end_ms);
      }
      if (s.warmup || !s.ok) continue;
      d.ttft.push_back(loadgen::first_token_ms(s).value_or(std::nan("")));
      d.e2e.push_back(s.end_to_end_ms);
      d.itl.push_back(s.itl_ms);
      d.tokens.push_back(static_cast<double>(s.output_tokens_exact.value_or(s.output_token_estimate)));
      d.total_tokens += d.tokens.back();
      d.total_e2e += s.end_to_end_ms;
    }
    if (auto t = tp->stats.throughput_tok_s.measured_value()) figures += *t, ++with_figure;
  }
  d.run_start.push_back(d.e2e.size());
  if (with_figure == runs.size() && with_figure > 0) d.throughput = figures / static_cast<double>(with_figure);
  return d;
}

// One statistic of a point, computed on the data or on a resample of its requests.
using Statistic = std::function<std::optional<double>(const PointData&, const std::vector<std::size_t>*)>;

// The requests' (or the resample's) values of one per-request field, absent ones (NaN) left out.
std::vector<double> pick_values(const std::vector<double>& v, const std::vector<std::size_t>* idx) {
  std::vector<double> out;
  out.reserve(idx ? idx->size() : v.size());
  const std::size_t n = idx ? idx->size() : v.size();
  for (std::size_t k = 0; k < n; ++k) {
    const double x = v[idx ? (*idx)[k] : k];
    if (!std::isnan(x)) out.push_back(x);
  }
  return out;
}

Statistic quantile_of(std::vector<double> PointData::*field, double q) {
  return [field, q](const PointData& d, const std::vector<std::size_t>* idx) -> std::optional<double> {
    auto v = pick_values(d.*field, idx);
    if (!compare::enough_for_quantile(v.size(), q)) return std::nullopt;
    return compare::nearest_rank(std::move(v), q);
  };
}

std::optional<double> itl_p99(const PointData& d, const std::vector<std::size_t>* idx) {
  std::vector<double> gaps;
  const std::size_t n = idx ? idx->size() : d.itl.size();
  for (std::size_t k = 0; k < n; ++k) {
    const auto& r = d.itl[idx ? (*idx)[k] : k];
    gaps.insert(gaps.end(), r.begin(), r.end());
  }
  if (!compare::enough_for_quantile(gaps.size(), 0.99) || d.itl.size() < 10) return std::nullopt;
  return compare::nearest_rank(std::move(gaps), 0.99);
}

// A resample's throughput: the receipt's figure scaled by how the resample's requests differ from
// all of them. Closed loop: N workers each busy with one request at a time, so throughput follows
// output tokens per second of request time (Σ tokens / Σ e2e); open loop: the arrivals set the
// pace, so it follows the tokens per request.
std::optional<double> throughput(const PointData& d, const std::vector<std::size_t>* idx) {
  if (!d.throughput || d.tokens.size() < 10) return std::nullopt;
  if (!idx) return d.throughput;
  double picked_tokens = 0, picked_time = 0;
  for (auto i : *idx) picked_tokens += d.tokens[i], picked_time += d.e2e[i];
  if (!(d.total_tokens > 0) || !(picked_tokens > 0) || !(d.total_e2e > 0) || !(picked_time > 0)) return std::nullopt;
  const double ratio =
      d.closed_loop ? (picked_tokens / picked_time) / (d.total_tokens / d.total_e2e) : picked_tokens / d.total_tokens;
  return *d.throughput * ratio;
}

// A quantile the timed-out requests on either side leave open (timeouts_leave_open): not judged.
constexpr std::string_view kTimedOutOpen = "requests timed out leave it open";

struct MetricDef {
  const char* name;
  bool higher_is_better;
  Statistic stat;
};

std::vector<MetricDef> metrics() {
  return {{"throughput_tok_s", true, throughput},
          {"ttft_p50_ms", false, quantile_of(&PointData::ttft, 0.5)},
          {"ttft_p99_ms", false, quantile_of(&PointData::ttft, 0.99)},
          {"itl_p99_ms", false, itl_p99},
          {"e2e_p99_ms", false, quantile_of(&PointData::e2e, 0.99)}};
}

std::size_t count_for(const PointData& d, const std::string& metric) {
  if (metric == "ttft_p50_ms" || metric == "ttft_p99_ms") {
    return static_cast<std::size_t>(
        std::count_if(d.ttft.begin(), d.ttft.end(), [](double x) { return !std::isnan(x); }));
  }
  if (metric == "itl_p99_ms") {
    std::size_t n = 0;
    for (const auto& r : d.itl) n += r.size();
    return n;
  }
  return d.e2e.size();
}

// Whether the requests that timed out leave a side's quantile of `field` open: it differs with them
// at what they waited and with them never served (a side whose slowest requests timed out would
// otherwise read faster than one that served them).
bool left_open(const PointData& d, std::vector<double> PointData::*field, const std::vector<double>& waits, double q) {
  if (waits.empty()) return false;
  std::vector<double> low = pick_values(d.*field, nullptr), high = low;
  low.insert(low.end(), waits.begin(), waits.end());
  high.insert(high.end(), waits.size(), std::numeric_limits<double>::infinity());
  return compare::nearest_rank(std::move(low), q) != compare::nearest_rank(std::move(high), q);
}

bool timeouts_leave_open(const std::string& metric, const PointData& d) {
  if (metric == "ttft_p50_ms") return left_open(d, &PointData::ttft, d.ttft_waits, 0.5);
  if (metric == "ttft_p99_ms") return left_open(d, &PointData::ttft, d.ttft_waits, 0.99);
  if (metric == "e2e_p99_ms") return left_open(d, &PointData::e2e, d.e2e_waits, 0.99);
  return false;
}

compare::Change compare_metric(const MetricDef& m, const PointData& a, const PointData& b, const SweepCompareOptions& o,
                               double alpha, std::mt19937_64& rng) {
  compare::Change c;
  c.metric = m.name;
  c.n_a = count_for(a, m.name);
  c.n_b = count_for(b, m.name);
  c.a = m.stat(a, nullptr);
  c.b = m.stat(b, nullptr);
  if (!c.a || !c.b) {
    c.verdict = compare::kNotEnoughData;
    return c;
  }
  if (timeouts_leave_open(c.metric, a) || timeouts_leave_open(c.metric, b)) {
    c.verdict = kTimedOutOpen;
    return c;
  }
  c.delta = *c.b - *c.a;
  std::vector<double> deltas;
  deltas.reserve(static_cast<std::size_t>(o.resamples));
  for (int i = 0; i < o.resamples; ++i) {
    const auto ia = compare::draw_requests(a.run_start, rng), ib = compare::draw_requests(b.run_start, rng);
    const auto ra = m.stat(a, &ia), rb = m.stat(b, &ib);
    if (ra && rb) deltas.push_back(*rb - *ra);
  }
  if (deltas.size() < 100) {
    c.verdict = compare::kNotEnoughData;
    return c;
  }
  compare::judge(c, deltas, alpha, m.higher_is_better);
  return c;
}

const TrackPoint* track_at(const Point& p, const std::string& track) {
  for (const auto& tp : p.tracks) {
    if (tp.track == track) return &tp;
  }
  return nullptr;
}

const TrackSummary* summary_of(const SweepReceipt& r, const std::string& track) {
  for (const auto& t : r.tracks) {
    if (t.track == track) return &t;
  }
  return nullptr;
}

Moved moved(std::string what, std::optional<double> a, std::optional<double> b) {
  Moved m{std::move(what), a, b, {}};
  m.verdict = a && b ? (*a == *b  ? "unchanged"
                        : *b > *a ? "moved up"
                                  : "moved down")
              : a    ? "found only in A"
              : b    ? "found only in B"
                     : "in neither";
  return m;
}

std::string coordinate_text(const std::optional<double>& v) { return v ? go_float_text(*v) : "-"; }

std::string axis(const SweepComparison& c) { return c.mode == "concurrency" ? "concurrency" : "offered rate (req/s)"; }

const compare::Labels kLabels{"n A / B", "A", "B", "a", "b", false};

std::string header_sentence(const SweepComparison& c) {
  return fmt::format(
      "Change = B - A at each load point both measured, with a {:.2f}% percentile-bootstrap interval from the "
      "receipts' own samples ({} resamples of the requests; {:.0f}% over each point's {} comparisons, Bonferroni). "
      "Throughput in output tokens/s (higher is better), times in ms (nearest-rank, as the receipts).",
      c.interval_level * 100, c.resamples, (1 - (1 - c.interval_level) * kComparisonsPerPoint) * 100,
      kComparisonsPerPoint);
}

// Cached shares this far apart (0.10: ten percentage points) at one point get a note.
constexpr double kCachedShareNote = 0.10;

// The share of prompt tokens the point's responses said came from the prefix cache, where measured.
std::optional<double> measured_cached_share(const TrackPoint& tp) {
  const auto& cache = tp.evidence.cache;
  if (!cache || cache->status != "measured") return std::nullopt;
  return cache->cached_share;
}

}  // namespace

Result<SweepComparison> compare_sweeps(const SweepReceipt& a, const SweepReceipt& b, const SweepCompareOptions& o) {
  return compare_sweep_runs({&a}, {&b}, o);
}

namespace {

// The two sides, checked (each side's runs of one sweep, both of one kind of load, the same workload
// unless allowed otherwise) and named: models, workloads, the tracks compared.
Result<SweepComparison> start_comparison(const std::vector<const SweepReceipt*>& as,
                                         const std::vector<const SweepReceipt*>& bs, const SweepCompareOptions& o) {
  if (as.empty() || bs.empty()) return make_error(errc::kSweepCompare, "each side needs at least one receipt");
  const SweepReceipt& a = *as.front();
  const SweepReceipt& b = *bs.front();
  for (const auto* side : {&as, &bs}) {
    for (const SweepReceipt* r : *side) {
      if (r->workload_digest != side->front()->workload_digest || r->mode != side->front()->mode) {
        return make_error(errc::kSweepCompare,
                          fmt::format("the runs of side {} are not runs of one sweep (workload {} against {}, or "
                                      "another kind of load): pool only reruns of the same settings",
                                      side == &as ? 'A' : 'B', r->workload_digest, side->front()->workload_digest));
      }
    }
  }
  if (a.mode != b.mode) {
    return make_error(errc::kSweepCompare,
                      fmt::format("A swept {} and B {}: their points are not the same kind of load", axis_name(a.mode),
                                  axis_name(b.mode)));
  }
  SweepComparison c;
  c.mode = point_key(a.mode) == std::string("concurrency") ? "concurrency" : "rate_rps";
  c.model_a = a.model, c.model_b = b.model;
  c.workload_a = a.workload_digest, c.workload_b = b.workload_digest;
  if (a.workload_digest != b.workload_digest) {
    if (!o.allow_different_workload) {
      return make_error(errc::kSweepCompare,
                        fmt::format("the receipts' workloads differ (A {}, B {}): their points sent different "
                                    "requests, so a change may be the workload's; --allow-different-workload "
                                    "compares them anyway",
                                    a.workload_digest, b.workload_digest));
    }
    c.notes.push_back("the workloads differ (--allow-different-workload): a change may be the workload's");
  }
  if (a.tracks.empty() || b.tracks.empty()) return make_error(errc::kSweepCompare, "a receipt has no track");
  // The same track by name; one track each is compared whatever its name.
  c.track_a = a.tracks.front().track, c.track_b = b.tracks.front().track;
  if (!(a.tracks.size() == 1 && b.tracks.size() == 1)) {
    if (!summary_of(b, c.track_a)) {
      return make_error(errc::kSweepCompare, fmt::format("B has no track '{}' (A's first)", c.track_a));
    }
    c.track_b = c.track_a;
  }
  if (c.model_a != c.model_b) c.notes.push_back(fmt::format("the models differ: A {}, B {}", c.model_a, c.model_b));
  if (a.sla.ttft_p99_ms != b.sla.ttft_p99_ms || a.sla.itl_p99_ms != b.sla.itl_p99_ms) {
    c.notes.push_back("the p99 budgets differ: the boundaries are judged against different limits");
  }
  return c;
}

// Each point both sides measured, metric by metric; the points only one side has; a note where the
// prefix cache served the two sides different shares.
void compare_points(const std::vector<const SweepReceipt*>& as, const std::vector<const SweepReceipt*>& bs,
                    const SweepCompareOptions& o, double alpha, SweepComparison& c) {
  const SweepReceipt& a = *as.front();
  const SweepReceipt& b = *bs.front();
  std::mt19937_64 rng(o.seed);
  const auto defs = metrics();
  std::vector<std::string> cache_differs;  // points where the prefix cache served different shares
  for (const auto& pa : a.points) {
    const auto* ta = track_at(pa, c.track_a);
    const auto pb =
        std::find_if(b.points.begin(), b.points.end(), [&](const Point& p) { return p.coordinate == pa.coordinate; });
    const TrackPoint* tb = pb == b.points.end() ? nullptr : track_at(*pb, c.track_b);
    if (!ta || !tb) {
      c.only_a.push_back(pa.coordinate);
      continue;
    }
    PointComparison pc{pa.coordinate, ta->status, tb->status, {}};
    // Every run of a side that measured the point.
    auto runs_at = [&](const std::vector<const SweepReceipt*>& side, const std::string& track) {
      std::vector<const TrackPoint*> out;
      for (const SweepReceipt* r : side) {
        for (const auto& p : r->points) {
          if (p.coordinate != pa.coordinate) continue;
          if (const auto* tp = track_at(p, track)) out.push_back(tp);
        }
      }
      return out;
    };
    const auto da = data_of(runs_at(as, c.track_a), a.mode), db = data_of(runs_at(bs, c.track_b), b.mode);
    for (const auto& m : defs) pc.changes.push_back(compare_metric(m, da, db, o, alpha, rng));
    c.points.push_back(std::move(pc));
    const auto ca = measured_cached_share(*ta), cb = measured_cached_share(*tb);
    if (ca && cb && std::fabs(*ca - *cb) >= kCachedShareNote) {
      cache_differs.push_back(
          fmt::format("{} (A {:.0f}%, B {:.0f}%)", go_float_text(pa.coordinate), 100 * *ca, 100 * *cb));
    }
  }
  if (!cache_differs.empty()) {
    // Against a real llama-server, a second run of the same workload found its prompts in the
    // prefix cache the first had filled, and came out "better" for it.
    c.notes.push_back(fmt::format(
        "the prefix cache served different shares of the prompt tokens at {} {}: a change there may be "
        "the cache's, not the engine's; run both sweeps with --reset-cache-between-points to compare them cold",
        axis(c), fmt::join(cache_differs, ", ")));
  }
  for (const auto& pb : b.points) {
    const bool in_a =
        std::any_of(a.points.begin(), a.points.end(), [&](const Point& p) { return p.coordinate == pb.coordinate; });
    if (!in_a) c.only_b.push_back(pb.coordinate);
  }
}

// Whether the knee, the peak and the p99 boundary moved, never from rows that could not be judged.
void find_moves(const SweepReceipt& a, const SweepReceipt& b, SweepComparison& c) {
  const auto* sa = summary_of(a, c.track_a);
  const auto* sb = summary_of(b, c.track_b);
  c.moved.push_back(moved("saturation knee", sa->saturation.knee, sb->saturation.knee));
  c.moved.push_back(moved("peak", sa->peak ? std::optional(sa->peak->coordinate) : std::nullopt,
                          sb->peak ? std::optional(sb->peak->coordinate) : std::nullopt));
  c.moved.push_back(moved("p99 SLA boundary", sa->p99_boundary.coordinate, sb->p99_boundary.coordinate));
  // No finding from rows that could not be judged (issue 38: eight requests a point, every row
  // "not enough data", and still "peak 4 -> 2, moved down").
  auto judged_at = [&](std::optional<double> coordinate) {
    if (!coordinate) return false;
    for (const auto& p : c.points) {
      if (p.coordinate != *coordinate) continue;
      for (const auto& m : p.changes)
        if (m.verdict != compare::kNotEnoughData && m.verdict != kTimedOutOpen) return true;
    }
    return false;
  };
  for (auto& m : c.moved) {
    if ((m.verdict == "moved up" || m.verdict == "moved down") && !judged_at(m.a) && !judged_at(m.b)) {
      m.verdict = "not judged: not enough data at these points";
    }
  }
}

}  // namespace

Result<SweepComparison> compare_sweep_runs(const std::vector<const SweepReceipt*>& as,
                                           const std::vector<const SweepReceipt*>& bs, const SweepCompareOptions& o) {
  auto started = start_comparison(as, bs, o);
  if (!started) return started.error();
  SweepComparison& c = *started;
  c.resamples = o.resamples;
  const compare::Family family{o.family_alpha, kComparisonsPerPoint};
  c.interval_level = family.interval_level();
  compare_points(as, bs, o, family.alpha(), c);
  find_moves(*as.front(), *bs.front(), c);
  c.runs_a = as.size(), c.runs_b = bs.size();
  if (as.size() == 1 && bs.size() == 1) {
    // The intervals resample requests within one run: a rerun's own variation is not in them.
    c.notes.push_back(
        "one receipt per side: each interval resamples the requests within a run, so it leaves out how much a "
        "rerun of the same sweep varies (two identical sweeps against a real llama-server differed by half the "
        "throughput at one point); a change near that size may be run-to-run noise: give each side two or more "
        "reruns (sweep --repeat N writes them; sweep compare A1.json,A2.json B1.json,B2.json)");
  } else if (as.size() == 1 || bs.size() == 1) {
    c.notes.push_back(fmt::format(
        "{} run{} of A and {} of B: the side with one run carries no rerun's variation, so the intervals hold only "
        "part of it; give both sides two or more reruns (sweep --repeat N)",
        as.size(), as.size() == 1 ? "" : "s", bs.size()));
  } else {
    c.notes.push_back(fmt::format(
        "{} runs of A and {} of B: each interval resamples the runs and then the requests within them, so it "
        "carries how much reruns of the same sweep differ; the findings (knee, peak, boundary) are the first run's "
        "of each side",
        as.size(), bs.size()));
  }
  return c;
}

std::string sweep_comparison_md(const SweepComparison& c) {
  std::string o =
      fmt::format("# Sweep comparison: A {} against B {}\n\n{}\n", c.model_a, c.model_b, header_sentence(c));
  for (const auto& n : c.notes) o += fmt::format("\n- note: {}", n);
  if (!c.notes.empty()) o += "\n";
  o += "\n## Findings\n\n| finding | A | B | verdict |\n|---|---|---|---|\n";
  for (const auto& m : c.moved)
    o += fmt::format("| {} | {} | {} | {} |\n", m.what, coordinate_text(m.a), coordinate_text(m.b), m.verdict);
  for (const auto& p : c.points) {
    o += fmt::format("\n## {} {} (A {}, B {})\n\n{}", axis(c), go_float_text(p.coordinate), p.status_a, p.status_b,
                     compare::md_table(p.changes, kLabels));
  }
  if (!c.only_a.empty()) o += fmt::format("\nOnly in A: {} {}.\n", axis(c), fmt::join(c.only_a, ", "));
  if (!c.only_b.empty()) o += fmt::format("\nOnly in B: {} {}.\n", axis(c), fmt::join(c.only_b, ", "));
  return o;
}

std::string sweep_comparison_json(const SweepComparison& c) {
  std::vector<std::string> points;
  for (const auto& p : c.points) {
    JsonObjectWriter w;
    w.field(c.mode, p.coordinate).field("status_a", p.status_a).field("status_b", p.status_b);
    w.raw_field("changes", compare::changes_json(p.changes, kLabels));
    points.push_back(std::move(w).finish());
  }
  std::vector<std::string> moved;
  for (const auto& m : c.moved) {
    JsonObjectWriter w;
    w.field("finding", m.what).optional_field("a", m.a).optional_field("b", m.b).field("verdict", m.verdict);
    moved.push_back(std::move(w).finish());
  }
  auto numbers = [](const std::vector<double>& v) {
    std::vector<std::string> s;
    for (double x : v) s.push_back(go_float_text(x));
    return "[" + fmt::format("{}", fmt::join(s, ",")) + "]";
  };
  JsonObjectWriter w;
  w.field("schema", "modelperfobs.sweep-comparison.v1")
      .field("axis", c.mode)
      .field("model_a", c.model_a)
      .field("model_b", c.model_b)
      .field("workload_a", c.workload_a)
      .field("workload_b", c.workload_b)
      .field("track_a", c.track_a)
      .field("track_b", c.track_b)
      .field("resamples", static_cast<std::int64_t>(c.resamples))
      .field("interval_level", c.interval_level)
      .raw_field("notes", json_string_array(c.notes))
      .raw_field("findings", "[" + fmt::format("{}", fmt::join(moved, ",")) + "]")
      .raw_field("points", "[" + fmt::format("{}", fmt::join(points, ",")) + "]")
      .raw_field("only_in_a", numbers(c.only_a))
      .raw_field("only_in_b", numbers(c.only_b));
  return std::move(w).finish() + "\n";
}

std::string sweep_comparison_html(const SweepComparison& c) {
  present::Header h;
  h.title = fmt::format("Sweep comparison: {} against {}", c.model_a, c.model_b);
  h.measured = header_sentence(c);
  h.facts = {{"A", fmt::format("{} (track {}, workload {})", c.model_a, c.track_a, c.workload_a.substr(0, 19))},
             {"B", fmt::format("{} (track {}, workload {})", c.model_b, c.track_b, c.workload_b.substr(0, 19))}};
  h.warnings = c.notes;
  present::Page page(std::move(h));
  present::Table findings({"finding", "A", "B", "verdict"});
  for (const auto& m : c.moved) findings.row({m.what, coordinate_text(m.a), coordinate_text(m.b), m.verdict});
  std::vector<double> xs, ms;
  std::vector<present::Point> thr_a, thr_b, ttft_a, ttft_b;
  for (const auto& p : c.points) {
    xs.push_back(p.coordinate);
    for (const auto& x : p.changes) {
      if (x.metric == "throughput_tok_s") {
        if (x.a) thr_a.push_back({p.coordinate, *x.a});
        if (x.b) thr_b.push_back({p.coordinate, *x.b});
      }
      if (x.metric == "ttft_p50_ms") {
        if (x.a) ttft_a.push_back({p.coordinate, *x.a}), ms.push_back(*x.a);
        if (x.b) ttft_b.push_back({p.coordinate, *x.b}), ms.push_back(*x.b);
      }
    }
  }
  const auto xscale = c.mode == "concurrency" ? present::scale_for_counts(xs) : present::scale_for(xs, 8);
  present::Chart thr("Throughput, A and B", present::Axis{axis(c), xscale}, present::Axis{"tokens/s"});
  thr.add({"A", thr_a, present::Mark::kLineDots, "#1f77b4"}).add({"B", thr_b, present::Mark::kLineDots, "#ff7f0e"});
  present::Chart ttft("TTFT p50, A and B", present::Axis{axis(c), xscale}, present::Axis{"ms", present::scale_for(ms)});
  ttft.add({"A", ttft_a, present::Mark::kLineDots, "#1f77b4"}).add({"B", ttft_b, present::Mark::kLineDots, "#ff7f0e"});
  page.section("Findings", findings.html("findings") + thr.svg() + ttft.svg());
  std::string points;
  for (const auto& p : c.points) {
    points += compare::html_table(
        p.changes, kLabels,
        fmt::format("{} {} (A {}, B {})", axis(c), go_float_text(p.coordinate), p.status_a, p.status_b));
  }
  std::vector<std::string> only;
  if (!c.only_a.empty()) only.push_back(fmt::format("Only in A: {} {}.", axis(c), fmt::join(c.only_a, ", ")));
  if (!c.only_b.empty()) only.push_back(fmt::format("Only in B: {} {}.", axis(c), fmt::join(c.only_b, ", ")));
  page.section("Points", points + present::bullets(only));
  return page.html();
}

}  // namespace mpo::sweep
