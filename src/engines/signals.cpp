// The implementation of engines/signals.hpp. The canonical signals of one exposition: the engine
// detected from the family names present, and for each catalog signal its value (summed, or the
// largest for ratios, across label sets) with the series it came from.
#include "engines/signals.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mpo::engines {
namespace {

bool starts_with_any(const promtext::Exposition& e, std::string_view prefix) {
  return std::any_of(e.families.begin(), e.families.end(),
                     [&](const promtext::MetricFamily& f) { return std::string_view(f.name).starts_with(prefix); });
}

// The family named `name` in this exposition, after the ray_vllm: rewrite; in OpenMetrics a
// counter's family has no _total and an info family no _info (`# TYPE vllm:cache_config info`), so
// those spellings are tried too.
const promtext::MetricFamily* find_family(const promtext::Exposition& e, const std::string& name) {
  if (const promtext::MetricFamily* f = e.family(name)) return f;
  for (std::string_view suffix : {"_total", "_info"}) {
    if (name.ends_with(suffix)) return e.family(std::string_view(name).substr(0, name.size() - suffix.size()));
  }
  return nullptr;
}

bool matches(const promtext::Labels& labels, const CatalogEntry& c) {
  if (c.label.empty()) return true;
  const std::string* v = promtext::find_label(labels, c.label);
  return v && *v == c.value;
}

std::string source_text(const std::string& family, const CatalogEntry& c) {
  if (c.label.empty()) return family;
  return fmt::format("{}{{{}=\"{}\"}}", family, c.label, c.value);
}

// SGLang (--enable-metrics-for-all-schedulers, tensor/pipeline/expert parallelism) publishes one copy
// of a scheduler's state per rank: the same running requests once per tp_rank. Series that differ
// only in these labels are copies, counted once; data-parallel ranks (dp_rank) are distinct schedulers
// and add up. Sources: SGLang's metrics collector (scheduler labels), AIPerf's server-metrics reference.
constexpr std::string_view kSglangReplicaLabels[] = {"tp_rank", "pp_rank", "moe_ep_rank"};

// A series that is a breakdown of another on the same page: SGLang's per-priority queue gauges
// (`priority="3"`) beside their total (`priority=""`).
bool counted(Engine e, const promtext::Labels& labels) {
  if (e != Engine::kSglang) return true;
  const std::string* priority = promtext::find_label(labels, "priority");
  return !priority || priority->empty();
}

promtext::Labels replica_key(const promtext::Labels& labels) {
  promtext::Labels key;
  for (const promtext::Label& l : labels) {
    if (std::find(std::begin(kSglangReplicaLabels), std::end(kSglangReplicaLabels), l.name) ==
        std::end(kSglangReplicaLabels))
      key.push_back(l);
  }
  std::sort(key.begin(), key.end(), [](const promtext::Label& a, const promtext::Label& b) { return a.name < b.name; });
  return key;
}

struct Point {
  const promtext::Labels* labels;
  double value;
};

const promtext::Labels& labels_of(const Point& p) { return *p.labels; }
const promtext::Labels& labels_of(const promtext::HistogramSeries& h) { return h.labels; }
double size_of(const Point& p) { return p.value; }
double size_of(const promtext::HistogramSeries& h) { return h.count.value_or(0); }

// Of the series that are copies of one scheduler (same labels but the replica labels), keeps the
// largest (a counter read a moment later on one rank); a note says when the copies disagree.
template <typename T>
std::vector<T> one_per_replica_set(Engine e, std::vector<T> series, const std::string& source,
                                   std::vector<std::string>& replicated) {
  if (e != Engine::kSglang || series.size() < 2) return series;
  std::vector<std::pair<promtext::Labels, T>> kept;
  bool copies = false;
  bool disagree = false;
  for (T& s : series) {
    promtext::Labels key = replica_key(labels_of(s));
    auto same = std::find_if(kept.begin(), kept.end(), [&](const auto& k) { return k.first == key; });
    if (same == kept.end()) {
      kept.emplace_back(std::move(key), std::move(s));
      continue;
    }
    copies = true;
    if (size_of(s) != size_of(same->second)) disagree = true;
    if (size_of(s) > size_of(same->second)) same->second = std::move(s);
  }
  if (copies) replicated.push_back(disagree ? source + " (the copies differ; the largest is used)" : source);
  std::vector<T> out;
  for (auto& k : kept) out.push_back(std::move(k.second));
  return out;
}

}  // namespace

