// The implementation of report/analysis.hpp. The report's analysis, pure: ledger records -> per-
// group statistics, a least-squares fit of TTFT against prompt length and concurrency, and a
// ranking of likely bottlenecks with the evidence behind each (rules and thresholds:
// docs/REPORT.md).
#include "report/analysis.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <map>
#include <numeric>
#include <span>
#include <thread>
#include <tuple>

#include "report/ranking.hpp"

namespace mpo::report {
namespace {

// The ranking's thresholds and the ranking itself: report/ranking.hpp.

// Ordinary least squares over n rows of k columns, row i's column c read as x(i, c): the normal
// equations [X'X | X'y | I] solved by Gauss-Jordan with partial pivoting, which leaves beta and
// (X'X)^-1; nullopt when singular. Each coefficient's 95% interval is t(n - k) x its standard error,
// sqrt(s^2 (X'X)^-1_jj) with s^2 the residual variance over the n - k degrees of freedom left. A
// callable, so the report's fits read their columns in place instead of building a vector per row.
struct LeastSquares {
  std::vector<double> beta;
  std::vector<double> ci95;  // each coefficient's 95% half-width; empty when no degree of freedom is left
  double ss_res = 0;         // the residuals' sum of squares
};

template <typename X>
std::optional<LeastSquares> solve_least_squares(std::size_t n, std::size_t k, X x, std::span<const double> y) {
  constexpr std::size_t kMaxColumns = 16;  // the report fits three at most
  if (n == 0 || k == 0 || k > kMaxColumns) return std::nullopt;
  const std::size_t width = 2 * k + 1;
  std::vector<std::vector<double>> a(k, std::vector<double>(width, 0.0));  // [X'X | X'y | I]
  std::array<double, kMaxColumns> row{};
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t c = 0; c < k; ++c) row[c] = x(i, c);
    for (std::size_t r = 0; r < k; ++r) {
      for (std::size_t c = 0; c < k; ++c) a[r][c] += row[r] * row[c];
      a[r][k] += row[r] * y[i];
    }
  }
  for (std::size_t r = 0; r < k; ++r) a[r][k + 1 + r] = 1.0;
  // A column whose part not explained by the columns before it is below 1e-9 of its own sum of
  // squares is (up to rounding) a linear combination of them: the system is singular, not solvable.
  std::vector<double> scale(k);
  for (std::size_t c = 0; c < k; ++c) scale[c] = a[c][c];
  for (std::size_t col = 0; col < k; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < k; ++r) {
      if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
    }
    if (std::fabs(a[piv][col]) <= 1e-9 * scale[col]) return std::nullopt;
    std::swap(a[piv], a[col]);
    for (std::size_t r = 0; r < k; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (std::size_t c = col; c < width; ++c) a[r][c] -= f * a[col][c];
    }
  }
  LeastSquares out;
  out.beta.resize(k);
  for (std::size_t r = 0; r < k; ++r) out.beta[r] = a[r][k] / a[r][r];
  for (std::size_t i = 0; i < n; ++i) {
    double pred = 0;
    for (std::size_t c = 0; c < k; ++c) pred += x(i, c) * out.beta[c];
    out.ss_res += (y[i] - pred) * (y[i] - pred);
  }
  if (n > k) {
    const double s2 = out.ss_res / static_cast<double>(n - k), t = student_t_975(n - k);
    for (std::size_t r = 0; r < k; ++r) {
      out.ci95.push_back(t * std::sqrt(std::max(0.0, s2 * a[r][k + 1 + r] / a[r][r])));
    }
  }
  return out;
}

// Counts of a few distinct names (outcomes, token sources), kept as views while rows are counted
// and made a map of strings once.
class NameCounts {
 public:
  void add(std::string_view name) {
    for (auto& [k, n] : counts_) {
      if (k == name) {
        ++n;
        return;
      }
    }
    counts_.emplace_back(name, 1);
  }
  void into(std::map<std::string, std::size_t>& out) const {
    for (const auto& [k, n] : counts_) out[std::string(k)] += n;
  }

 private:
  std::vector<std::pair<std::string_view, std::size_t>> counts_;
};

std::optional<Summary> summary_of(const RowList& rs, Maybe<double> Row::*field) {
  std::vector<double> v;
  for (const auto* r : rs) {
    if (r->*field) v.push_back(*(r->*field));
  }
  return summarize(std::move(v));
}

bool varies(std::span<const double> v) {
  return v.size() >= 2 && *std::max_element(v.begin(), v.end()) > *std::min_element(v.begin(), v.end());
}

