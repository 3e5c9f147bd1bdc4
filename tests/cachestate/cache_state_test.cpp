// The hermetic cache-state benchmark: fak's key test vector, the cache itself, every transition
// proved, every exclusion rule triggered on purpose, strict reading and tamper detection.
#include <gtest/gtest.h>

#include "cachestate/prefix_cache.hpp"
#include "cachestate/receipt.hpp"
#include "cachestate/runner.hpp"
#include "support/fixtures.hpp"

namespace mpo::cachestate {
namespace {

const std::vector<std::string> kAll = {"cold_start", "warm_admit", "explicit_invalidate", "pressure_evict",
                                       "natural_expiry"};

Provenance hermetic() {
  Provenance p;
  p.evidence_kind = "observed";
  p.scope = "in_process_prefix_cache";
  p.command = "modelperfobs cache-state-bench";
  p.tool_version = "test";
  p.note = "test";
  return p;
}

TEST(CacheState, FaksKeyTestVector) {
  const std::vector<std::int64_t> tokens = {101, 8426, 17, 23, 42, 99};
  EXPECT_EQ(prefix_key(tokens), "sha256:3f376fe4f2838c48beebc0c95f6e9cb84842772652455353136df40adb5b7426");
}

TEST(CacheState, TheCacheIsLruWithTtlAndCountsEveryTransition) {
  ManualClock clock(0, 0);
  PrefixCache c(2, 1000, clock);
  const std::vector<std::int64_t> a = {1}, b = {2}, d = {3};
  EXPECT_FALSE(c.request(a).reused);
  EXPECT_FALSE(c.request(b).reused);
  EXPECT_TRUE(c.request(a).reused);   // a is now the most recent
  EXPECT_FALSE(c.request(d).reused);  // evicts b, the least recently used
  EXPECT_TRUE(c.contains(a));
  EXPECT_FALSE(c.contains(b));
  EXPECT_TRUE(c.invalidate(a));
  EXPECT_FALSE(c.invalidate(a));
  clock.advance_us(1000);
  EXPECT_FALSE(c.request(d).reused);  // expired at its TTL
  const auto k = c.counters();
  EXPECT_EQ(k.requests, 5u);
  EXPECT_EQ(k.reuse_hits, 1u);
  EXPECT_EQ(k.reused_tokens, 1u);
  EXPECT_EQ(k.evictions, 1u);
  EXPECT_EQ(k.invalidations, 1u);
  EXPECT_EQ(k.expirations, 1u);
  EXPECT_EQ(k.entries, 1u);
}

TEST(CacheState, EveryTransitionIsProvedOnTheInProcessCache) {
  InProcessBackend b({}, SystemClock::instance());
  const Report r = run_campaign(b, "fak_workflow_cache", kPinnedPrefix, kAll, hermetic(), SystemClock::instance());
  ASSERT_EQ(r.arms.size(), 5u);
  for (const auto& a : r.arms) {
    EXPECT_EQ(a.receipt.result, "proved") << a.label << ": " << a.receipt.reason;
    EXPECT_TRUE(a.measurement_included);
    EXPECT_EQ(a.receipt.pinned_prefix_digest, prefix_key(kPinnedPrefix));
  }
  EXPECT_EQ(r.verdict, "admitted");
  // Admission proved: the warm arm's first probe missed and its second reused the prefix.
  const auto& warm = r.arms[1].receipt;
  EXPECT_FALSE(warm.probes[0].reused);
  EXPECT_TRUE(warm.probes[1].reused);
  EXPECT_EQ(warm.probes[1].reused_tokens, kPinnedPrefix.size());
  EXPECT_TRUE(validate_report(r).empty());
  // Round trip: strict reading of what we write gives the same text.
  const std::string text = report_text(r);
  auto back = parse_report(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(report_text(*back), text);
  EXPECT_TRUE(validate_report(*back).empty());
}

// Wrappers that break one rule each.
class Wrapped : public Backend {
 public:
  explicit Wrapped(InProcessBackend& inner) : in_(inner) {}
  Result<BackendIdentity> identity() override { return in_.identity(); }
  std::optional<std::string> supports(std::string_view l, std::string_view t) override { return in_.supports(l, t); }
  Result<MetricSnapshot> snapshot(std::string_view l) override { return in_.snapshot(l); }
  Result<MechanismReceipt> apply(std::string_view l, std::string_view t, const std::vector<std::int64_t>& p) override {
    return in_.apply(l, t, p);
  }
  Result<ProbeObservation> probe(std::string_view l, const std::vector<std::int64_t>& p) override {
    return in_.probe(l, p);
  }

 protected:
  InProcessBackend& in_;
};

TransitionReceipt one(Backend& b, const char* transition) {
  return run_transition(b, "fak_workflow_cache", transition, kPinnedPrefix, SystemClock::instance());
}

TEST(CacheState, AResetThatIsANoOpIsExcluded) {
  struct NoOpReset : Wrapped {
    using Wrapped::Wrapped;
    Result<MechanismReceipt> apply(std::string_view l, std::string_view t,
                                   const std::vector<std::int64_t>& p) override {
      if (t == "cold_start" || t == "explicit_invalidate")
        return MechanismReceipt{std::string(*in_.supports(l, t)), true, "", 0, 0};
      return in_.apply(l, t, p);
    }
  };
  InProcessBackend inner({}, SystemClock::instance());
  NoOpReset b(inner);
  auto cold = one(b, "cold_start");
  EXPECT_EQ(cold.result, "transition_unproved");
  EXPECT_EQ(cold.reason, "reuse_observed_after_cold");
  auto inv = one(b, "explicit_invalidate");
  EXPECT_EQ(inv.reason, "invalidation_postcondition_failed");
  const Report r = run_campaign(b, "fak_workflow_cache", kPinnedPrefix, {"cold_start", "warm_admit"}, hermetic(),
                                SystemClock::instance());
  EXPECT_EQ(r.verdict, "invalid_arms");
  EXPECT_FALSE(r.arms[0].measurement_included);
  EXPECT_EQ(r.arms[0].invalid_reason, "transition_unproved:reuse_observed_after_cold");
  EXPECT_TRUE(r.arms[1].measurement_included);  // the warm arm still stands on its own evidence
  EXPECT_TRUE(validate_report(r).empty());      // an honest report of an excluded arm is valid
}

TEST(CacheState, ForeignTrafficIsCaught) {
  struct Foreign : Wrapped {
    using Wrapped::Wrapped;
    Result<MechanismReceipt> apply(std::string_view l, std::string_view t,
                                   const std::vector<std::int64_t>& p) override {
      in_.cache().request(std::vector<std::int64_t>{7, 7, 7});  // someone else's request meanwhile
      return in_.apply(l, t, p);
    }
  };
  InProcessBackend inner({}, SystemClock::instance());
  Foreign b(inner);
  EXPECT_EQ(one(b, "cold_start").reason, "concurrent_traffic_contamination");
  struct Busy : Wrapped {
    using Wrapped::Wrapped;
    Result<ProbeObservation> probe(std::string_view l, const std::vector<std::int64_t>& p) override {
      auto o = in_.probe(l, p);
      if (o) o->concurrent_requests = 1;  // the server said another request was running
      return o;
    }
  };
  Busy busy(inner);
  EXPECT_EQ(one(busy, "cold_start").reason, "concurrent_traffic_contamination");
}

TEST(CacheState, StaleSamplesResetsAndIdentityChangesAreExcluded) {
  struct Stale : Wrapped {
    using Wrapped::Wrapped;
    Result<MetricSnapshot> snapshot(std::string_view l) override {
      auto s = in_.snapshot(l);
      if (s) s->sample_sequence = 1;  // the same sample twice
      return s;
    }
  };
  struct Reset : Wrapped {
    using Wrapped::Wrapped;
    Result<MetricSnapshot> snapshot(std::string_view l) override {
      auto s = in_.snapshot(l);
      if (s) s->counter_epoch = "process-" + std::to_string(++n);
      return s;
    }
    int n = 0;
  };
  struct Moved : Wrapped {
    using Wrapped::Wrapped;
    Result<BackendIdentity> identity() override {
      auto id = in_.identity();
      if (id) id->instance += std::to_string(++n);
      return id;
    }
    int n = 0;
  };
  InProcessBackend inner({}, SystemClock::instance());
  Stale stale(inner);
  EXPECT_EQ(one(stale, "cold_start").reason, "stale_metrics");
  Reset reset(inner);
  EXPECT_EQ(one(reset, "cold_start").reason, "counter_reset");
  Moved moved(inner);
  EXPECT_EQ(one(moved, "cold_start").reason, "backend_identity_changed");
}

TEST(CacheState, UnsupportedLayersAndArmsAreReportedWithoutInvalidatingProvedOnes) {
  InProcessBackend::Options no_ttl;
  no_ttl.ttl_us = 0;
  InProcessBackend b(no_ttl, SystemClock::instance());
  Report r = run_campaign(b, "fak_workflow_cache", kPinnedPrefix, kAll, hermetic(), SystemClock::instance());
  EXPECT_EQ(r.arms[4].receipt.result, "unsupported");
  EXPECT_EQ(r.arms[4].receipt.reason, "backend_does_not_support_transition");
  EXPECT_EQ(r.verdict, "admitted");
  EXPECT_TRUE(validate_report(r).empty());
  r = run_campaign(b, "provider_prompt_cache", kPinnedPrefix, kAll, hermetic(), SystemClock::instance());
  for (const auto& a : r.arms) EXPECT_EQ(a.receipt.result, "unsupported");
  EXPECT_EQ(r.verdict, "invalid_arms");  // nothing proved
}

TEST(CacheState, StrictReadingAndTamperDetection) {
  InProcessBackend b({}, SystemClock::instance());
  const Report r = run_campaign(b, "fak_workflow_cache", kPinnedPrefix, kAll, hermetic(), SystemClock::instance());
  const std::string text = report_text(r);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return t;
  };
  // An unknown field, trailing data, not JSON.
  auto unknown = parse_report(replace("\"verdict\": ", "\"extra\": 1,\n  \"verdict\": "));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown field \"extra\""), std::string::npos) << unknown.error().message;
  EXPECT_FALSE(parse_report(text + "{}").ok());
  EXPECT_FALSE(parse_report("[]").ok());
  // A probe edited to say it reused the prefix after the cold reset.
  auto edited = parse_report(replace("\"reused\": false", "\"reused\": true"));
  ASSERT_TRUE(edited.ok());
  EXPECT_FALSE(validate_report(*edited).empty());
  // A verdict that does not follow from the arms.
  auto verdict = parse_report(replace("\"verdict\": \"admitted\"", "\"verdict\": \"invalid_arms\""));
  ASSERT_TRUE(verdict.ok());
  EXPECT_FALSE(validate_report(*verdict).empty());
  // A transition listed twice.
  Report twice = r;
  twice.arms.push_back(r.arms[0]);
  EXPECT_FALSE(validate_report(twice).empty());
}