Engine detect_engine(const promtext::Exposition& e, std::string* prefix) {
  auto set = [&](std::string_view p) {
    if (prefix) *prefix = std::string(p);
  };
  // Ray Serve's vLLM: `ray_vllm:` before vLLM #25439, `ray_vllm_` after (every ':' becomes '_').
  for (std::string_view p : {"vllm:", "ray_vllm:", "ray_vllm_"}) {
    if (!starts_with_any(e, p)) continue;
    set(p);
    const std::string base(p);
    const bool v0 = e.family(base + "gpu_cache_usage_perc") || e.family(base + "num_requests_swapped") ||
                    e.family(base + "cpu_cache_usage_perc");
    return v0 ? Engine::kVllmV0 : Engine::kVllmV1;
  }
  if (starts_with_any(e, "sglang:")) return set("sglang:"), Engine::kSglang;
  if (starts_with_any(e, "llamacpp:")) return set("llamacpp:"), Engine::kLlamaCpp;
  if (starts_with_any(e, "tgi_")) return set("tgi_"), Engine::kTgi;
  set("");
  return Engine::kUnknown;
}

namespace {

// A histogram signal (the series merged into one, bucket bounds permitting) or a histogram's _sum
// read as a scalar.
void read_histogram_signal(const CatalogEntry& c, const promtext::MetricFamily* f, const std::string& name,
                           EngineSignals& out, std::vector<std::string>& replicated) {
  const auto idx = static_cast<std::size_t>(c.signal);
  if (f->type != promtext::MetricType::kHistogram) return;
  std::vector<promtext::HistogramSeries> picked;
  for (promtext::HistogramSeries& h : promtext::assemble_histograms(*f)) {
    if (matches(h.labels, c) && counted(out.engine, h.labels)) picked.push_back(std::move(h));
  }
  picked = one_per_replica_set(out.engine, std::move(picked), source_text(name, c), replicated);
  if (picked.empty()) return;
  if (c.read == Read::kHistogramSum) {
    ScalarSignal v{0, fmt::format("{}_sum", name), static_cast<int>(picked.size())};
    for (const promtext::HistogramSeries& h : picked) v.value += h.sum.value_or(0);
    out.scalars[idx] = std::move(v);
    return;
  }
  auto merged = promtext::merge_histograms(picked);
  if (!merged) {
    out.notes.push_back(fmt::format("{}: series have different bucket bounds; not merged", name));
    return;
  }
  out.histograms[idx] = HistogramSignal{std::move(*merged), name, static_cast<int>(picked.size())};
}

// A scalar signal: one value per series (summed, or the largest for gauges that take the max),
// split by a label where the catalog asks.
void read_scalar_signal(const CatalogEntry& c, const promtext::MetricFamily* f, const std::string& name,
                        EngineSignals& out, std::vector<std::string>& replicated) {
  const auto idx = static_cast<std::size_t>(c.signal);
  // One value per series: a series whose point is repeated (`m 1 100`, `m 2 200`) counts with its
  // last point, never the sum of its points.
  std::vector<Point> series;
  bool repeated = false;
  for (const promtext::Sample& smp : f->samples) {
    if (smp.name != name || !matches(smp.labels, c) || !counted(out.engine, smp.labels)) continue;
    auto same = std::find_if(series.begin(), series.end(), [&](const Point& p) { return *p.labels == smp.labels; });
    if (same != series.end()) {
      same->value = smp.value;
      repeated = true;
    } else {
      series.push_back(Point{&smp.labels, smp.value});
    }
  }
  if (repeated) {
    out.notes.push_back(
        fmt::format("{}: a series has more than one point on the page; its last point is used", source_text(name, c)));
  }
  series = one_per_replica_set(out.engine, std::move(series), source_text(name, c), replicated);
  ScalarSignal v{0, source_text(name, c), 0};
  for (const Point& p : series) {
    v.value = v.series == 0 ? p.value : signal_takes_max(c.signal) ? std::max(v.value, p.value) : v.value + p.value;
    ++v.series;
    if (c.split.empty()) continue;
    const std::string* key = promtext::find_label(*p.labels, c.split);
    const std::string k = key ? *key : std::string();
    auto part = std::find_if(v.parts.begin(), v.parts.end(), [&](const SignalPart& x) { return x.key == k; });
    if (part == v.parts.end())
      v.parts.push_back(SignalPart{k, p.value});
    else
      part->value += p.value;
  }
  if (v.series > 0) out.scalars[idx] = std::move(v);
}

}  // namespace