// The union of request intervals taken in row order, as busy_share() takes sorted ones; it notes
// when a row comes before the previous one (then busy_share() sorts them).
struct IntervalUnion {
  std::int64_t busy = 0, cur_s = 0, cur_e = -1;
  std::pair<std::int64_t, std::int64_t> last{INT64_MIN, INT64_MIN};
  bool sorted = true;
  void add(std::int64_t s, std::int64_t e) {
    if (std::pair(s, e) < last) sorted = false;
    last = {s, e};
    if (s > cur_e) {
      if (cur_e > cur_s) busy += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  std::int64_t total() const { return busy + (cur_e > cur_s ? cur_e - cur_s : 0); }
};

// Busy share: the union of the request intervals over the window.
double busy_share(std::int64_t busy, std::int64_t start, std::int64_t end) {
  return end > start ? static_cast<double>(busy) / static_cast<double>(end - start) : 1.0;
}
double busy_share(std::span<std::pair<std::int64_t, std::int64_t>> iv, std::int64_t start, std::int64_t end) {
  std::sort(iv.begin(), iv.end());
  IntervalUnion u;
  for (const auto& [s, e] : iv) u.add(s, e);
  return busy_share(u.total(), start, end);
}

}  // namespace

// y: the TTFT of ok requests that carry a prompt length and an in-flight count, beside them.
std::optional<TtftFit> fit_ttft(std::span<const double> y, std::span<const double> prompt,
                                std::span<const double> inflight) {
  if (y.size() < 3) return std::nullopt;
  TtftFit f;
  f.n = y.size();
  f.prompt_varies = varies(prompt);
  f.in_flight_varies = varies(inflight);
  if (f.prompt_varies) {
    f.prompt_min = *std::min_element(prompt.begin(), prompt.end());
    f.prompt_max = *std::max_element(prompt.begin(), prompt.end());
    const double range = f.prompt_max - f.prompt_min;
    if (range < kMinPromptRangeTokens || range < 0.25 * median(std::vector<double>(prompt.begin(), prompt.end()))) {
      f.prompt_range_narrow = true;
      f.prompt_varies = false;
    }
  }
  // The columns in use: the intercept (null), then prompt tokens and in-flight count as they vary.
  std::vector<const std::span<const double>*> columns;
  auto choose = [&] {
    columns = {nullptr};
    if (f.prompt_varies) columns.push_back(&prompt);
    if (f.in_flight_varies) columns.push_back(&inflight);
  };
  auto x = [&columns](std::size_t i, std::size_t c) { return columns[c] ? (*columns[c])[i] : 1.0; };
  choose();
  auto beta = solve_least_squares(y.size(), columns.size(), x, y);
  if (!beta && f.prompt_varies && f.in_flight_varies) {
    f.collinear = true;
    f.in_flight_varies = false;
    choose();
    beta = solve_least_squares(y.size(), columns.size(), x, y);
  }
  if (!beta) return std::nullopt;
  const auto& b = beta->beta;
  const double mean = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(y.size());
  double ss_tot = 0;
  for (const double v : y) ss_tot += (v - mean) * (v - mean);
  f.r2 = ss_tot > 0 ? 1.0 - beta->ss_res / ss_tot : 0.0;
  f.intervals = !beta->ci95.empty();
  auto half_width = [&](std::size_t j) { return f.intervals ? beta->ci95[j] : 0.0; };
  std::size_t k = 0;
  f.a_ms = b[k++];
  if (f.prompt_varies) {
    f.b_ci95_ms = half_width(k);
    f.b_ms_per_token = b[k++];
  }
  if (f.in_flight_varies) {
    f.c_ci95_ms = half_width(k);
    f.c_ms_per_in_flight = b[k++];
  }
  return f;
}

bool in_window(const Row& r, const Options& opts) {
  if (opts.since_us && r.started_at_us < *opts.since_us) return false;
  if (opts.until_us && r.started_at_us >= *opts.until_us) return false;
  return true;
}

Result<GroupBy> parse_group_by(std::string_view s) {
  for (std::size_t i = 0; i < std::size(kGroupByNames); ++i) {
    if (s == kGroupByNames[i]) return static_cast<GroupBy>(i);
  }
  return make_error(errc::kReportBy, fmt::format("--by {}: use model, backend, operation, path or sweep_point", s));
}

std::optional<std::vector<double>> least_squares(const std::vector<std::vector<double>>& x,
                                                 const std::vector<double>& y) {
  if (x.empty()) return std::nullopt;
  auto fit = solve_least_squares(
      x.size(), x[0].size(), [&x](std::size_t i, std::size_t c) { return x[i][c]; }, y);
  if (!fit) return std::nullopt;
  return std::move(fit->beta);
}

std::vector<GroupStats> analyse(const std::vector<ledger::LedgerRecord>& records, const Options& opts) {
  return analyse(rows_from(records, opts.by), opts);
}

bool given_up(const Row& r) {
  const auto outcome = r.outcome();
  return outcome == "client_disconnected" || outcome == "upstream_timeout";
}

std::optional<double> wait_before_first_token(const Row& r) {
  if (!r.stream || r.ttft_ms || !r.e2e_ms || !given_up(r)) return std::nullopt;
  return *r.e2e_ms;
}

std::optional<std::string_view> model_of_unnamed(const RowTable& table) {
  const auto& groups = table.groups();
  if (table.by() != GroupBy::kModel || groups.size() != 2 || groups.count(kUnknownModel) == 0) return std::nullopt;
  return groups.begin()->first == kUnknownModel ? std::next(groups.begin())->first : groups.begin()->first;
}

std::map<std::string_view, RowList> rows_by_group(const RowTable& table, const Options& opts) {
  const auto fold_into = model_of_unnamed(table);
  if (!opts.since_us && !opts.until_us && !fold_into) return table.groups();
  std::map<std::string_view, RowList> groups;
  for (const auto& [key, rows] : table.groups()) {
    const std::string_view to = fold_into && key == kUnknownModel ? *fold_into : key;
    RowList& kept = groups[to];
    for (const Row* r : rows) {
      if (in_window(*r, opts)) kept.push_back(r);
    }
  }
  std::erase_if(groups, [](const auto& g) { return g.second.empty(); });
  return groups;
}

namespace {

// What a group's statistics read of its rows, gathered in three passes over them into five scratch
// columns a worker reuses from group to group: fresh memory is dear (a first touch of each 4 KiB
// page cost more than the numbers written to it, about 3 ms per MiB on this project's CI machine),
// so the columns are few, on huge pages, and touched once per worker.
template <typename T>
using Column = std::vector<T, HugePageAllocator<T>>;
struct GroupColumns {
  std::array<Column<double>, 5> s;
  Column<std::pair<std::int64_t, std::int64_t>> intervals;  // only for rows out of start order
  void clear(std::size_t rows) {
    for (auto& v : s) {
      v.clear();
      v.reserve(rows);
    }
    intervals.clear();
  }
};

template <class T>
void put(Column<double>& v, Maybe<T> x) {
  if (x) v.push_back(static_cast<double>(*x));
}
template <class T>
void put_int(Column<double>& v, const T& x) {
  if (x) v.push_back(static_cast<double>(*x));
}

// What the first pass counts beside the latencies.
struct Tally {
  std::size_t errors = 0;
  bool cached_known = false, one_operation = true;
  std::int64_t cached_prompt_base = 0;
  NameCounts outcomes, token_sources, timing_bases;
  IntervalUnion intervals;
  std::vector<double> cut_short_tokens;  // completion tokens of the answers cut short (Row::cut_short)
};

// Pass 1: counts, the window, and the five latency summaries.
void count_and_summarise_latencies(const RowList& rs, GroupColumns& c, GroupStats& g, Tally& t) {
  c.clear(rs.size());
  // Named references, not a structured binding: clang 14 cannot capture a binding in a lambda.
  Column<double>&s0 = c.s[0], &s1 = c.s[1], &s2 = c.s[2], &s3 = c.s[3], &s4 = c.s[4];
  for (const auto* r : rs) {
    t.outcomes.add(r->outcome());
    t.token_sources.add(r->token_source());
    if (r->timing_basis_index != 0) t.timing_bases.add(r->timing_basis());
    const std::int64_t end = r->ended_at_us.value_or(r->started_at_us);
    g.window_start_us = std::min(g.window_start_us, r->started_at_us);
    g.window_end_us = std::max(g.window_end_us, end);
    t.intervals.add(r->started_at_us, end);
    if (!r->ok()) ++t.errors;
    if (r->cut_short) t.cut_short_tokens.push_back(static_cast<double>(r->completion_tokens.value_or(0)));
    (r->stream ? g.streamed : g.non_streamed)++;
    if (r->stream && r->operation == kOtherOperation) ++g.streamed_unread;
    if (r->tool_call_first) ++g.tool_call_first;
    if (r->no_output) ++g.no_output;
    t.one_operation = t.one_operation && r->operation == rs.front()->operation;
    g.prompt_tokens_total += r->prompt_tokens.value_or(0);
    g.completion_tokens_total += r->completion_tokens.value_or(0);
    if (r->cached_prompt_tokens && r->prompt_tokens) {
      t.cached_known = true;
      g.cached_prompt_tokens_total += *r->cached_prompt_tokens;
      t.cached_prompt_base += *r->prompt_tokens;
    }
    put(s0, r->ttft_ms);
    put(s1, r->tpot_ms);
    put(s2, r->itl_p95_ms);
    put(s3, r->e2e_ms);
    put(s4, r->ttfb_ms);
  }
  g.ttft_ms = summarize_in_place(s0);
  g.tpot_ms = summarize_in_place(s1);
  g.itl_p95_ms = summarize_in_place(s2);
  g.e2e_ms = summarize_in_place(s3);
  g.ttfb_ms = summarize_in_place(s4);
}

// Pass 2: the proxy's lag, prompt lengths, in-flight counts, TPOT against the in-flight count.
void summarise_load(const RowList& rs, GroupColumns& c, GroupStats& g) {
  c.clear(rs.size());
  Column<double>&s0 = c.s[0], &s1 = c.s[1], &s2 = c.s[2], &s3 = c.s[3], &s4 = c.s[4];
  for (const auto* r : rs) {
    put(s0, r->proxy_lag_ms);
    put_int(s1, r->prompt_tokens);
    put_int(s2, r->in_flight_at_start);
    if (r->tpot_ms && r->in_flight_at_start) {
      s3.push_back(static_cast<double>(*r->in_flight_at_start));
      s4.push_back(*r->tpot_ms);
    }
  }
  g.proxy_lag_ms = summarize_in_place(s0);
  g.proxy_stalls = find_proxy_stalls(rs);
  g.prompt_tokens = summarize_in_place(s1);
  g.in_flight = summarize_in_place(s2);
  if (varies(s3)) {
    auto x = [&s3](std::size_t i, std::size_t col) { return col == 0 ? 1.0 : s3[i]; };
    if (auto fit = solve_least_squares(s3.size(), 2, x, s4)) {
      g.tpot_in_flight_slope_ms = fit->beta[1];
      if (!fit->ci95.empty()) g.tpot_in_flight_slope_ci95_ms = fit->ci95[1];
    }
  }
}

// Pass 2b: the requests given up (given_up): the streamed ones before their first token (their
// waits), the clients that left once output had begun, and the bounds of TTFT's and e2e's
// quantiles they leave (for the SLOs).
void summarise_given_up(const RowList& rs, GroupColumns& c, GroupStats& g) {
  c.clear(0);
  Column<double>&waits = c.s[0], &low = c.s[1], &high = c.s[2];
  for (const auto* r : rs) {
    if (r->ok()) continue;
    if (const auto w = wait_before_first_token(*r)) waits.push_back(*w);
    if (r->e2e_ms && given_up(*r)) ++g.e2e_given_up;
    if (r->ttft_ms && r->outcome() == "client_disconnected") ++g.disconnected_after_first_token;
  }
  // e2e: a request given up at any moment ended later than its e2e says, if ever. The e2e
  // percentiles take it at its e2e (a lower bound); the upper bound takes it as never ending.
  if (g.e2e_given_up > 0) {
    Column<double>& e2e_high = c.s[3];
    for (const auto* r : rs) {
      if (r->e2e_ms) e2e_high.push_back(given_up(*r) ? kNeverMs : *r->e2e_ms);
    }
    g.e2e_high_ms = summarize_in_place(e2e_high);
  }
  if (waits.empty()) return;
  for (const auto* r : rs) {
    if (r->ttft_ms) {
      low.push_back(*r->ttft_ms);
      high.push_back(*r->ttft_ms);
    }
  }
  for (const double w : waits) {
    low.push_back(w);
    high.push_back(kNeverMs);
  }
  g.ttft_low_ms = summarize_in_place(low);
  g.ttft_high_ms = summarize_in_place(high);
  g.left_before_first_token_ms = summarize_in_place(waits);
}

// Pass 3: the TTFT fit's columns (ok rows with TTFT, prompt and in-flight count) and, left in
// columns 3 and 4 for the ranking, what TTFT exceeds and what a slow prefill of its prompt would explain.
void fit_ttft_of(const RowList& rs, GroupColumns& c, GroupStats& g) {
  c.clear(rs.size());
  Column<double>&s0 = c.s[0], &s1 = c.s[1], &s2 = c.s[2], &s3 = c.s[3], &s4 = c.s[4];
  for (const auto* r : rs) {
    if (!r->ok() || !r->ttft_ms) continue;
    const double allowance =
        kStepAllowanceMs + kSlowPrefillMsPerToken * static_cast<double>(r->prompt_tokens.value_or(0));
    s3.push_back(*r->ttft_ms - allowance);
    s4.push_back(std::min(*r->ttft_ms, allowance));
    if (r->prompt_tokens && r->in_flight_at_start) {
      s0.push_back(*r->ttft_ms);
      s1.push_back(static_cast<double>(*r->prompt_tokens));
      s2.push_back(static_cast<double>(*r->in_flight_at_start));
    }
  }
  g.fit = fit_ttft(s0, s1, s2);
}

// Rates over the window, the cached share, the error rate and how busy the window was.
void derive_window_figures(const RowList& rs, GroupColumns& c, Tally& t, GroupStats& g) {
  t.outcomes.into(g.outcomes);
  t.token_sources.into(g.token_sources);
  t.timing_bases.into(g.timing_bases);
  g.window_s = static_cast<double>(g.window_end_us - g.window_start_us) / 1e6;
  g.requests_per_s = g.window_s > 0 ? static_cast<double>(g.requests) / g.window_s : 0;
  if (g.window_s > 0 && g.completion_tokens_total > 0) {
    g.output_tokens_per_s = static_cast<double>(g.completion_tokens_total) / g.window_s;
  }
  if (t.cached_known && t.cached_prompt_base > 0) {
    g.cached_share = static_cast<double>(g.cached_prompt_tokens_total) / static_cast<double>(t.cached_prompt_base);
  }
  g.error_rate = static_cast<double>(t.errors) / static_cast<double>(g.requests);
  g.failure_rate = static_cast<double>(t.errors - g.disconnected_after_first_token) / static_cast<double>(g.requests);
  if (t.intervals.sorted) {  // ledger rows usually come in start order
    g.busy_share = busy_share(t.intervals.total(), g.window_start_us, g.window_end_us);
  } else {
    c.intervals.reserve(rs.size());
    for (const auto* r : rs) c.intervals.emplace_back(r->started_at_us, r->ended_at_us.value_or(r->started_at_us));
    g.busy_share = busy_share(c.intervals, g.window_start_us, g.window_end_us);
  }
}

// The failed rows by outcome, status and error type, most first (ties in that order).
std::vector<FailureKind> failure_kinds(const RowList& rs, const FailureIndex& index) {
  std::map<std::tuple<std::string_view, int, std::string_view>, FailureKind> kinds;
  for (const auto* r : rs) {
    if (r->ok()) continue;
    const auto it = index.find(r);
    const FailureDetail d = it == index.end() ? FailureDetail{} : it->second;
    FailureKind& k = kinds[{r->outcome(), d.http_status, d.error_type}];
    if (k.requests++ == 0) {
      k.outcome = std::string(r->outcome());
      k.http_status = d.http_status;
      k.error_type = std::string(d.error_type);
    }
    if (k.example_message.empty()) k.example_message = std::string(d.error_message);
  }
  std::vector<FailureKind> out;
  for (auto& [key, k] : kinds) out.push_back(std::move(k));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.requests > b.requests; });
  return out;
}

