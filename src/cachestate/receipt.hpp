// Cache-state transition receipts (docs/FAK.md 4: vocabulary, fields, exclusion rules) and the
// report around them, `modelperfobs.cache-state.v1`; strict reading (unknown fields and trailing
// data rejected) and verification. Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::cachestate {

inline constexpr const char* kReportSchema = "modelperfobs.cache-state.v1";
inline constexpr const char* kFakReportSchema = "fak-model-cache-state-benchmark/1";
inline constexpr const char* kReceiptSchema = "fak-cache-transition-receipt/1";

inline constexpr const char* kLayers[] = {"process_local_kv", "external_shared_kv", "provider_prompt_cache",
                                          "fak_workflow_cache"};
inline constexpr const char* kTransitions[] = {"cold_start", "warm_admit", "explicit_invalidate", "natural_expiry",
                                               "pressure_evict"};

struct BackendIdentity {
  std::string name, instance, revision;
  bool operator==(const BackendIdentity&) const = default;
};

// A counter the backend does not publish is absent (nullopt), never 0.
struct MetricSnapshot {
  std::int64_t captured_at_us = 0;
  std::uint64_t sample_sequence = 0;
  std::string source;
  std::string counter_epoch;
  std::optional<std::uint64_t> requests, reuse_hits, reused_tokens, entries, invalidations, expirations, evictions;
};

struct ProbeObservation {
  std::int64_t started_at_us = 0, completed_at_us = 0;
  std::string token_prefix_digest;
  std::uint64_t prompt_tokens = 0;
  bool reused = false;
  std::uint64_t reused_tokens = 0;
  std::uint64_t concurrent_requests = 0;
};

struct MechanismReceipt {
  std::string name;
  bool exit_ok = false;
  std::string detail;
  // Ours: requests the mechanism itself sent to the backend (competing prefixes), and the tokens
  // those reused; both are expected in the counter deltas.
  std::uint64_t requests_sent = 0;
  std::uint64_t reused_tokens = 0;
};

struct TransitionReceipt {
  std::string schema = kReceiptSchema;
  BackendIdentity backend_before, backend_after;
  std::string layer, transition;
  MechanismReceipt mechanism;
  std::int64_t started_at_us = 0, ended_at_us = 0;
  std::string result, reason;
  std::optional<MetricSnapshot> pre_metrics, post_metrics;
  std::vector<ProbeObservation> probes;
  // Ours: the pinned prefix's digest and length (the prefix is not stored), and the probe that
  // put the prefix in the cache before the transition (absent for warm_admit).
  std::string pinned_prefix_digest;
  std::uint64_t pinned_prefix_tokens = 0;
  std::optional<ProbeObservation> precondition;
};

struct Arm {
  std::string label;
  bool measurement_included = false;
  std::string invalid_reason;
  TransitionReceipt receipt;
};

struct Provenance {
  std::string evidence_kind;  // observed | simulated
  std::string scope;
  bool external_backend_claims = false;
  std::string command, tool_version, code_state = "unknown";
  std::int64_t captured_at_us = 0;
  std::string note;
  // fak's build facts (fak's reports only).
  std::string go_version, goos, goarch, code_revision;
};

struct Report {
  std::string schema = kReportSchema;
  std::int64_t created_at_us = 0;
  std::string verdict;  // admitted | invalid_arms
  Provenance provenance;
  std::string pinned_prefix_digest;
  std::vector<Arm> arms;
};

// Whose exclusion rules: ours are fak's (docs/FAK.md 4.4) and stricter: a probe carries the pinned
// prefix and lies inside the snapshot window, the precondition probe comes before the pre
// snapshot, a missing request counter proves nothing, the mechanism's own requests are counted,
// and warm_admit needs a first probe that misses (fak accepts a first probe that is already a hit,
// so admission by the arm is not proven).
enum class Rules { kOurs, kFak };

// First failure wins: "" when the receipt proves its transition, else the reason code.
std::string verify_receipt(const TransitionReceipt& r, Rules rules = Rules::kOurs);

// The verdict from the arms: admitted when every arm is proved or unsupported and one is proved.
std::string verdict_of(const std::vector<Arm>& arms);

// Structure and re-verification of every arm, empty when the report holds. Ours: 4.7 with
// unsupported arms allowed and a transition listed twice rejected. fak's reports
// (`fak-model-cache-state-benchmark/1`): 4.7 as fak checks it, under fak's rules.
std::vector<std::string> validate_report(const Report& r);

// For a fak report: each proved arm that our stricter rules would not prove, and why (one line each).
std::vector<std::string> stricter_than_fak(const Report& r);

std::string report_text(const Report& r);  // pretty Go-style JSON, one trailing newline
// Strict: unknown fields anywhere and trailing data are errors naming what was found.
Result<Report> parse_report(std::string_view text);

}  // namespace mpo::cachestate
