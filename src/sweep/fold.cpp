// The implementation of sweep/fold.hpp. Folding a point's samples into fak's ServingStats
// (docs/FAK.md 6.4), and the evidence this project adds beside them: the generator's own lateness,
// bootstrap confidence intervals on the p99s, errors by class, achieved rate.
#include "sweep/fold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/json.hpp"
#include "ledger/observation.hpp"
#include "openai/chunk.hpp"

namespace mpo::sweep {
namespace {

std::vector<const loadgen::Sample*> measured(std::span<const loadgen::Sample> samples) {
  std::vector<const loadgen::Sample*> out;
  for (const auto& s : samples) {
    if (!s.warmup) out.push_back(&s);
  }
  return out;
}

QuantileMetric quantile_metric(std::vector<double> values, std::string_view reason) {
  QuantileMetric q;
  if (values.empty()) {
    q.reason = std::string(reason);
    return q;
  }
  std::sort(values.begin(), values.end());
  q.status = kMeasured;
  q.unit = "ms";
  q.p50 = nearest_rank(values, 0.50);
  q.p90 = nearest_rank(values, 0.90);
  q.p95 = nearest_rank(values, 0.95);
  q.p99 = nearest_rank(values, 0.99);
  return q;
}

}  // namespace

double nearest_rank(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  auto idx = static_cast<std::int64_t>(std::ceil(q * static_cast<double>(sorted.size()))) - 1;
  idx = std::clamp<std::int64_t>(idx, 0, static_cast<std::int64_t>(sorted.size()) - 1);
  return loadgen::round_ms(sorted[static_cast<std::size_t>(idx)]);
}

std::vector<double> ttft_values(std::span<const loadgen::Sample> samples) {
  std::vector<double> v;
  for (const auto* s : measured(samples)) {
    if (const auto first = loadgen::first_token_ms(*s); s->ok && first) v.push_back(*first);
  }
  return v;
}

std::vector<double> itl_values(std::span<const loadgen::Sample> samples) {
  std::vector<double> v;
  for (const auto* s : measured(samples)) {
    if (s->ok) v.insert(v.end(), s->itl_ms.begin(), s->itl_ms.end());
  }
  return v;
}

std::vector<double> e2e_values(std::span<const loadgen::Sample> samples) {
  std::vector<double> v;
  for (const auto* s : measured(samples)) {
    if (s->ok) v.push_back(s->end_to_end_ms);
  }
  return v;
}

ServingStats fold_samples(std::span<const loadgen::Sample> samples, const FoldOptions& opts) {
  const auto m = measured(samples);
  std::int64_t ok = 0, failed = 0;
  std::vector<double> tpot;
  double first_send = std::numeric_limits<double>::infinity();
  double last_end = -std::numeric_limits<double>::infinity();
  std::string basis;
  bool mixed = false;
  std::int64_t tokens = 0;
  bool all_exact = true;
  std::int64_t exact_sum = 0, slo_exact_sum = 0, within_slo = 0;
  for (const auto* s : m) {
    first_send = std::min(first_send, s->sent_offset_ms);
    last_end = std::max(last_end, s->sent_offset_ms + s->end_to_end_ms);
    if (!s->ok) {
      ++failed;
      continue;
    }
    ++ok;
    if (s->tpot_ms) tpot.push_back(*s->tpot_ms);
    if (basis.empty())
      basis = s->output_token_count_basis;
    else if (basis != s->output_token_count_basis)
      mixed = true;
    tokens += s->output_token_estimate;
    const bool in_slo = opts.slo_ms > 0 && s->end_to_end_ms <= opts.slo_ms;
    if (in_slo) ++within_slo;
    if (s->output_tokens_exact) {
      exact_sum += *s->output_tokens_exact;
      if (in_slo) slo_exact_sum += *s->output_tokens_exact;
    } else {
      all_exact = false;
    }
  }
  const double wall_s = m.empty() ? 0 : (last_end - first_send) / 1000.0;
  const std::string token_basis = ok == 0 ? "stream_content_events" : mixed ? "mixed" : basis;

  ServingStats o;
  o.requests = static_cast<std::int64_t>(m.size());
  o.ok = ok;
  o.failed = failed;
  const auto tool_call_first = std::count_if(
      m.begin(), m.end(), [](const loadgen::Sample* s) { return s->ok && s->ttft_ms && !loadgen::first_token_ms(*s); });
  if (tool_call_first > 0) o.tool_call_first = tool_call_first;
  const auto no_output = std::count_if(m.begin(), m.end(), [](const loadgen::Sample* s) {
    return s->ok && !s->ttft_ms && s->output_tokens_exact.value_or(0) > 0;
  });
  if (no_output > 0) o.no_output = no_output;
  o.ttft_ms = quantile_metric(ttft_values(samples), tool_call_first > 0 && tool_call_first == ok
                                                        ? "every answer began with a tool call: no first token dated"
                                                        : "no streaming first-token measurements");
  o.itl_ms = quantile_metric(itl_values(samples), "no inter-token measurements");
  o.tpot_ms = quantile_metric(std::move(tpot), "no TPOT measurements");
  o.end_to_end_ms = quantile_metric(e2e_values(samples), "no successful request latencies");
  o.throughput_tok_s = tokens > 0 && wall_s > 0
                           ? ScalarMetric::of(static_cast<double>(tokens) / wall_s,
                                              (mixed ? std::string("output_token_estimate") : token_basis) + "/s")
                           : ScalarMetric::missing("no output tokens measured");
  if (opts.slo_ms <= 0) {
    o.goodput_rps = ScalarMetric::missing("no positive end-to-end SLO configured");
    o.goodput_tok_s = ScalarMetric::missing("no positive end-to-end SLO configured");
  } else if (ok == 0 || wall_s <= 0) {
    o.goodput_rps = ScalarMetric::missing("no successful requests");
    o.goodput_tok_s = ScalarMetric::missing("no successful requests");
  } else {
    o.goodput_rps = ScalarMetric::of(static_cast<double>(within_slo) / wall_s, "requests/s");
    o.goodput_tok_s = all_exact
                          ? ScalarMetric::of(static_cast<double>(slo_exact_sum) / wall_s, "usage.completion_tokens/s")
                          : ScalarMetric::missing("successful requests lack exact output token counts");
  }
  o.prefix_cache_hit_rate =
      opts.prefix_cache_hit_rate.value_or(ScalarMetric::missing("no prefix-cache counters scraped"));
  o.token_count_basis = token_basis;
  if (wall_s > 0) o.wall_seconds = wall_s;
  if (opts.slo_ms > 0) o.goodput_slo_seconds = opts.slo_ms / 1000.0;
  if (ok > 0 && all_exact) {
    o.successful_output_tokens_exact = exact_sum;
    if (opts.slo_ms > 0) o.slo_successful_output_tokens_exact = slo_exact_sum;
  }
  const std::int64_t in_flight = max_in_flight(samples);
  if (in_flight > 0) {
    o.observed_max_in_flight = in_flight;
    o.observed_in_flight_basis = "client_http";
  }
  return o;
}

std::int64_t max_in_flight(std::span<const loadgen::Sample> samples) {
  // Ends sort before starts at the same instant: a request that finished as another was sent was
  // not in flight with it.
  std::vector<std::pair<double, int>> events;
  events.reserve(samples.size() * 2);
  for (const auto& s : samples) {
    events.emplace_back(s.sent_offset_ms, +1);
    events.emplace_back(s.sent_offset_ms + s.end_to_end_ms, -1);
  }
  std::sort(events.begin(), events.end());
  std::int64_t now = 0, peak = 0;
  for (const auto& [t, d] : events) {
    now += d;
    peak = std::max(peak, now);
  }
  return peak;
}

std::optional<Interval> bootstrap_p99(std::span<const double> values, std::uint64_t seed, int resamples, double level) {
  if (values.size() < 2 || resamples < 10) return std::nullopt;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
  std::vector<double> draw(values.size()), p99s;
  p99s.reserve(static_cast<std::size_t>(resamples));
  const auto k = static_cast<std::size_t>(
      std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(0.99 * static_cast<double>(values.size()))) - 1, 0,
                               static_cast<std::int64_t>(values.size()) - 1));
  for (int r = 0; r < resamples; ++r) {
    for (auto& d : draw) d = values[pick(rng)];
    std::nth_element(draw.begin(), draw.begin() + static_cast<std::ptrdiff_t>(k), draw.end());
    p99s.push_back(draw[k]);
  }
  std::sort(p99s.begin(), p99s.end());
  return Interval{nearest_rank(p99s, (1 - level) / 2), nearest_rank(p99s, (1 + level) / 2)};
}