// The split from the engine's spans joined to the lines: over the streamed requests, or where the
// group has none, over those not streamed (their first token where the engine's decode began, and
// the engine's decode per token for `g.engine_tpot_ms`).
std::optional<EngineSplit> traced_split(const RowList& rs, const std::vector<EngineTimes>& all,
                                        const std::string& source, GroupStats& g) {
  const auto of_streamed = static_cast<std::size_t>(
      std::count_if(rs.begin(), rs.end(), [](const Row* r) { return r->ok() && r->ttft_ms.has_value(); }));
  const bool not_streamed = of_streamed == 0;
  std::vector<EngineTimes> times;
  std::vector<double> per_token;
  for (const auto& t : all) {
    if (t.not_streamed != not_streamed) continue;
    times.push_back(t);
    if (t.decode_per_token_ms) per_token.push_back(*t.decode_per_token_ms);
  }
  const std::size_t of =
      not_streamed ? static_cast<std::size_t>(std::count_if(
                         rs.begin(), rs.end(),
                         [](const Row* r) { return r->ok() && (!r->stream || r->tool_call_first) && r->e2e_ms; }))
                   : of_streamed;
  auto e = engine_split_of(times, of, not_streamed ? source + " (not streamed)" : source);
  if (e && not_streamed) {
    e->not_streamed = true;
    if (!g.tpot_ms) g.engine_tpot_ms = summarize(per_token);
  }
  return e;
}