// fak's own report (`fak-model-cache-state-benchmark/1`), as its hermetic run writes it (the
// fixture is invented from docs/FAK.md 4.5-4.6: the same prefix, counters and arms): it verifies
// under fak's rules, and the one place our rules are stricter is named.
TEST(CacheState, FaksReportVerifiesUnderFaksRulesAndOursAreNamedWhereStricter) {
  const std::string text = test::read_fixture("cachestate/fak_hermetic_witness_INVENTED.json");
  auto r = parse_report(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->provenance.go_version, "go1.24.5");
  EXPECT_EQ(report_text(*r), text);  // written back in fak's shape, byte for byte
  EXPECT_TRUE(validate_report(*r).empty()) << validate_report(*r).front();
  const auto stricter = stricter_than_fak(*r);
  ASSERT_EQ(stricter.size(), 1u);
  EXPECT_EQ(stricter[0].rfind("arm warm_admit: proved under fak's rules, warm_probe_not_reused under ours", 0), 0u)
      << stricter[0];
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return parse_report(t);
  };
  // fak's reports are read strictly too: our fields are unknown in them.
  auto ours_field = replace("\"verdict\": ", "\"created_at\": \"2026-08-22T07:16:05Z\",\n  \"verdict\": ");
  ASSERT_FALSE(ours_field.ok());
  EXPECT_NE(ours_field.error().message.find("unknown field \"created_at\""), std::string::npos);
  // The cold arm's probe edited into a hit.
  auto edited = replace("\"reused\": false", "\"reused\": true");
  ASSERT_TRUE(edited.ok());
  const auto problems = validate_report(*edited);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("arm cold_start: written as proved, re-verifies under fak's rules as"),
            std::string::npos)
      << problems.front();
  // A counter edited: the hits no longer match the probes.
  auto counter = replace("\"reuse_hits\": 2,", "\"reuse_hits\": 3,");
  ASSERT_TRUE(counter.ok());
  EXPECT_FALSE(validate_report(*counter).empty());
  // A fak report without one of the four transitions fails fak's completeness rule.
  Report missing = *r;
  missing.arms.pop_back();
  ASSERT_FALSE(validate_report(missing).empty());
  EXPECT_EQ(validate_report(missing).front(), "no included pressure_evict arm");
}

}  // namespace
}  // namespace mpo::cachestate