GeneratorEvidence generator_evidence(std::span<const loadgen::Sample> samples, const GeneratorFigures& g) {
  // Over the measured requests: the first round of a closed loop is all due at once and one thread
  // sends it in turn; it is the warm-up, and what it says about start-up is not the steady state.
  std::vector<double> lateness;
  for (const auto& s : samples) {
    if (!s.warmup) lateness.push_back(loadgen::send_lateness_ms(s));
  }
  std::sort(lateness.begin(), lateness.end());
  GeneratorEvidence o;
  o.lateness_bound_ms = g.lateness_bound_ms;
  if (!lateness.empty()) {
    o.send_lateness_p50_ms = nearest_rank(lateness, 0.50);
    o.send_lateness_p99_ms = nearest_rank(lateness, 0.99);
    o.send_lateness_max_ms = loadgen::round_ms(lateness.back());
  }
  // Rounded first, so that a verifier reading them back derives the same share.
  o.cpu_seconds = std::round(g.cpu_seconds * 1e6) / 1e6;
  o.wall_seconds = std::round(g.wall_seconds * 1e6) / 1e6;
  if (o.wall_seconds > 0) o.cpu_share = std::round(o.cpu_seconds / o.wall_seconds * 1e4) / 1e4;
  return o;
}

ConfidenceEvidence confidence_evidence(std::span<const loadgen::Sample> samples, std::uint64_t seed) {
  ConfidenceEvidence o;
  o.method = "percentile-bootstrap-of-nearest-rank-p99";
  o.resamples = 1000;
  o.level = 0.95;
  o.seed = seed;
  auto interval = [&](const std::vector<double>& v, std::uint64_t salt) -> std::optional<BootstrapInterval> {
    if (auto ci = bootstrap_p99(v, seed ^ salt)) return BootstrapInterval{ci->low, ci->high};
    return std::nullopt;
  };
  o.ttft_p99_ms = interval(ttft_values(samples), 1);
  o.itl_p99_ms = interval(itl_values(samples), 2);
  o.end_to_end_p99_ms = interval(e2e_values(samples), 3);
  return o;
}

