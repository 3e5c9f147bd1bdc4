// Scenarios change the engine for real: background requests that occupy slots and KV blocks (and
// count in every metric like any other client's), capacity cuts, and faults for client requests.
// Pure: driven by engine time.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/result.hpp"
#include "sim/config.hpp"
#include "sim/engine.hpp"

namespace mpo::sim {

enum class Scenario { kNormal, kRamp, kSaturation, kFaults };
std::string_view to_string(Scenario s);
Result<Scenario> parse_scenario(std::string_view name);

enum class Fault { kNone, kError, kTruncate, kStall };

class ScenarioController {
 public:
  ScenarioController(const Profile& profile, std::uint64_t seed);

  // Switches scenario at `now_s`: restores the base engine, aborts the old background traffic
  // (returned, so it can be recorded), then applies the new scenario's capacity cuts.
  std::vector<FinishedRequest> set(Scenario s, double now_s, Engine& engine);
  // Tops the background population up to the scenario's target at `now_s`.
  void tick(double now_s, Engine& engine);
  // Must be told of every finished request, so background ones are replaced.
  void on_finished(const FinishedRequest& f) { background_.erase(f.id); }
  bool is_background(RequestId id) const { return background_.count(id) != 0; }
  // For a new client request: which fault, if any, it meets (only under `faults`).
  Fault draw_fault();

  Scenario current() const { return current_; }
  double since_s() const { return since_s_; }
  int background_in_flight() const { return static_cast<int>(background_.size()); }
  // True while tick() has more to do over time (ramp).
  bool wants_ticks() const { return current_ == Scenario::kRamp || current_ == Scenario::kSaturation; }

 private:
  int target(double now_s) const;
  const Profile& profile_;
  std::mt19937_64 rng_;
  Scenario current_ = Scenario::kNormal;
  double since_s_ = 0;
  std::unordered_set<RequestId> background_;
  std::uint64_t next_background_ = 0;
};

}  // namespace mpo::sim
