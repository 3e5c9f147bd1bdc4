// The implementation of engines/facts.hpp. The facts an engine states about itself, over a window
// (one snapshot: since the process started; two snapshots: their interval).
#include "engines/facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engines/facts_detail.hpp"
#include "promtext/number.hpp"

namespace mpo::engines {
namespace detail {

using S = Signal;

std::string num(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{:.4g}", v);
}

std::string source_of(const EngineSignals& s, Signal sig) {
  if (sig == S::kCacheConfigInfo && !s.cache_config_source.empty()) return s.cache_config_source;
  if (const ScalarSignal* v = s.scalar(sig)) return v->source;
  if (const HistogramSignal* h = s.histogram(sig)) return h->source;
  return std::string(signal_name(sig));
}

Fact unavailable(std::string id, std::string reason) {
  Fact f;
  f.id = std::move(id);
  f.status = FactStatus::kUnavailable;
  f.reason = std::move(reason);
  return f;
}

// Adds each present scalar as a stated value; returns how many were present.
int add_stated(Fact& f, const EngineSignals& s, std::initializer_list<std::pair<Signal, std::string_view>> signals) {
  int n = 0;
  for (const auto& [sig, unit] : signals) {
    if (const ScalarSignal* v = s.scalar(sig)) {
      f.values.push_back(FactValue{std::string(signal_name(sig)), v->value, std::string(unit), false});
      f.sources.push_back(v->source);
      ++n;
    }
  }
  return n;
}

void set_share(Fact& f, const EngineSignals& s, Signal part_sig, double part, Signal whole_sig, double whole,
               std::string_view unit) {
  f.status = FactStatus::kDerived;
  f.values = {{f.id, part / whole, "fraction", false},
              {std::string(signal_name(part_sig)), part, std::string(unit), false},
              {std::string(signal_name(whole_sig)), whole, std::string(unit), false}};
  f.sources = {source_of(s, part_sig), source_of(s, whole_sig)};
}

Fact counters(const EngineSignals& s, std::string id,
              std::initializer_list<std::pair<Signal, std::string_view>> signals, std::optional<double> seconds) {
  Fact f;
  f.id = std::move(id);
  if (add_stated(f, s, signals) == 0) return unavailable(f.id, "none of its counters are published");
  f.status = FactStatus::kStated;
  std::string text;
  const std::size_t n = f.values.size();
  for (std::size_t i = 0; i < n; ++i) {
    text += fmt::format("{}{} {}", i ? ", " : "", num(f.values[i].value), f.values[i].name);
    if (seconds && *seconds > 0) {
      f.values.push_back({f.values[i].name + "_per_s", f.values[i].value / *seconds, f.values[i].unit + "/s", false});
    }
  }
  f.statement =
      fmt::format("{} ({}).", text, seconds ? fmt::format("over {:.1f} s", *seconds) : "since the process started");
  return f;
}

Fact latency(const EngineSignals& s, Signal sig, std::string_view label) {
  const std::string id(signal_name(sig));
  const HistogramSignal* h = s.histogram(sig);
  if (!h) return unavailable(id, fmt::format("no {} histogram is published", label));
  if (!h->merged.valid())
    return unavailable(id, fmt::format("{} is inconsistent: {}", h->source, h->merged.problems[0].message));
  const double count = h->merged.count.value_or(h->merged.buckets.empty() ? 0 : h->merged.buckets.back().cumulative);
  if (count <= 0) return unavailable(id, "no observations in the window");
  Fact f;
  f.id = id;
  f.status = FactStatus::kDerived;
  f.sources = {h->source};
  f.values.push_back({"count", count, "observations", false});
  std::string text = fmt::format("{}: ", label);
  if (h->merged.sum) {
    f.values.push_back({"mean", *h->merged.sum / count, "s", false});
    text += fmt::format("mean {:.4g} s", *h->merged.sum / count);
  }
  const bool has_buckets = h->merged.buckets.size() >= 2;
  for (const auto& [q, name] : {std::pair{0.5, "p50"}, std::pair{0.9, "p90"}, std::pair{0.99, "p99"}}) {
    if (!has_buckets) break;
    const double v = promtext::histogram_quantile(q, h->merged.buckets);
    const auto bucket = promtext::quantile_bucket(q, h->merged.buckets);
    if (std::isnan(v) || !bucket) continue;
    f.values.push_back({name, v, "s", true, bucket});
    if (std::isinf(bucket->second))
      text += fmt::format(", {} >{:.4g} s (above the highest bucket)", name, bucket->first);
    else
      text += fmt::format(", {} ~{:.4g} s (bucket {:.4g}-{:.4g})", name, v, bucket->first, bucket->second);
  }
  f.statement =
      text + fmt::format(" over {} observations{}.", num(count),
                         has_buckets ? "; percentiles are estimates interpolated inside a bucket, as PromQL's "
                                       "histogram_quantile computes them"
                                     : "");
  return f;
}

}  // namespace detail

namespace {

using S = Signal;
using detail::add_stated;
using detail::counters;
using detail::latency;
using detail::num;
using detail::set_share;
using detail::source_of;
using detail::unavailable;
using detail::values;

std::optional<double> label_number(const EngineSignals& s, std::string_view name) {
  const std::string* v = s.config(name);
  if (!v) return std::nullopt;
  double d = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc{} || end != v->data() + v->size()) return std::nullopt;
  return d;
}

Fact queueing_reason(const EngineSignals& s) {
  const ScalarSignal* waiting = s.scalar(S::kWaiting);
  const ScalarSignal* capacity = s.scalar(S::kWaitingCapacity);
  const ScalarSignal* deferred = s.scalar(S::kWaitingDeferred);
  if (!waiting && !capacity) return unavailable("queueing_reason", "the engine publishes no waiting-request gauge");
  Fact f;
  f.id = "queueing_reason";
  if (!capacity || !deferred) {
    add_stated(f, s, {{S::kWaiting, "requests"}});
    f.status = FactStatus::kUnavailable;
    f.reason = "the engine does not split waiting requests by reason (vLLM V1's num_requests_waiting_by_reason)";
    f.statement = fmt::format("{} request(s) waiting; why (a full pool or a transient deferral) is not stated",
                              num(waiting->value));
    return f;
  }
  f.status = FactStatus::kStated;
  add_stated(f, s, {{S::kWaiting, "requests"}, {S::kWaitingCapacity, "requests"}, {S::kWaitingDeferred, "requests"}});
  const double c = capacity->value;
  const double d = deferred->value;
  if (c == 0 && d == 0) {
    f.statement = "No request is waiting.";
  } else if (c > 0) {
    f.statement = fmt::format(
        "{} of {} waiting request(s) wait for capacity: the KV pool or the batch is full, so added "
        "load becomes queue, not throughput{}.",
        num(c), num(c + d), d > 0 ? fmt::format("; {} deferred by transient constraints", num(d)) : "");
  } else {
    f.statement = fmt::format(
        "{} waiting request(s), all deferred by transient constraints (LoRA budget, KV transfer, "
        "blocked status), none for capacity: the pool is not the limit.",
        num(d));
  }
  return f;
}

Fact load(const EngineSignals& s) {
  Fact f;
  f.id = "load";
  if (add_stated(f, s, {{S::kRunning, "requests"}, {S::kKvUsage, "fraction"}, {S::kSwapped, "requests"}}) == 0) {
    return unavailable("load", "no running-request or KV-usage gauge is published");
  }
  f.status = FactStatus::kStated;
  std::string text;
  if (auto r = s.value(S::kRunning)) text += fmt::format("{} running", num(*r));
  if (auto k = s.value(S::kKvUsage)) text += fmt::format("{}KV pool {:.1f}% used", text.empty() ? "" : ", ", *k * 100);
  f.statement = text + ".";
  return f;
}

Fact kv_pool(const EngineSignals& s) {
  const auto blocks = label_number(s, "num_gpu_blocks");
  const auto block_size = label_number(s, "block_size");
  if (blocks && block_size) {
    Fact f;
    f.id = "kv_pool_tokens";
    f.status = FactStatus::kDerived;
    const double tokens = *blocks * *block_size;
    f.values = {{"kv_pool_tokens", tokens, "tokens", false},
                {"num_gpu_blocks", *blocks, "blocks", false},
                {"block_size", *block_size, "tokens", false}};
    f.sources = {source_of(s, S::kCacheConfigInfo) + "{num_gpu_blocks,block_size}"};
    f.statement =
        fmt::format("KV pool: {} blocks x {} tokens = {} tokens", num(*blocks), num(*block_size), num(tokens));
    if (const auto stated = label_number(s, "kv_cache_size_tokens")) {
      f.values.push_back({"kv_cache_size_tokens", *stated, "tokens", false});
      f.sources.push_back(source_of(s, S::kCacheConfigInfo) + "{kv_cache_size_tokens}");
      f.statement += *stated == tokens ? fmt::format(", equal to the stated kv_cache_size_tokens.")
                                       : fmt::format("; the engine also states kv_cache_size_tokens={}, which differs.",
                                                     num(*stated));
    } else {
      f.statement += ".";
    }
    return f;
  }
  Fact f;
  f.id = "kv_pool_tokens";
  if (add_stated(f, s, {{S::kKvPoolTokens, "tokens"}}) == 1) {
    f.values[0].name = "kv_pool_tokens";
    f.status = FactStatus::kStated;
    f.statement = fmt::format("KV pool: {} tokens.", num(f.values[0].value));
    return f;
  }
  return unavailable("kv_pool_tokens",
                     "neither cache_config_info (num_gpu_blocks, block_size) nor a pool size is published");
}

// A cache figure the page contradicts (caching stated off, yet a cache counter moved): no number.
Fact contradicted(std::string id, const EngineSignals& s, Signal counter, double value, std::string_view what) {
  return unavailable(std::move(id),
                     fmt::format("the exposition contradicts itself: {} says prefix caching is off, yet {} "
                                 "reads {}; no {} is claimed",
                                 source_of(s, S::kCacheConfigInfo), source_of(s, counter), num(value), what));
}

// nullopt: unknown; true/false: stated by cache_config_info.
std::optional<bool> prefix_caching_enabled(const EngineSignals& s) {
  const std::string* v = s.config("enable_prefix_caching");
  if (!v) return std::nullopt;
  if (*v == "True" || *v == "true") return true;
  if (*v == "False" || *v == "false") return false;
  return std::nullopt;
}

Fact prefix_caching(const EngineSignals& s) {
  const auto enabled = prefix_caching_enabled(s);
  if (!enabled) return unavailable("prefix_caching", "the engine does not state whether prefix caching is on");
  Fact f;
  f.id = "prefix_caching";
  f.status = FactStatus::kStated;
  f.values = {{"enabled", *enabled ? 1.0 : 0.0, "bool", false}};
  f.sources = {source_of(s, S::kCacheConfigInfo) + "{enable_prefix_caching}"};
  f.statement = *enabled ? "Prefix caching is on." : "Prefix caching is off: no prompt token can come from the cache.";
  return f;
}

Fact cached_fraction(const EngineSignals& s) {
  Fact f;
  f.id = "cached_prompt_fraction";
  const auto [cached, prompt] = values(s, S::kCachedPromptTokens, S::kPromptTokens);
  if (prefix_caching_enabled(s) == false && cached && *cached > 0) {
    return contradicted(f.id, s, S::kCachedPromptTokens, *cached, "share");
  }
  if (prefix_caching_enabled(s) == false) {
    f.status = FactStatus::kStated;
    f.values = {{"cached_prompt_fraction", 0.0, "fraction", false}};
    f.sources = {source_of(s, S::kCacheConfigInfo) + "{enable_prefix_caching=\"False\"}"};
    f.statement = "Cached share of prompt tokens: exactly 0 (prefix caching is off).";
    return f;
  }
  if (!cached || !prompt) return unavailable(f.id, "no cached-prompt-token counter is published");
  if (*prompt <= 0) return unavailable(f.id, "no prompt tokens in the window");
  set_share(f, s, S::kCachedPromptTokens, *cached, S::kPromptTokens, *prompt, "tokens");
  f.statement = fmt::format("Cached share of prompt tokens: {:.1f}% ({} of {}).", 100 * *cached / *prompt, num(*cached),
                            num(*prompt));
  return f;
}

Fact hit_rate(const EngineSignals& s) {
  Fact f;
  f.id = "prefix_cache_hit_rate";
  const auto [queries, hits] = values(s, S::kPrefixCacheQueries, S::kPrefixCacheHits);
  if (queries && hits) {
    if (*queries <= 0) return unavailable(f.id, "no prefix-cache queries in the window");
    set_share(f, s, S::kPrefixCacheHits, *hits, S::kPrefixCacheQueries, *queries, "tokens");
    f.statement = fmt::format("Prefix-cache hit rate: {:.1f}% of queried prompt tokens ({} of {}).",
                              100 * *hits / *queries, num(*hits), num(*queries));
    return prefix_caching_enabled(s) == false && *hits > 0 ? contradicted(f.id, s, S::kPrefixCacheHits, *hits, "rate")
                                                           : f;
  }
  if (add_stated(f, s, {{S::kPrefixCacheHitRate, "fraction"}}) == 1) {
    f.status = FactStatus::kStated;
    f.statement = fmt::format(
        "Prefix-cache hit rate {:.1f}%, as the engine states it (its own gauge over its own window, "
        "not this window).",
        100 * f.values[0].value);
    return f;
  }
  return unavailable(f.id, "no prefix-cache hit/query counters or hit-rate gauge are published");
}

Fact prefill_rate(const EngineSignals& s) {
  Fact f;
  f.id = "prefill_rate_per_stream";
  const HistogramSignal* computed = s.histogram(S::kPrefillKvComputedTokens);
  const HistogramSignal* time = s.histogram(S::kPrefillTime);
  if (!computed || !time || !computed->merged.sum || !time->merged.sum) {
    return unavailable(f.id, "needs request_prefill_kv_computed_tokens and request_prefill_time_seconds (vLLM V1)");
  }
  if (*time->merged.sum <= 0 || time->merged.count.value_or(0) <= 0) {
    return unavailable(f.id, "no completed prefill in the window");
  }
  const double rate = *computed->merged.sum / *time->merged.sum;
  f.status = FactStatus::kDerived;
  f.values = {{"computed_prefill_tokens_per_s", rate, "tokens/s per prefilling stream", false},
              {"computed_prefill_tokens", *computed->merged.sum, "tokens", false},
              {"prefill_seconds", *time->merged.sum, "s (summed over requests)", false}};
  f.sources = {computed->source + "_sum", time->source + "_sum"};
  f.statement = fmt::format(
      "Computed prefill: {:.1f} tokens/s per prefilling stream ({} computed tokens over {:.3f} s of "
      "per-request prefill time). Per stream, not aggregate: concurrent prefills overlap.",
      rate, num(*computed->merged.sum), *time->merged.sum);
  if (const HistogramSignal* prompt = s.histogram(S::kPromptTokensPerRequest); prompt && prompt->merged.sum) {
    const double nominal = *prompt->merged.sum / *time->merged.sum;
    if (prefix_caching_enabled(s) == false) {
      f.values.push_back({"nominal_prefill_tokens_per_s", rate, "tokens/s per prefilling stream", false});
      f.statement += " Prefix caching is off, so the nominal rate is the computed one.";
    } else {
      f.values.push_back({"nominal_prefill_tokens_per_s", nominal, "tokens/s per prefilling stream", false});
      f.sources.push_back(prompt->source + "_sum");
      f.statement += fmt::format(" Nominal (cache hits counted as prefilled): {:.1f} tokens/s.", nominal);
    }
  }
  return f;
}

Fact llamacpp_wall_rates(const EngineSignals& s) {
  Fact f;
  f.id = "llamacpp_wall_throughput";
  // llama.cpp's prompt seconds are spent on the tokens it computed (cache hits cost none).
  const auto [pt, ps, gt, gs] =
      values(s, S::kComputedPromptTokens, S::kPromptSecondsWall, S::kGenerationTokens, S::kGenerationSecondsWall);
  if (!ps && !gs) return unavailable(f.id, "not a llama.cpp server");
  f.status = FactStatus::kDerived;
  std::string text;
  if (pt && ps && *ps > 0) {
    f.values.push_back({"prompt_tokens_per_wall_s", *pt / *ps, "tokens/s of prompt-processing wall time", false});
    f.sources.push_back(source_of(s, S::kComputedPromptTokens));
    f.sources.push_back(source_of(s, S::kPromptSecondsWall));
    text = fmt::format("Prompt processing: {:.1f} tokens per second of the server's prompt wall time", *pt / *ps);
  }
  if (gt && gs && *gs > 0) {
    f.values.push_back({"generated_tokens_per_wall_s", *gt / *gs, "tokens/s of generation wall time", false});
    f.sources.push_back(source_of(s, S::kGenerationTokens));
    f.sources.push_back(source_of(s, S::kGenerationSecondsWall));
    text += fmt::format("{}generation: {:.1f} tokens per second of generation wall time", text.empty() ? "" : "; ",
                        *gt / *gs);
  }
  if (f.values.empty()) return unavailable(f.id, "no prompt or generation time in the window");
  f.statement =
      text + ". Wall time of all slots together, under llama.cpp's own meaning: not vLLM's per-stream prefill rate.";
  return f;
}

Fact estimate(const EngineSignals& s, Signal sig, std::string_view what) {
  const std::string id(signal_name(sig));
  const ScalarSignal* v = s.scalar(sig);
  if (!v) return unavailable(id, fmt::format("the engine publishes no {} estimate", what));
  const auto generated = s.value(S::kGenerationTokens);
  Fact f;
  f.id = id;
  f.sources = {v->source};
  if (v->value > 0) {
    f.status = FactStatus::kStated;
    f.values = {{id, v->value, std::string(what), false}};
    f.statement = fmt::format("The engine estimates {} {} per GPU.", num(v->value), what);
    return f;
  }
  if (generated && *generated > 0) {
    f.status = FactStatus::kNotEnabled;
    f.sources.push_back(source_of(s, S::kGenerationTokens));
    f.reason = fmt::format(
        "{} stays at 0 while {} tokens were generated: not enabled (vLLM moves it only with "
        "--enable-mfu-metrics) or not implemented in this version",
        v->source, num(*generated));
    f.statement = fmt::format(
        "The {} estimate is not enabled (0 while tokens were generated; vLLM needs --enable-mfu-metrics); it is "
        "withheld from every efficiency figure.",
        what);
    return f;
  }
  return unavailable(id, "0 with no tokens generated: nothing to judge the counter by yet");
}

// vLLM's (and llama.cpp's) accepted tokens by draft position: the share of drafts whose k-th token was accepted. It
// falls with k; where it falls says how far ahead the drafter is worth running.
void add_positions(Fact& f, const EngineSignals& s, double drafts) {
  const ScalarSignal* by_pos = s.scalar(S::kSpecAcceptedByPosition);
  if (!by_pos || by_pos->parts.empty()) return;
  std::vector<std::pair<long long, double>> positions;
  for (const SignalPart& p : by_pos->parts) {
    long long k = 0;
    const auto [end, ec] = std::from_chars(p.key.data(), p.key.data() + p.key.size(), k);
    if (ec != std::errc{} || end != p.key.data() + p.key.size() || k < 0) continue;
    positions.emplace_back(k, p.value / drafts);
  }
  if (positions.empty()) return;
  std::sort(positions.begin(), positions.end());
  f.sources.push_back(by_pos->source + "{position}");
  f.statement += " Accepted by draft position:";
  for (const auto& [k, rate] : positions) {
    f.values.push_back({fmt::format("acceptance_at_position_{}", k), rate, "fraction of drafts", false});
    f.statement += fmt::format(" {} {:.1f}%{}", k, 100 * rate, k == positions.back().first ? "." : ",");
  }
}

// Speculative decoding over the window: how many draft tokens were accepted, and how many tokens
// a verification step yields on average (1 + accepted / drafts: the step's own token plus the
// accepted ones). SGLang states its own gauges instead.
Fact speculative_decoding(const EngineSignals& s) {
  Fact f;
  f.id = "speculative_decoding";
  const auto [drafts, proposed, accepted] = values(s, S::kSpecDrafts, S::kSpecDraftTokens, S::kSpecAcceptedTokens);
  if (drafts && proposed && accepted) {
    if (*drafts <= 0 || *proposed <= 0) {
      return unavailable(f.id, "no draft in the window (speculative decoding off, or no request decoded)");
    }
    f.status = FactStatus::kDerived;
    f.values = {{"acceptance_rate", *accepted / *proposed, "fraction", false},
                {"mean_accepted_length", 1 + *accepted / *drafts, "tokens per verification step", false},
                {"draft_tokens_per_draft", *proposed / *drafts, "tokens", false},
                {"drafts", *drafts, "steps", false}};
    f.sources = {source_of(s, S::kSpecAcceptedTokens), source_of(s, S::kSpecDraftTokens), source_of(s, S::kSpecDrafts)};
    f.statement = fmt::format(
        "Speculative decoding: {:.1f}% of {} draft tokens accepted; a verification step yields {:.2f} tokens on "
        "average ({} steps). TPOT here depends on acceptance, not only on the decode step's cost.",
        100 * *accepted / *proposed, num(*proposed), 1 + *accepted / *drafts, num(*drafts));
    add_positions(f, s, *drafts);
    return f;
  }
  const int gauges =
      add_stated(f, s, {{S::kSpecAcceptLength, "tokens per verification step"}, {S::kSpecAcceptRate, "fraction"}});
  if (gauges > 0) {
    f.status = FactStatus::kStated;
    f.statement = "Speculative decoding, as the engine states it over its own recent window:";
    for (const FactValue& v : f.values) f.statement += fmt::format(" {} {}", v.name, num(v.value));
    f.statement += ".";
  }
  if (add_stated(f, s, {{S::kSpecVerifyCalls, "steps"}}) > 0) {
    const double steps = f.values.back().value;
    if (gauges == 0) {
      f.status = FactStatus::kStated;
      f.statement =
          fmt::format("{} speculative verification step(s); no acceptance is published beside them.", num(steps));
    } else {
      f.statement += fmt::format(" {} verification step(s).", num(steps));
    }
  }
  if (f.status == FactStatus::kStated) return f;
  return unavailable(f.id, "no speculative-decoding counters are published");
}

}  // namespace