namespace {

// The window from the first to the last measured send; false when there is none.
bool steady_window(const std::vector<const loadgen::Sample*>& m, SteadyStateEvidence& o, double& from, double& to) {
  if (m.empty()) {
    o.status = kNotMeasured;
    o.reason = "no measured request";
    return false;
  }
  from = to = m.front()->sent_offset_ms;
  for (const auto* s : m) {
    from = std::min(from, s->sent_offset_ms);
    to = std::max(to, s->sent_offset_ms);
  }
  o.window_start_offset_ms = from;
  o.window_end_offset_ms = to;
  return true;
}

}  // namespace

SteadyStateEvidence steady_state_evidence(std::span<const loadgen::Sample> samples) {
  const auto m = measured(samples);
  SteadyStateEvidence o;
  o.rule = std::string(kSteadyStateRule);
  double from = 0, to = 0;
  if (!steady_window(m, o, from, to)) return o;
  std::int64_t completed = 0;
  double tokens = 0;
  for (const auto* s : m) {
    if (!s->ok || s->output_token_estimate <= 0) continue;
    const double first = s->sent_offset_ms + s->ttft_ms.value_or(0), end = s->sent_offset_ms + s->end_to_end_ms;
    if (end >= from && end <= to) ++completed;
    // The first token when it came; the others spread evenly from it to the end.
    if (first >= from && first <= to) tokens += 1;
    const double rest = static_cast<double>(s->output_token_estimate - 1);
    if (rest > 0 && end > first)
      tokens += rest * std::max(0.0, std::min(end, to) - std::max(first, from)) / (end - first);
  }
  o.completed_requests = completed;
  o.output_tokens = std::llround(tokens);
  if (to <= from || tokens <= 0) {
    o.status = kNotMeasured;
    o.reason = "no output token came while the load was still being applied";
    return o;
  }
  o.status = kMeasured;
  o.throughput_tok_s = tokens / ((to - from) / 1000.0);
  return o;
}

SteadyStateEvidence steady_state_by_completions(std::span<const loadgen::Sample> samples) {
  const auto m = measured(samples);
  SteadyStateEvidence o;
  o.rule = std::string(kSteadyStateRuleByCompletions);
  double from = 0, to = 0;
  if (!steady_window(m, o, from, to)) return o;
  std::int64_t completed = 0, tokens = 0;
  for (const auto* s : m) {
    const double end = s->sent_offset_ms + s->end_to_end_ms;
    if (s->ok && end >= from && end <= to) {
      ++completed;
      tokens += s->output_token_estimate;
    }
  }
  o.completed_requests = completed;
  o.output_tokens = tokens;
  if (to <= from || completed == 0) {
    o.status = kNotMeasured;
    o.reason = "no measured request completed while the load was still being applied";
    return o;
  }
  o.status = kMeasured;
  o.throughput_tok_s = static_cast<double>(tokens) / ((to - from) / 1000.0);
  return o;
}