// What only the whole group is judged on, not a band of it: its failures' kinds, its first tokens
// held behind longer prompts (report/held_prompts.hpp) and its speculative decoding
// (report/speculation.hpp).
struct WholeGroup {
  const FailureIndex* failures = nullptr;
  std::vector<HeldPrompts> held;
  std::optional<Speculation> speculation;
  std::optional<EngineQueueTime> engine_queue_time;
};

// The rows' figures and their ranking, without the views by turn and by API.
// `overlap`: the group's decodes against its prompts (report/interference.hpp), so that a band of
// it sees the prompts of the rest.
GroupStats analyse_rows(std::string_view key, const RowList& rs, GroupColumns& c, const Options& opts,
                        const PrefillOverlap& overlap, WholeGroup whole = {}) {
  GroupStats g;
  g.key = std::string(key);
  g.requests = rs.size();
  g.window_start_us = rs.front()->started_at_us;
  g.window_end_us = rs.front()->ended_at_us.value_or(rs.front()->started_at_us);
  Tally t;
  count_and_summarise_latencies(rs, c, g, t);
  summarise_load(rs, c, g);
  summarise_given_up(rs, c, g);
  fit_ttft_of(rs, c, g);
  derive_window_figures(rs, c, t, g);
  if (whole.failures && g.error_rate > 0) g.failures = failure_kinds(rs, *whole.failures);
  g.cut_short = t.cut_short_tokens.size();
  g.cut_short_tokens = summarize(std::move(t.cut_short_tokens));
  g.engine_split = engine_split_of(rs);
  if (g.engine_split && g.engine_split->not_streamed && !g.tpot_ms) {
    std::vector<double> per_token;
    for (const auto* r : rs) {
      if (const auto pace = engine_decode_per_token_ms(*r)) per_token.push_back(*pace);
    }
    g.engine_tpot_ms = summarize(per_token);
  }
  if (const auto tr = opts.traced.find(key); !g.engine_split && tr != opts.traced.end()) {
    g.engine_split = traced_split(rs, tr->second, opts.traced_source, g);
  }
  g.interference = decode_interference(rs, overlap);
  g.slow_decode = slow_decode_at_times(rs, kTpotThresholdMs, &overlap);
  g.held_prompts = std::move(whole.held);
  g.engine_queue_time = std::move(whole.engine_queue_time);
  g.speculation = std::move(whole.speculation);
  g.ranking = rank(g, c.s[3], c.s[4], opts.engine ? &*opts.engine : nullptr);
  g.one_operation = t.one_operation;
  return g;
}

