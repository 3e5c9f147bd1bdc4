// The implementation of cachestate/runner.hpp. Running cache-state transitions against a backend
// (docs/FAK.md 4.3, 4.5) and the hermetic in-process backend over this project's PrefixCache.
#include "cachestate/runner.hpp"

#include <fmt/format.h>

namespace mpo::cachestate {

TransitionReceipt run_transition(Backend& b, std::string_view layer, std::string_view transition,
                                 const std::vector<std::int64_t>& pinned, const Clock& clock) {
  TransitionReceipt r;
  r.layer = std::string(layer);
  r.transition = std::string(transition);
  r.started_at_us = clock.wall_us();
  r.pinned_prefix_digest = prefix_key(pinned);
  r.pinned_prefix_tokens = pinned.size();
  auto end = [&](std::string result, std::string reason) {
    r.result = std::move(result);
    r.reason = std::move(reason);
    r.ended_at_us = clock.wall_us();
    return r;
  };
  const auto mechanism = b.supports(layer, transition);
  if (!mechanism) return end("unsupported", "backend_does_not_support_transition");
  r.mechanism.name = *mechanism;
  auto before = b.identity();
  if (!before) return end("observation_failed", "backend_identity_before: " + before.error().message);
  r.backend_before = *before;
  // The pinned prefix is put in the cache first, so the arm starts from a warm state it proves.
  if (transition != "warm_admit") {
    auto pre_probe = b.probe(layer, pinned);
    if (!pre_probe) return end("observation_failed", "precondition_probe: " + pre_probe.error().message);
    r.precondition = *pre_probe;
  }
  auto pre = b.snapshot(layer);
  if (!pre) return end("observation_failed", "pre_metrics: " + pre.error().message);
  r.pre_metrics = *pre;
  auto applied = b.apply(layer, transition, pinned);
  if (!applied || !applied->exit_ok) {
    if (applied) r.mechanism = *applied;
    if (r.mechanism.name.empty()) r.mechanism.name = *mechanism;
    r.mechanism.exit_ok = false;
    if (!applied) r.mechanism.detail = applied.error().message;
    return end("mechanism_failed", "mechanism_failed");
  }
  r.mechanism = *applied;
  if (r.mechanism.name.empty()) r.mechanism.name = *mechanism;
  const int probes = transition == "warm_admit" ? 2 : 1;
  for (int i = 0; i < probes; ++i) {
    auto p = b.probe(layer, pinned);
    if (!p) return end("observation_failed", "probe: " + p.error().message);
    r.probes.push_back(*p);
  }
  auto post = b.snapshot(layer);
  if (!post) return end("observation_failed", "post_metrics: " + post.error().message);
  r.post_metrics = *post;
  auto after = b.identity();
  if (!after) return end("observation_failed", "backend_identity_after: " + after.error().message);
  r.backend_after = *after;
  r.ended_at_us = clock.wall_us();
  const std::string reason = verify_receipt(r);
  r.result = reason.empty() ? "proved" : "transition_unproved";
  r.reason = reason;
  return r;
}

Report run_campaign(Backend& b, std::string_view layer, const std::vector<std::int64_t>& pinned,
                    const std::vector<std::string>& transitions, Provenance provenance, const Clock& clock) {
  Report rep;
  rep.created_at_us = clock.wall_us();
  rep.provenance = std::move(provenance);
  if (rep.provenance.captured_at_us == 0) rep.provenance.captured_at_us = rep.created_at_us;
  rep.pinned_prefix_digest = prefix_key(pinned);
  for (const auto& t : transitions) {
    Arm arm;
    arm.label = t;
    arm.receipt = run_transition(b, layer, t, pinned, clock);
    arm.measurement_included = arm.receipt.result == "proved";
    if (!arm.measurement_included) {
      arm.invalid_reason =
          arm.receipt.reason.empty() ? arm.receipt.result : arm.receipt.result + ":" + arm.receipt.reason;
    }
    rep.arms.push_back(std::move(arm));
  }
  rep.verdict = verdict_of(rep.arms);
  return rep;
}

InProcessBackend::InProcessBackend(Options o, const Clock& wall)
    : wall_(wall), cache_clock_(0, 0), cache_(o.capacity, o.ttl_us, cache_clock_) {}

Result<BackendIdentity> InProcessBackend::identity() {
  return BackendIdentity{"modelperfobs-in-process-prefix-cache", "in-process",
                         fmt::format("capacity={};ttl_us={}", cache_.capacity(), cache_.ttl_us())};
}

std::optional<std::string> InProcessBackend::supports(std::string_view layer, std::string_view transition) {
  if (layer != "fak_workflow_cache") return std::nullopt;
  if (transition == "cold_start") return "clear-prefix-cache";
  if (transition == "warm_admit") return "clear-then-admit-pinned-prefix";
  if (transition == "explicit_invalidate") return "invalidate-pinned-prefix";
  if (transition == "pressure_evict") return "admit-competing-prefixes-to-capacity";
  if (transition == "natural_expiry" && cache_.ttl_us() > 0) return "advance-cache-clock-past-ttl";
  return std::nullopt;
}

Result<MetricSnapshot> InProcessBackend::snapshot(std::string_view layer) {
  if (layer != "fak_workflow_cache")
    return make_error(errc::kCacheStateLayer, "the in-process cache has no layer " + std::string(layer));
  const CacheCounters c = cache_.counters();
  MetricSnapshot m;
  m.captured_at_us = wall_.wall_us();
  m.sample_sequence = ++sequence_;
  m.source = "in-process-prefix-cache-counters";
  m.counter_epoch = "process-1";
  m.requests = c.requests;
  m.reuse_hits = c.reuse_hits;
  m.reused_tokens = c.reused_tokens;
  m.entries = c.entries;
  m.invalidations = c.invalidations;
  m.expirations = c.expirations;
  m.evictions = c.evictions;
  return m;
}

Result<MechanismReceipt> InProcessBackend::apply(std::string_view, std::string_view transition,
                                                 const std::vector<std::int64_t>& pinned) {
  MechanismReceipt m;
  m.exit_ok = true;
  if (transition == "cold_start" || transition == "warm_admit") {
    cache_.clear();
    m.name = transition == "cold_start" ? "clear-prefix-cache" : "clear-then-admit-pinned-prefix";
  } else if (transition == "explicit_invalidate") {
    m.name = "invalidate-pinned-prefix";
    m.exit_ok = cache_.invalidate(pinned);
    if (!m.exit_ok) m.detail = "the pinned prefix was not in the cache";
  } else if (transition == "pressure_evict") {
    m.name = "admit-competing-prefixes-to-capacity";
    for (std::size_t i = 0; i < cache_.capacity(); ++i) {
      std::vector<std::int64_t> competing = pinned;
      competing.push_back(-8426 - static_cast<std::int64_t>(i));
      cache_.admit(competing);
    }
    m.detail =
        fmt::format("admitted {} competing prefixes into a {}-entry cache", cache_.capacity(), cache_.capacity());
  } else if (transition == "natural_expiry") {
    m.name = "advance-cache-clock-past-ttl";
    cache_clock_.advance_us(cache_.ttl_us());
    m.detail = fmt::format("advanced the cache's clock by its TTL ({} us)", cache_.ttl_us());
  } else {
    return make_error(errc::kCacheStateTransition, "unknown transition " + std::string(transition));
  }
  return m;
}

Result<ProbeObservation> InProcessBackend::probe(std::string_view, const std::vector<std::int64_t>& prefix) {
  if (prefix.empty()) return make_error(errc::kCacheStateProbe, "an empty prefix cannot be probed");
  ProbeObservation p;
  p.started_at_us = wall_.wall_us();
  const Lookup l = cache_.request(prefix);
  p.completed_at_us = wall_.wall_us();
  p.token_prefix_digest = l.key;
  p.prompt_tokens = l.prompt_tokens;
  p.reused = l.reused;
  p.reused_tokens = l.reused_tokens;
  p.concurrent_requests = 0;  // one thread: nothing else can use the cache meanwhile
  return p;
}

}  // namespace mpo::cachestate
