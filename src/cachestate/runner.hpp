// Running cache-state transitions against a backend (docs/FAK.md 4.3, 4.5) and the hermetic
// in-process backend over this project's PrefixCache. Pure: a backend that does I/O lives at the
// edge and implements the same interface.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cachestate/prefix_cache.hpp"
#include "cachestate/receipt.hpp"
#include "core/clock.hpp"
#include "core/result.hpp"

namespace mpo::cachestate {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Result<BackendIdentity> identity() = 0;
  // The mechanism that performs the transition on the layer, or nullopt when there is no safe one.
  virtual std::optional<std::string> supports(std::string_view layer, std::string_view transition) = 0;
  virtual Result<MetricSnapshot> snapshot(std::string_view layer) = 0;
  virtual Result<MechanismReceipt> apply(std::string_view layer, std::string_view transition,
                                         const std::vector<std::int64_t>& pinned) = 0;
  virtual Result<ProbeObservation> probe(std::string_view layer, const std::vector<std::int64_t>& prefix) = 0;
};

// One transition: identity, pre snapshot, (precondition probe before it, except warm_admit),
// mechanism, probes (2 for warm_admit), post snapshot, identity, verification.
TransitionReceipt run_transition(Backend& b, std::string_view layer, std::string_view transition,
                                 const std::vector<std::int64_t>& pinned, const Clock& clock);

// Every transition in order; each arm is included only when proved.
Report run_campaign(Backend& b, std::string_view layer, const std::vector<std::int64_t>& pinned,
                    const std::vector<std::string>& transitions, Provenance provenance, const Clock& clock);

// fak's hermetic prefix (its test vector's tokens).
inline const std::vector<std::int64_t> kPinnedPrefix = {101, 8426, 17, 23, 42, 99};

// The hermetic backend: this project's PrefixCache in process (layer fak_workflow_cache, the name
// fak gives an in-process cache layer). Mechanisms: cold_start clears it; warm_admit clears it
// then lets the probes admit and reuse; explicit_invalidate removes the pinned entry;
// pressure_evict admits competing prefixes until the LRU evicts the pinned one; natural_expiry
// advances the cache's own clock past the TTL.
class InProcessBackend : public Backend {
 public:
  struct Options {
    std::size_t capacity = 4;
    std::int64_t ttl_us = 60'000'000;
  };
  InProcessBackend(Options o, const Clock& wall);

  Result<BackendIdentity> identity() override;
  std::optional<std::string> supports(std::string_view layer, std::string_view transition) override;
  Result<MetricSnapshot> snapshot(std::string_view layer) override;
  Result<MechanismReceipt> apply(std::string_view layer, std::string_view transition,
                                 const std::vector<std::int64_t>& pinned) override;
  Result<ProbeObservation> probe(std::string_view layer, const std::vector<std::int64_t>& prefix) override;

  PrefixCache& cache() { return cache_; }
  ManualClock& cache_clock() { return cache_clock_; }

 private:
  const Clock& wall_;
  ManualClock cache_clock_;  // the TTL's clock: injectable, advanced by natural_expiry
  PrefixCache cache_;
  std::uint64_t sequence_ = 0;
};

}  // namespace mpo::cachestate