// The likely bottleneck of each band of turns (report/turns.hpp, turn_bands), ranked from the band's
// own rows alone: the engine's gauges cover the whole window, so they are left out.
void judge_turn_bands(std::string_view key, const RowList& rs, TurnView& v, GroupColumns& c, const Options& opts,
                      const PrefillOverlap& overlap) {
  Options band_opts;
  band_opts.by = opts.by;
  for (const auto& [first, last] : turn_bands(v)) {
    RowList band;
    for (const Row* r : rs) {
      if (r->turn >= first && r->turn <= last) band.push_back(r);
    }
    if (band.empty()) continue;
    const GroupStats b = analyse_rows(key, band, c, band_opts, overlap);
    TurnBand out;
    out.first = first;
    out.last = last;
    out.requests = band.size();
    if (!b.ranking.empty()) {
      out.candidate = b.ranking.front().name;
      out.score = b.ranking.front().score;
      if (!b.ranking.front().evidence.empty()) out.evidence = b.ranking.front().evidence.front();
    }
    v.bands.push_back(std::move(out));
  }
}

// Each band of prompt lengths (report/shapes.hpp), where the group mixes them, with its own likely
// bottleneck where it has requests enough, ranked as turn bands are.
void judge_prompt_bands(std::string_view key, const RowList& rs, GroupStats& g, GroupColumns& c, const Options& opts,
                        const PrefillOverlap& overlap) {
  Options band_opts;
  band_opts.by = opts.by;
  for (auto& [band, band_rows] : prompt_length_bands(rs)) {
    if (band_rows.size() >= kMinBandRequests) {
      const GroupStats b = analyse_rows(key, band_rows, c, band_opts, overlap);
      if (!b.ranking.empty()) {
        band.candidate = b.ranking.front().name;
        band.score = b.ranking.front().score;
        if (!b.ranking.front().evidence.empty()) band.evidence = b.ranking.front().evidence.front();
      }
    }
    g.prompt_bands.push_back(std::move(band));
  }
}

