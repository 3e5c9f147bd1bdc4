// The facts an engine states about itself, over a window (one snapshot: since the process
// started; two snapshots: their interval). Each fact says whether the engine states it, we derive
// it from stated series, the engine publishes it but never implemented it, or it is unavailable,
// and names its source series. The queueing reason comes first: it decides how to read the rest.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engines/signals.hpp"

namespace mpo::engines {

// kNotEnabled: published but never moving (vLLM registers its FLOPs/bytes counters always and moves
// them only with --enable-mfu-metrics; an older build may not implement them at all).
enum class FactStatus { kStated, kDerived, kNotEnabled, kUnavailable };
std::string_view to_string(FactStatus s);

struct FactValue {
  std::string name;
  double value = 0;
  std::string unit;
  bool estimate = false;  // from histogram bucket edges (histogram_quantile), not observed
  // For an estimate: the bucket (low, high] the quantile fell in; high is +Inf above the highest bound.
  std::optional<std::pair<double, double>> bucket;
};

struct Fact {
  std::string id;  // stable: "queueing_reason", "kv_pool_tokens", "ttft_seconds", ...
  FactStatus status = FactStatus::kUnavailable;
  std::string statement;  // one sentence for a person
  std::vector<FactValue> values;
  std::vector<std::string> sources;  // the series it rests on
  std::string reason;                // why unavailable or not enabled
  const FactValue* value(std::string_view name) const {
    for (const FactValue& v : values) {
      if (v.name == name) return &v;
    }
    return nullptr;
  }
};

// `window_seconds`: the interval length for rates (two snapshots), or nullopt (since start).
std::vector<Fact> derive_facts(const EngineSignals& s, std::optional<double> window_seconds);

const Fact* find_fact(const std::vector<Fact>& facts, std::string_view id);

}  // namespace mpo::engines