std::map<std::string, std::int64_t> errors_by_class(std::span<const loadgen::Sample> samples) {
  std::map<std::string, std::int64_t> counts;
  for (const auto& s : samples) {
    if (!s.warmup && !s.ok) ++counts[s.error_class.empty() ? "unknown" : s.error_class];
  }
  return counts;
}

std::optional<TokenEvidence> token_evidence(std::span<const loadgen::Sample> samples) {
  std::vector<std::int64_t> in, out;
  TokenEvidence t;
  for (const auto& s : samples) {
    if (s.warmup || !s.ok || !s.usage) continue;
    if (s.usage->prompt_tokens) in.push_back(*s.usage->prompt_tokens);
    if (s.usage->completion_tokens) out.push_back(*s.usage->completion_tokens);
    if (s.max_tokens) {
      t.max_tokens_asked = std::max(t.max_tokens_asked.value_or(0), *s.max_tokens);
      const auto reason = s.finish_reason.empty() ? std::nullopt : std::optional<std::string_view>(s.finish_reason);
      const bool cut = ledger::answer_cut_short(reason, s.max_tokens, s.usage->completion_tokens, "usage");
      t.cut_short = t.cut_short.value_or(0) + (cut ? 1 : 0);
    }
  }
  if (in.empty() && out.empty()) return std::nullopt;
  t.requests = static_cast<std::int64_t>(std::max(in.size(), out.size()));
  auto three = [](std::vector<std::int64_t>& v, std::optional<std::int64_t>& lo, std::optional<std::int64_t>& mid,
                  std::optional<std::int64_t>& hi) {
    if (v.empty()) return;
    std::sort(v.begin(), v.end());
    lo = v.front();
    mid = v[(v.size() + 1) / 2 - 1];  // nearest rank
    hi = v.back();
  };
  three(in, t.input_min, t.input_p50, t.input_max);
  three(out, t.output_min, t.output_p50, t.output_max);
  return t;
}

namespace {

// The server's own message in an error body, as the proxy reads one (openai/chunk.hpp: OpenAI's
// and vLLM's error shapes, Anthropic's); else the text as it is.
std::string server_message(const std::string& text) {
  std::string message = openai::parse_response_body(text).error_message;
  return message.empty() ? text : message;
}

}  // namespace

std::vector<std::string> failure_lines(std::span<const loadgen::Sample> samples) {
  std::map<std::pair<int, std::string>, std::int64_t> groups;
  for (const auto& s : samples) {
    if (s.warmup || s.ok) continue;
    std::string why =
        s.error.empty() ? (s.error_class.empty() ? std::string("unknown") : s.error_class) : server_message(s.error);
    if (why.size() > 200) why = why.substr(0, 197) + "...";
    ++groups[{s.http_status.value_or(0), std::move(why)}];
  }
  std::vector<std::pair<std::int64_t, std::string>> lines;
  for (const auto& [key, n] : groups) {
    lines.emplace_back(n,
                       fmt::format("{} x {}{}", n, key.first ? fmt::format("HTTP {}: ", key.first) : "", key.second));
  }
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lines.size() && i < kFailureGroups; ++i) out.push_back(std::move(lines[i].second));
  if (lines.size() > kFailureGroups) {
    out.push_back(
        fmt::format("and {} other kinds of failure (the ledger has every one)", lines.size() - kFailureGroups));
  }
  return out;
}

}  // namespace mpo::sweep