// The group's first tokens held behind longer prompts, from the rows' own prompt times (llama.cpp),
// else from the engine's spans (`report --traces`).
std::vector<HeldPrompts> held_prompts_of(std::string_view key, const RowList& rs, const Options& opts) {
  auto windows = prompt_windows_of(rs);
  if (!windows.empty()) return held_prompts(windows, "llama.cpp timings.prompt_ms");
  const auto tr = opts.traced.find(key);
  if (tr == opts.traced.end()) return {};
  for (const auto& e : tr->second) {
    if (e.prefill_end_us <= 0 || e.prefill_ms <= 0 || e.prompt_tokens < 0) continue;
    windows.push_back(PromptWindow{e.prefill_end_us - static_cast<std::int64_t>(e.ttft_ms * 1000), e.ttft_ms,
                                   e.prefill_ms, e.prompt_tokens});
  }
  return held_prompts(windows, opts.traced_source);
}

GroupStats analyse_group(std::string_view key, const RowList& rs, GroupColumns& c, const Options& opts,
                         const RowTable& table) {
  std::vector<std::pair<std::int64_t, std::int64_t>> traced;
  if (const auto tr = opts.traced.find(key); tr != opts.traced.end()) {
    for (const auto& e : tr->second) {
      if (e.prefill_end_us > 0 && e.prefill_ms > 0) {
        traced.emplace_back(e.prefill_end_us - static_cast<std::int64_t>(e.prefill_ms * 1000), e.prefill_end_us);
      }
    }
  }
  const PrefillOverlap overlap(rs, traced, opts.traced_source);
  GroupStats g = analyse_rows(key, rs, c, opts, overlap,
                              {&table.failures(), held_prompts_of(key, rs, opts), speculation_of(rs, table.drafts()),
                               opts.engine ? opts.engine->queue_time : std::nullopt});
  TurnContext turn_context;
  turn_context.sessions = &table.sessions();
  if (opts.engine) turn_context.kv_usage = &opts.engine->kv_usage;
  g.turns = turns_of(rs, turn_context);
  if (g.turns) judge_turn_bands(key, rs, *g.turns, c, opts, overlap);
  judge_prompt_bands(key, rs, g, c, opts, overlap);
  if (!g.one_operation) {
    std::map<std::uint8_t, RowList> by_api;
    for (const auto* r : rs) by_api[r->operation].push_back(r);
    for (const auto& [op, api_rows] : by_api) {
      g.apis.push_back(ApiStats{operation_name(op), api_rows.size(), summary_of(api_rows, &Row::ttft_ms),
                                summary_of(api_rows, &Row::tpot_ms), summary_of(api_rows, &Row::itl_p95_ms),
                                summary_of(api_rows, &Row::e2e_ms)});
    }
  }
  return g;
}

}  // namespace

