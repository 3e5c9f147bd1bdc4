// The implementation of sim/scenario.hpp. Scenarios change the engine for real: background requests
// that occupy slots and KV blocks (and count in every metric like any other client's), capacity
// cuts, and faults for client requests.
#include "sim/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

namespace mpo::sim {
namespace {
constexpr std::array<std::pair<Scenario, std::string_view>, 4> kNames = {{
    {Scenario::kNormal, "normal"},
    {Scenario::kRamp, "ramp"},
    {Scenario::kSaturation, "saturation"},
    {Scenario::kFaults, "faults"},
}};
}  // namespace

std::string_view to_string(Scenario s) {
  for (const auto& [v, n] : kNames) {
    if (v == s) return n;
  }
  return "normal";
}

Result<Scenario> parse_scenario(std::string_view name) {
  for (const auto& [v, n] : kNames) {
    if (n == name) return v;
  }
  return make_error(errc::kScenarioUnknown,
                    fmt::format("unknown scenario '{}': use normal, ramp, saturation or faults", name));
}

ScenarioController::ScenarioController(const Profile& profile, std::uint64_t seed)
    : profile_(profile), rng_(seed ^ 0xfa417ULL) {}

std::vector<FinishedRequest> ScenarioController::set(Scenario s, double now_s, Engine& engine) {
  std::vector<FinishedRequest> aborted;
  for (RequestId id : std::vector<RequestId>(background_.begin(), background_.end())) {
    if (auto f = engine.abort(id, now_s)) aborted.push_back(*f);
  }
  background_.clear();
  engine.set_max_num_seqs(profile_.engine.max_num_seqs);
  engine.set_reserved_blocks(0);
  current_ = s;
  since_s_ = now_s;
  if (s == Scenario::kSaturation) {
    engine.set_max_num_seqs(profile_.saturation.max_num_seqs);
    engine.set_reserved_blocks(
        static_cast<int>(profile_.saturation.reserved_kv_share * profile_.engine.num_gpu_blocks));
  }
  tick(now_s, engine);
  return aborted;
}

int ScenarioController::target(double now_s) const {
  switch (current_) {
    case Scenario::kSaturation: return profile_.saturation.background_requests;
    case Scenario::kRamp: {
      const double share = std::clamp((now_s - since_s_) / profile_.ramp.duration_s, 0.0, 1.0);
      return static_cast<int>(share * profile_.ramp.background_requests);
    }
    default: return 0;
  }
}

void ScenarioController::tick(double now_s, Engine& engine) {
  const int want = target(now_s);
  const bool sat = current_ == Scenario::kSaturation;
  const int prompt_len = sat ? profile_.saturation.background_prompt_tokens : profile_.ramp.background_prompt_tokens;
  const int output_len = sat ? profile_.saturation.background_output_tokens : profile_.ramp.background_output_tokens;
  while (background_in_flight() < want) {
    RequestSpec spec;
    // Distinct token IDs per background request: no accidental prefix-cache hits.
    const std::uint64_t n = ++next_background_;
    spec.prompt.reserve(static_cast<std::size_t>(prompt_len));
    for (int i = 0; i < prompt_len; ++i) {
      spec.prompt.push_back(static_cast<TokenId>(mix64(n * 0x10001ULL + static_cast<std::uint64_t>(i))));
    }
    spec.max_tokens = output_len;
    spec.ignore_eos = true;
    spec.seed = mix64(n);
    spec.background = true;
    auto id = engine.add_request(std::move(spec), now_s);
    if (!id) break;  // a profile whose background prompt cannot fit: nothing to add
    background_.insert(*id);
  }
}

Fault ScenarioController::draw_fault() {
  if (current_ != Scenario::kFaults) return Fault::kNone;
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  const auto& f = profile_.faults;
  if (u < f.error_share) return Fault::kError;
  if (u < f.error_share + f.truncate_share) return Fault::kTruncate;
  if (u < f.error_share + f.truncate_share + f.stall_share) return Fault::kStall;
  return Fault::kNone;
}

}  // namespace mpo::sim