namespace mpo::sweep {
std::optional<ScalarMetric> prefix_hit_rate_metric(const boost::json::object& server) {
  const auto* q = server.if_contains("prefix_cache_queries_delta");
  const auto* h = server.if_contains("prefix_cache_hits_delta");
  if (q == nullptr || h == nullptr || !q->is_number() || !h->is_number()) return std::nullopt;
  const double queries = q->to_number<double>(), hits = h->to_number<double>();
  if (queries <= 0) return std::nullopt;
  auto m = ScalarMetric::of(hits / queries, "ratio");
  const auto* src = server.if_contains("prefix_cache_source");
  m.source = src && src->is_string() ? std::string(src->get_string()) : std::string("prefix-cache counter deltas");
  return m;
}

LoadEvidence load_evidence(std::span<const loadgen::Sample> samples, const LoadFigures& f) {
  std::int64_t warmup = 0, measured = 0;
  double first_due = 0, last_due = 0, first_sent = 0, last_end = 0;
  for (const auto& s : samples) {
    if (s.warmup) {
      ++warmup;
      continue;
    }
    const double end = s.sent_offset_ms + s.end_to_end_ms;
    if (measured == 0) {
      first_due = last_due = s.scheduled_offset_ms;
      first_sent = s.sent_offset_ms;
      last_end = end;
    }
    first_due = std::min(first_due, s.scheduled_offset_ms);
    last_due = std::max(last_due, s.scheduled_offset_ms);
    first_sent = std::min(first_sent, s.sent_offset_ms);
    last_end = std::max(last_end, end);
    ++measured;
  }
  LoadEvidence o;
  o.coordinate_key = f.coordinate_key;
  o.coordinate = f.coordinate;
  o.warmup_requests = warmup;
  o.measured_requests = measured;
  if (f.duration_s > 0) o.duration_s = f.duration_s;
  if (f.open_loop && measured > 1 && last_due > first_due) {
    o.offered_rate_rps = static_cast<double>(measured - 1) / ((last_due - first_due) / 1000.0);
  }
  if (measured > 1 && last_end > first_sent) {
    o.achieved_rate_rps = static_cast<double>(measured - 1) / ((last_end - first_sent) / 1000.0);
  }
  o.started_at = f.started_at;
  o.ended_at = f.ended_at;
  return o;
}

CacheEvidence cache_evidence(std::span<const loadgen::Sample> samples, const CacheDeclaration& d,
                             const boost::json::object* server) {
  CacheEvidence o;
  o.prompts = d.prompts;
  o.declared_shared_share = d.declared_shared_share;
  o.allowance_tokens_per_request = kCacheAllowanceTokens;
  o.reset = d.reset;
  std::int64_t with_usage = 0, prompt = 0, cached = 0, reaching = 0;
  for (const auto& s : samples) {
    if (s.http_status) ++reaching;
    if (s.warmup || !s.ok || !s.usage || !s.usage->prompt_tokens || !s.usage->cached_tokens) continue;
    ++with_usage;
    prompt += *s.usage->prompt_tokens;
    cached += *s.usage->cached_tokens;
  }
  auto judge = [&](double share, double limit) {
    o.cached_share = share;
    o.limit_share = limit;
    o.carryover = share > limit;
  };
  // Not optionals: GCC 12 warns (maybe-uninitialized) on reading them after the branch below.
  const bool counted = server && json_double(*server, "prefix_cache_hits_delta") &&
                       json_double(*server, "prefix_cache_queries_delta").value_or(0) > 0;
  const double hits = counted ? *json_double(*server, "prefix_cache_hits_delta") : 0;
  const double queries = counted ? *json_double(*server, "prefix_cache_queries_delta") : 0;
  if (with_usage > 0 && prompt > 0) {
    o.status = kMeasured;
    o.source = "usage.cached_tokens";
    o.requests = with_usage;
    o.prompt_tokens = static_cast<double>(prompt);
    o.cached_tokens = static_cast<double>(cached);
    const double p = static_cast<double>(prompt);
    judge(static_cast<double>(cached) / p,
          std::min(1.0, d.declared_shared_share + static_cast<double>(kCacheAllowanceTokens * with_usage) / p));
    // The engine's own counters beside it (warm-up requests included), as a second witness.
    if (counted) o.server_cached_share = hits / queries;
    return o;
  }
  if (counted) {
    o.status = kMeasured;
    o.source = std::string(json_string(*server, "prefix_cache_source").value_or("server prefix-cache counters"));
    o.requests = reaching;
    o.prompt_tokens = queries;
    o.cached_tokens = hits;
    judge(hits / queries,
          std::min(1.0, d.declared_shared_share + static_cast<double>(kCacheAllowanceTokens * reaching) / queries));
    return o;
  }
  o.status = kNotMeasured;
  o.reason =
      "no response carried usage cached_tokens and no prefix-cache counters were scraped (--metrics-url): whether "
      "the point was served from an earlier point's cache is not known";
  return o;
}

}  // namespace mpo::sweep