// Groups are independent: they are analysed on up to as many threads as the machine has cores,
// each result in its group's slot, so the output does not depend on scheduling.
std::vector<OtherStats> analyse_others(const RowTable& table, const Options& opts) {
  std::vector<OtherStats> out;
  for (const auto& [operation, all] : table.others()) {
    RowList rs;
    for (const Row* r : all) {
      if (in_window(*r, opts)) rs.push_back(r);
    }
    if (rs.empty()) continue;
    OtherStats o;
    o.operation = std::string(operation);
    o.requests = rs.size();
    std::size_t errors = 0;
    NameCounts outcomes;
    for (const Row* r : rs) {
      outcomes.add(r->outcome());
      if (!r->ok()) ++errors;
      o.prompt_tokens_total += r->prompt_tokens.value_or(0);
    }
    outcomes.into(o.outcomes);
    o.error_rate = static_cast<double>(errors) / static_cast<double>(rs.size());
    o.e2e_ms = summary_of(rs, &Row::e2e_ms);
    o.ttfb_ms = summary_of(rs, &Row::ttfb_ms);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<GroupStats> analyse(const RowTable& table, const Options& opts) {
  // Only with --since/--until, or rows of no model name to count with the only model named.
  const auto fold_into = model_of_unnamed(table);
  const bool regroup = opts.since_us || opts.until_us || fold_into;
  std::map<std::string_view, RowList> regrouped;
  if (regroup) regrouped = rows_by_group(table, opts);
  const auto& groups = regroup ? regrouped : table.groups();
  std::vector<std::pair<std::string_view, const RowList*>> work;
  for (const auto& [key, rs] : groups) work.emplace_back(key, &rs);
  std::vector<GroupStats> out(work.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    GroupColumns columns;  // reused from group to group: its memory is touched once per thread
    for (std::size_t i = next++; i < work.size(); i = next++) {
      out[i] = analyse_group(work[i].first, *work[i].second, columns, opts, table);
    }
  };
  const unsigned threads = std::min<std::size_t>(work.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (fold_into) {
    const auto& unnamed = table.groups().at(kUnknownModel);
    for (GroupStats& g : out) {
      if (g.key != *fold_into) continue;
      g.unnamed_model_requests = static_cast<std::size_t>(
          std::count_if(unnamed.begin(), unnamed.end(), [&](const Row* r) { return in_window(*r, opts); }));
    }
  }
  const auto others = analyse_others(table, opts);
  for (GroupStats& g : out) bound_transport_by_calls_that_generate_nothing(g, others);
  if (opts.engine && opts.engine->spec_acceptance_rate) {
    const EngineEvidence& e = *opts.engine;
    const std::string line = fmt::format(
        "the engine decoded speculatively over {}: {:.1f}% of draft tokens accepted{} ({}): TPOT follows acceptance, "
        "not only the cost of a decode step",
        e.window, 100 * *e.spec_acceptance_rate,
        e.spec_mean_accepted_length ? fmt::format(", {:.2f} tokens per verification step", *e.spec_mean_accepted_length)
                                    : "",
        e.spec_source);
    for (GroupStats& g : out) {
      for (Candidate& c : g.ranking) {
        if (c.name == "decode") c.evidence.push_back(line);
      }
    }
  }
  return out;
}

Result<std::vector<Slo>> parse_slos(std::string_view text) {
  static const char* kKnown[] = {"ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p95_ms",
                                 "tpot_p99_ms", "e2e_p95_ms",  "e2e_p99_ms",  "error_rate",  "failure_rate"};
  std::vector<Slo> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      return make_error(errc::kReportSlo, fmt::format("--slo item '{}' needs NAME=LIMIT", item));
    const std::string name(item.substr(0, eq));
    if (std::find(std::begin(kKnown), std::end(kKnown), name) == std::end(kKnown)) {
      return make_error(errc::kReportSlo, fmt::format("unknown SLO '{}': use ttft_p50/p95/p99_ms, tpot_p50/p95/p99_ms, "
                                                      "e2e_p95/p99_ms, error_rate or failure_rate",
                                                      name));
    }
    char* end = nullptr;
    const std::string value(item.substr(eq + 1));
    const double limit = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(limit >= 0)) {
      return make_error(errc::kReportSlo, fmt::format("--slo {}: '{}' is not a non-negative number", name, value));
    }
    out.push_back({name, limit});
  }
  return out;
}

namespace {

// An SLO on a quantile that `n` requests given up `when` ("before the first token") leave between
// two bounds: violated when even the lower one is over the limit, met when even the upper one is
// within it, otherwise not measurable.
void judge_bounded(SloResult& r, std::optional<double> low, std::optional<double> high, std::size_t n,
                   std::string_view when) {
  const std::string_view s = n == 1 ? "" : "s";
  if (low && *low > r.limit) {
    r.value = low;
    r.at_least = true;
    r.note = fmt::format("at least: {} request{} given up {} counted at their waits", n, s, when);
  } else if (high && *high <= r.limit) {
    r.value = high;
    r.note = fmt::format("with {} request{} given up {} counted as never served", n, s, when);
  } else {
    r.note = fmt::format("{} request{} given up {} could lie on either side of it", n, s, when);
  }
}

}  // namespace

std::vector<SloResult> evaluate_slos(const std::vector<GroupStats>& groups, const std::vector<Slo>& slos) {
  std::vector<SloResult> out;
  for (const auto& g : groups) {
    for (const auto& s : slos) {
      SloResult r{g.key, s.name, s.limit, std::nullopt, false};
      auto pick = [&](const std::optional<Summary>& sum, std::string_view q) -> std::optional<double> {
        if (!sum) return std::nullopt;
        if (q == "p50") return sum->p50;
        if (q == "p95") return sum->p95;
        return sum->p99;
      };
      const std::string q = s.name.substr(s.name.find('_') + 1, 3);
      if (s.name == "error_rate") {
        r.value = g.error_rate;
      } else if (s.name == "failure_rate") {
        r.value = g.failure_rate;
      } else if (s.name.rfind("ttft", 0) == 0 && g.left_before_first_token_ms) {
        // Requests given up before their first token had a TTFT longer than their wait: the
        // quantile lies between the one with each at its wait and the one with each never served.
        judge_bounded(r, pick(g.ttft_low_ms, q), pick(g.ttft_high_ms, q), g.left_before_first_token_ms->n,
                      "before the first token");
      } else if (s.name.rfind("e2e", 0) == 0 && g.e2e_given_up > 0) {
        judge_bounded(r, pick(g.e2e_ms, q), pick(g.e2e_high_ms, q), g.e2e_given_up, "before the end");
      } else {
        if (s.name.rfind("ttft", 0) == 0) r.value = pick(g.ttft_ms, q);
        if (s.name.rfind("tpot", 0) == 0) r.value = pick(g.tpot_ms, q);
        if (s.name.rfind("e2e", 0) == 0) r.value = pick(g.e2e_ms, q);
      }
      r.violated = !r.value || *r.value > s.limit;  // unmeasurable is not a pass
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace mpo::report
