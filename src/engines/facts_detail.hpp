// Shared by the files that derive facts (facts.cpp, facts_kv.cpp): how a value is printed, how a
// stated value or an unavailable fact is made, and the facts each of them derives.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "engines/facts.hpp"

namespace mpo::engines::detail {

// The values of several signals at once: `const auto [hits, queries] = values(s, S::kHits, S::kQueries);`.
template <class... Signals>
auto values(const EngineSignals& s, Signals... sigs) {
  return std::tuple{s.value(sigs)...};
}

std::string num(double v);  // integers without decimals, else 4 significant digits
std::string source_of(const EngineSignals& s, Signal sig);
Fact unavailable(std::string id, std::string reason);
// Adds each present scalar as a stated value; returns how many were present.
int add_stated(Fact& f, const EngineSignals& s, std::initializer_list<std::pair<Signal, std::string_view>> signals);
// part / whole as the fact's derived fraction (named by its id), both counts beside it (named by their
// signals), their sources.
void set_share(Fact& f, const EngineSignals& s, Signal part_sig, double part, Signal whole_sig, double whole,
               std::string_view unit);
// Counters as stated values, with per-second rates over a window.
Fact counters(const EngineSignals& s, std::string id,
              std::initializer_list<std::pair<Signal, std::string_view>> signals, std::optional<double> seconds);
// A histogram's count, mean and estimated p50/p90/p99.
Fact latency(const EngineSignals& s, Signal sig, std::string_view label);

// facts_kv.cpp: preemption, KV pressure and residency, offload and transfer, the other caches, batching.
Fact preemptions(const EngineSignals& s, std::optional<double> seconds);
Fact kv_pressure(const EngineSignals& s);
Fact kv_residency(const EngineSignals& s);
Fact kv_offload(const EngineSignals& s);
Fact kv_transfer(const EngineSignals& s);
Fact external_prefix_cache(const EngineSignals& s);
Fact mm_cache(const EngineSignals& s);
Fact tgi_batching(const EngineSignals& s);

}  // namespace mpo::engines::detail
