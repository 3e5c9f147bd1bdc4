// Facts about the KV cache beyond its size and hit rate: preemption (SGLang's retraction), what
// fills the pool (held, evictable, free), how long blocks live before eviction against how soon
// they come back, the CPU offload tier, KV transfer between prefill and decode instances, the
// connector's and the multi-modal caches, and TGI's batching. Each answers a question the report
// asks: why is TTFT high, why was a request preempted, is the cache evicting what it should keep.
#include <fmt/format.h>

#include <cmath>

#include "engines/facts_detail.hpp"
#include "promtext/histogram.hpp"

namespace mpo::engines::detail {
namespace {

using S = Signal;

struct HistogramSummary {
  double count = 0;
  std::optional<double> mean;
  std::optional<double> p50;  // an estimate inside a bucket (histogram_quantile)
  std::string source;
};

std::optional<HistogramSummary> summarize(const EngineSignals& s, Signal sig) {
  const HistogramSignal* h = s.histogram(sig);
  if (!h || !h->merged.valid()) return std::nullopt;
  HistogramSummary out;
  out.source = h->source;
  out.count = h->merged.count.value_or(h->merged.buckets.empty() ? 0 : h->merged.buckets.back().cumulative);
  if (out.count <= 0) return std::nullopt;
  if (h->merged.sum) out.mean = *h->merged.sum / out.count;
  if (h->merged.buckets.size() >= 2) {
    const double v = promtext::histogram_quantile(0.5, h->merged.buckets);
    if (std::isfinite(v)) out.p50 = v;
  }
  return out;
}

std::string seconds_text(double v) { return v < 1 ? fmt::format("{:.1f} ms", v * 1000) : fmt::format("{:.3g} s", v); }

// hits / queries as a derived rate, or why not.
Fact rate_fact(const EngineSignals& s, std::string id, Signal hits_sig, Signal queries_sig, std::string_view unit,
               std::string_view what, std::string_view missing) {
  const auto hits = s.value(hits_sig);
  const auto queries = s.value(queries_sig);
  if (!hits || !queries) return unavailable(std::move(id), std::string(missing));
  if (*queries <= 0) return unavailable(std::move(id), fmt::format("no {} queries in the window", what));
  Fact f;
  f.id = std::move(id);
  set_share(f, s, hits_sig, *hits, queries_sig, *queries, unit);
  f.statement =
      fmt::format("{}: {:.1f}% hit ({} of {} {}).", what, 100 * *hits / *queries, num(*hits), num(*queries), unit);
  return f;
}

}  // namespace

Fact preemptions(const EngineSignals& s, std::optional<double> seconds) {
  Fact f = counters(
      s, "preemptions",
      {{S::kPreemptions, "preemptions"}, {S::kPreemptedPromptTokens, "tokens"}, {S::kPreemptedOutputTokens, "tokens"}},
      seconds);
  const ScalarSignal* now = s.scalar(S::kRetractedNow);
  if (f.status == FactStatus::kUnavailable && !now) return f;
  if (f.status == FactStatus::kUnavailable) {
    f = Fact{};
    f.id = "preemptions";
    f.status = FactStatus::kStated;
  }
  if (s.engine == Engine::kSglang) {
    f.statement += (f.statement.empty() ? "" : " ") +
                   std::string(
                       "SGLang calls a preemption a retraction: a running request sent back to the queue when the KV "
                       "pool runs out, its tokens computed again when it resumes.");
  }
  if (now) {
    f.values.push_back({"retracted_now", now->value, "requests", false});
    f.sources.push_back(now->source);
    f.statement += fmt::format(" {} request(s) retracted in the scheduler's last step.", num(now->value));
  }
  const auto [prompt, output] = values(s, S::kPreemptedPromptTokens, S::kPreemptedOutputTokens);
  if (prompt || output) {
    f.statement += fmt::format(
        " Work to redo: {} prompt and {} output token(s); it lengthens TTFT and e2e of the "
        "requests that were retracted.",
        num(prompt.value_or(0)), num(output.value_or(0)));
  }
  return f;
}

Fact kv_pressure(const EngineSignals& s) {
  Fact f;
  f.id = "kv_pressure";
  const auto [used, evictable, free] = values(s, S::kKvUsedTokens, S::kKvEvictableTokens, S::kKvFreeTokens);
  if (used && (evictable || free)) {
    const double pool = s.value(S::kKvPoolTokens).value_or(*used + evictable.value_or(0) + free.value_or(0));
    if (pool <= 0) return unavailable(f.id, "the KV pool size is 0");
    f.status = FactStatus::kDerived;
    add_stated(f, s, {{S::kKvUsedTokens, "tokens"}, {S::kKvEvictableTokens, "tokens"}, {S::kKvFreeTokens, "tokens"}});
    const double held = *used / pool;
    const double cached = evictable.value_or(0) / pool;
    f.values.push_back({"held_fraction", held, "fraction of the pool", false});
    f.values.push_back({"evictable_fraction", cached, "fraction of the pool", false});
    if (s.scalar(S::kKvPoolTokens)) f.sources.push_back(source_of(s, S::kKvPoolTokens));
    std::string verdict;
    if (held >= 0.9) {
      verdict = "running requests fill the pool: new requests wait and running ones may be retracted";
    } else if (held + cached >= 0.9) {
      verdict =
          "the pool looks full, but mostly with cached prefixes that are evicted on demand: a usage gauge that "
          "counts them overstates the pressure";
    } else {
      verdict = "room to spare";
    }
    f.statement = fmt::format(
        "KV pool of {} tokens: {:.1f}% held by running requests, {:.1f}% cached prefixes no request holds "
        "(evictable), {} free; {}.",
        num(pool), 100 * held, 100 * cached, free ? num(*free) : std::string("n/a"), verdict);
    return f;
  }
  const auto [batch, budget] = values(s, S::kBatchTokens, S::kKvPoolTokens);
  if (batch && budget && s.engine == Engine::kTgi) {
    if (*budget <= 0) return unavailable(f.id, "the batch token budget is 0");
    f.status = FactStatus::kDerived;
    add_stated(f, s, {{S::kBatchTokens, "tokens"}, {S::kKvPoolTokens, "tokens"}});
    f.values.push_back({"held_fraction", *batch / *budget, "fraction of the budget", false});
    f.statement = fmt::format(
        "The running batch holds {} of the {} tokens all batches may hold ({:.1f}%); at the budget, queued requests "
        "wait for running ones to finish.",
        num(*batch), num(*budget), 100 * *batch / *budget);
    return f;
  }
  return unavailable(f.id,
                     "no breakdown of the KV pool is published (SGLang kv_used/evictable/available_tokens, TGI "
                     "tgi_batch_current_max_tokens with tgi_batch_max_total_tokens)");
}

Fact kv_residency(const EngineSignals& s) {
  Fact f;
  f.id = "kv_residency";
  const auto lifetime = summarize(s, S::kKvBlockLifetime);
  const auto idle = summarize(s, S::kKvBlockIdleBeforeEvict);
  const auto gap = summarize(s, S::kKvBlockReuseGap);
  if (!lifetime && !idle && !gap) {
    return unavailable(f.id,
                       "no sampled KV-block residency histograms (vLLM kv_block_*_seconds, with --kv-cache-metrics) "
                       "or no evicted block in the window");
  }
  f.status = FactStatus::kDerived;
  std::string text = "Sampled KV blocks (medians are bucket estimates):";
  for (const auto& [h, name, what] :
       {std::tuple{&lifetime, "lifetime", "live"}, std::tuple{&idle, "idle_before_evict", "sit idle before eviction"},
        std::tuple{&gap, "reuse_gap", "come back after"}}) {
    if (!*h) continue;
    const HistogramSummary& v = **h;
    f.sources.push_back(v.source);
    f.values.push_back({std::string(name) + "_count", v.count, "blocks", false});
    if (v.mean) f.values.push_back({std::string(name) + "_mean", *v.mean, "s", false});
    if (v.p50) f.values.push_back({std::string(name) + "_p50", *v.p50, "s", true});
    text += fmt::format(" {} {}{};", what, v.p50 ? "~" + seconds_text(*v.p50) : "n/a",
                        v.mean ? fmt::format(" (mean {})", seconds_text(*v.mean)) : std::string());
  }
  text.back() = '.';
  if (idle && gap && idle->p50 && gap->p50) {
    if (*idle->p50 < *gap->p50) {
      text += fmt::format(
          " Blocks are evicted after ~{} idle, sooner than a reused block typically comes back (~{}): the cache "
          "evicts prefixes it would reuse; it is too small for this reuse distance.",
          seconds_text(*idle->p50), seconds_text(*gap->p50));
    } else {
      text += fmt::format(
          " Evicted blocks had been idle ~{}, longer than a reused block typically stays away (~{}): eviction "
          "takes what is unlikely to come back soon.",
          seconds_text(*idle->p50), seconds_text(*gap->p50));
    }
  }
  f.statement = text;
  return f;
}

Fact kv_offload(const EngineSignals& s) {
  Fact f;
  f.id = "kv_offload";
  const ScalarSignal* bytes = s.scalar(S::kKvOffloadBytes);
  if (!bytes) return unavailable(f.id, "no KV offloading connector counters (vLLM kv_offload_total_bytes)");
  const ScalarSignal* time = s.scalar(S::kKvOffloadSeconds);
  f.status = FactStatus::kStated;
  f.sources.push_back(bytes->source);
  if (time) f.sources.push_back(time->source);
  std::string text = fmt::format("KV offload moved {:.3g} GB", bytes->value / 1e9);
  std::vector<std::string> ways;
  for (const SignalPart& p : bytes->parts) {
    f.values.push_back({"bytes_" + p.key, p.value, "bytes", false});
    std::string way = fmt::format("{:.3g} GB {}", p.value / 1e9, p.key);
    if (const SignalPart* t = time ? time->part(p.key) : nullptr; t && t->value > 0) {
      f.values.push_back({"seconds_" + p.key, t->value, "s", false});
      f.values.push_back({"gb_per_s_" + p.key, p.value / 1e9 / t->value, "GB/s while moving", false});
      way += fmt::format(" at {:.3g} GB/s", p.value / 1e9 / t->value);
    }
    ways.push_back(std::move(way));
  }
  f.values.push_back({"bytes", bytes->value, "bytes", false});
  if (!ways.empty()) text += fmt::format(" ({})", fmt::join(ways, ", "));
  text +=
      ". Bytes brought back (CPU_to_GPU) are prefix hits served from the CPU tier; bytes sent out (GPU_to_CPU) are "
      "blocks saved before eviction.";
  f.statement = text;
  return f;
}

Fact kv_transfer(const EngineSignals& s) {
  Fact f = latency(s, S::kKvTransferTime, "KV transfer time (NIXL)");
  f.id = "kv_transfer_seconds";
  if (f.status == FactStatus::kUnavailable) return f;
  f.statement +=
      " In disaggregated prefill/decode, a decode-side request waits for its transfer inside its TTFT: a TTFT "
      "above the prefill time by about this much is the transfer, not queueing.";
  if (const ScalarSignal* failed = s.scalar(S::kKvTransferFailures); failed && failed->value > 0) {
    f.values.push_back({"failed_transfers", failed->value, "transfers", false});
    f.sources.push_back(failed->source);
    f.statement += fmt::format(" {} transfer(s) failed.", num(failed->value));
  }
  return f;
}

Fact external_prefix_cache(const EngineSignals& s) {
  return rate_fact(s, "external_prefix_cache_hit_rate", S::kExternalPrefixCacheHits, S::kExternalPrefixCacheQueries,
                   "tokens", "Prompt tokens a KV connector supplied (cross-instance cache)",
                   "no KV-connector prefix-cache counters (vLLM external_prefix_cache_*)");
}

Fact mm_cache(const EngineSignals& s) {
  return rate_fact(s, "mm_cache_hit_rate", S::kMmCacheHits, S::kMmCacheQueries, "items",
                   "Multi-modal items found already processed", "no multi-modal cache counters (vLLM mm_cache_*)");
}

Fact tgi_batching(const EngineSignals& s) {
  Fact f;
  f.id = "batching";
  const auto prefill = summarize(s, S::kBatchForwardPrefill);
  const auto decode = summarize(s, S::kBatchForwardDecode);
  const ScalarSignal* concat = s.scalar(S::kBatchConcat);
  if (!prefill && !decode && !concat) return unavailable(f.id, "no batch forward or concatenation series");
  f.status = FactStatus::kDerived;
  std::vector<std::string> parts;
  for (const auto& [h, name] : {std::pair{&prefill, "prefill"}, std::pair{&decode, "decode"}}) {
    if (!*h || !(*h)->mean) continue;
    f.sources.push_back((*h)->source + fmt::format("{{method=\"{}\"}}", name));
    f.values.push_back({fmt::format("{}_forward_mean", name), *(*h)->mean, "s", false});
    f.values.push_back({fmt::format("{}_forwards", name), (*h)->count, "passes", false});
    parts.push_back(fmt::format("a {} forward pass takes {} on average ({} passes)", name, seconds_text(*(*h)->mean),
                                num((*h)->count)));
  }
  if (concat) {
    f.sources.push_back(concat->source);
    f.values.push_back({"concatenations", concat->value, "batches", false});
    std::vector<std::string> reasons;
    for (const SignalPart& p : concat->parts) {
      f.values.push_back({"concatenations_" + p.key, p.value, "batches", false});
      reasons.push_back(fmt::format("{} {}", num(p.value), p.key));
    }
    parts.push_back(fmt::format("new requests joined the running batch {} time(s){}", num(concat->value),
                                reasons.empty() ? "" : fmt::format(" ({})", fmt::join(reasons, ", "))));
  }
  f.statement = fmt::format(
      "Batching: {}. Each prefill pass pauses decoding of the running batch, so frequent prefills raise ITL.",
      fmt::join(parts, "; "));
  return f;
}

}  // namespace mpo::engines::detail