EngineSignals extract_signals(const promtext::Exposition& e) {
  EngineSignals out;
  out.engine = detect_engine(e, &out.prefix);
  if (out.engine == Engine::kUnknown) {
    out.notes.push_back("no known engine's metric names (vllm:, sglang:, llamacpp:, tgi_): nothing is derived");
    return out;
  }
  const std::uint32_t bit = engine_bit(out.engine);
  std::vector<std::string> replicated;  // series published once per parallel rank
  for (const CatalogEntry& c : catalog()) {
    if (!(c.engines & bit)) continue;
    const auto idx = static_cast<std::size_t>(c.signal);
    const SignalKind kind = signal_kind(c.signal);
    if (kind == SignalKind::kHistogram
            ? out.histograms[idx].has_value()
            : out.scalars[idx].has_value() || (kind == SignalKind::kInfo && !out.cache_config.empty())) {
      continue;  // an earlier entry already supplied this signal
    }
    std::string name(c.family);
    if (out.prefix == "ray_vllm:" && name.starts_with("vllm:")) name = "ray_" + name;
    if (out.prefix == "ray_vllm_" && name.starts_with("vllm:")) {
      std::replace(name.begin(), name.end(), ':', '_');
      name = "ray_" + name;
    }
    const promtext::MetricFamily* f = find_family(e, name);
    if (!f) continue;
    if (kind == SignalKind::kInfo) {
      for (const promtext::Sample& s : f->samples) {
        out.cache_config = s.labels;
        out.cache_config_source = name;
        break;
      }
      continue;
    }
    if (kind == SignalKind::kHistogram || c.read == Read::kHistogramSum) {
      read_histogram_signal(c, f, name, out, replicated);
      continue;
    }
    read_scalar_signal(c, f, name, out, replicated);
  }
  if (!replicated.empty()) {
    out.notes.push_back(fmt::format("one copy per tensor/pipeline/expert-parallel rank, counted once: {}",
                                    fmt::join(replicated, ", ")));
  }
  // An engine that counts computed and cached prompt tokens apart (llama.cpp) states the prompt
  // total only through both; with the computed count alone, no prompt total is claimed.
  const ScalarSignal* computed = out.scalar(Signal::kComputedPromptTokens);
  const ScalarSignal* cached = out.scalar(Signal::kCachedPromptTokens);
  if (!out.scalar(Signal::kPromptTokens) && computed && cached) {
    out.scalars[static_cast<std::size_t>(Signal::kPromptTokens)] =
        ScalarSignal{computed->value + cached->value, computed->source + " + " + cached->source, computed->series};
  }
  for (const promtext::MetricFamily& f : e.families) {
    if (!std::string_view(f.name).starts_with(out.prefix)) continue;
    for (const promtext::Sample& s : f.samples) {
      const std::string* m = promtext::find_label(s.labels, "model_name");
      if (m && std::find(out.models.begin(), out.models.end(), *m) == out.models.end()) out.models.push_back(*m);
    }
  }
  if (out.engine == Engine::kVllmV0 &&
      (out.scalar(Signal::kPrefixCacheQueries) || out.histogram(Signal::kPrefillTime))) {
    out.notes.push_back("V0 metric names with V1-era families beside them (a composite or a transitional build)");
  }
  return out;
}

}  // namespace mpo::engines
