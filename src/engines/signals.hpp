// The canonical signals of one exposition: the engine detected from the family names present, and
// for each catalog signal its value (summed, or the largest for ratios, across label sets) with the
// series it came from. Unknown engines yield no signals: nothing is claimed about them.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engines/catalog.hpp"
#include "promtext/exposition.hpp"
#include "promtext/histogram.hpp"

namespace mpo::engines {

// One value of a split signal: the value of the catalog entry's `split` label and the series' value
// (summed over the rest of the labels).
struct SignalPart {
  std::string key;  // "0" (position), "GPU_to_CPU" (transfer_type), ...
  double value = 0;
  bool operator==(const SignalPart&) const = default;
};

struct ScalarSignal {
  double value = 0;
  std::string source;             // "vllm:num_requests_waiting_by_reason{reason=\"capacity\"}"
  int series = 0;                 // how many label sets were added up
  std::vector<SignalPart> parts;  // by the entry's split label, in order of first appearance; else empty
  const SignalPart* part(std::string_view key) const {
    for (const SignalPart& p : parts) {
      if (p.key == key) return &p;
    }
    return nullptr;
  }
};

struct HistogramSignal {
  promtext::HistogramSeries merged;  // buckets, sum and count over every matching series
  std::string source;
  int series = 0;
};

inline constexpr std::size_t kSignalCount = static_cast<std::size_t>(Signal::kCount);

struct EngineSignals {
  Engine engine = Engine::kUnknown;
  std::string prefix;               // "vllm:", "ray_vllm:", "ray_vllm_", "sglang:", "llamacpp:", "tgi_" or ""
  std::vector<std::string> models;  // distinct model_name label values
  std::array<std::optional<ScalarSignal>, kSignalCount> scalars;
  std::array<std::optional<HistogramSignal>, kSignalCount> histograms;
  promtext::Labels cache_config;  // the labels of vllm:cache_config_info, when published
  std::string cache_config_source;
  std::vector<std::string> notes;

  const ScalarSignal* scalar(Signal s) const {
    const auto& v = scalars[static_cast<std::size_t>(s)];
    return v ? &*v : nullptr;
  }
  const HistogramSignal* histogram(Signal s) const {
    const auto& v = histograms[static_cast<std::size_t>(s)];
    return v ? &*v : nullptr;
  }
  std::optional<double> value(Signal s) const {
    const ScalarSignal* v = scalar(s);
    return v ? std::optional<double>(v->value) : std::nullopt;
  }
  const std::string* config(std::string_view name) const { return promtext::find_label(cache_config, name); }
};

Engine detect_engine(const promtext::Exposition& e, std::string* prefix = nullptr);
EngineSignals extract_signals(const promtext::Exposition& e);

}  // namespace mpo::engines