std::string_view to_string(FactStatus s) {
  switch (s) {
    case FactStatus::kStated: return "stated";
    case FactStatus::kDerived: return "derived";
    case FactStatus::kNotEnabled: return "not_enabled";
    case FactStatus::kUnavailable: break;
  }
  return "unavailable";
}

const Fact* find_fact(const std::vector<Fact>& facts, std::string_view id) {
  for (const Fact& f : facts) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

namespace {

// Values no engine can have: a non-finite scalar, a negative counter, a histogram whose sum or count
// is not finite or whose count is negative. They are defects of the page: taken out of `s` before
// any fact is derived (so none states them), and listed.
std::vector<std::string> remove_defects(EngineSignals& s) {
  std::vector<std::string> defects;
  for (std::size_t i = 0; i < kSignalCount; ++i) {
    const auto sig = static_cast<Signal>(i);
    if (auto& v = s.scalars[i]) {
      const bool counter = signal_kind(sig) == SignalKind::kCounter;
      if (!std::isfinite(v->value) || (counter && v->value < 0)) {
        defects.push_back(fmt::format("{} = {}", v->source, v->value));
        v.reset();
      }
    }
    if (auto& h = s.histograms[i]) {
      const auto& m = h->merged;
      const bool bad_sum = m.sum && !std::isfinite(*m.sum);
      const bool bad_count = m.count && (!std::isfinite(*m.count) || *m.count < 0);
      if (bad_sum || bad_count) {
        defects.push_back(
            fmt::format("{} has a sum of {} and a count of {}", h->source, m.sum.value_or(0), m.count.value_or(0)));
        h.reset();
      }
    }
  }
  return defects;
}

}  // namespace

std::vector<Fact> derive_facts(const EngineSignals& page, std::optional<double> seconds) {
  std::vector<Fact> out;
  if (page.engine == Engine::kUnknown) return out;
  EngineSignals s = page;
  const std::vector<std::string> defects = remove_defects(s);
  out.push_back(queueing_reason(s));
  out.push_back(load(s));
  out.push_back(kv_pool(s));
  out.push_back(prefix_caching(s));
  out.push_back(cached_fraction(s));
  out.push_back(hit_rate(s));
  if (s.engine == Engine::kLlamaCpp)
    out.push_back(llamacpp_wall_rates(s));
  else
    out.push_back(prefill_rate(s));
  out.push_back(estimate(s, S::kEstimatedFlops, "floating-point operations"));
  out.push_back(estimate(s, S::kEstimatedReadBytes, "bytes read"));
  out.push_back(estimate(s, S::kEstimatedWriteBytes, "bytes written"));
  out.push_back(counters(s, "tokens",
                         {{S::kPromptTokens, "tokens"},
                          {S::kGenerationTokens, "tokens"},
                          {S::kCachedPromptTokens, "tokens"},
                          {S::kComputedPromptTokens, "tokens"}},
                         seconds));
  out.push_back(counters(s, "requests",
                         {{S::kRequestsFinished, "requests"},
                          {S::kRequestsErrored, "requests"},
                          {S::kRequestsAborted, "requests"},
                          {S::kRequestsFailed, "requests"},
                          {S::kRequestsTotal, "requests"}},
                         seconds));
  out.push_back(detail::preemptions(s, seconds));
  out.push_back(detail::kv_pressure(s));
  out.push_back(detail::external_prefix_cache(s));
  out.push_back(detail::mm_cache(s));
  out.push_back(detail::kv_residency(s));
  out.push_back(detail::kv_offload(s));
  out.push_back(speculative_decoding(s));
  out.push_back(latency(s, S::kTtft, "Time to first token"));
  out.push_back(latency(s, S::kItl, "Inter-token latency"));
  out.push_back(latency(s, S::kTpot, "Time per output token"));
  out.push_back(latency(s, S::kE2e, "End-to-end latency"));
  out.push_back(latency(s, S::kQueueTime, "Queue time"));
  out.push_back(latency(s, S::kPrefillTime, "Prefill time"));
  out.push_back(latency(s, S::kDecodeTime, "Decode time"));
  out.push_back(detail::kv_transfer(s));
  if (s.engine == Engine::kTgi) out.push_back(detail::tgi_batching(s));
  if (!defects.empty()) {
    Fact f = unavailable("page_defects",
                         fmt::format("values no engine can have (not used by any fact): {}", fmt::join(defects, "; ")));
    f.statement = fmt::format(
        "The page states {} value(s) no engine can have (NaN, infinite, or a negative "
        "counter); they are left out of every fact: {}.",
        defects.size(), fmt::join(defects, "; "));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace mpo::engines
