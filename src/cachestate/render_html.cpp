// The implementation of cachestate/render_html.hpp. The cache-state report as a page (pure,
// src/present): the verdict, each arm's transition with its result and the counters that prove it,
// and the probes' reused tokens.
#include "cachestate/render_html.hpp"

#include <fmt/format.h>

#include "core/time.hpp"
#include "present/chart.hpp"
#include "present/page.hpp"

namespace mpo::cachestate {
namespace {

std::string counter_delta(const std::optional<MetricSnapshot>& pre, const std::optional<MetricSnapshot>& post,
                          std::optional<std::uint64_t> MetricSnapshot::*field) {
  if (!pre || !post || !((*pre).*field) || !((*post).*field)) return "n/a";
  const auto a = *((*pre).*field), b = *((*post).*field);
  return b >= a ? fmt::format("+{}", b - a) : fmt::format("-{}", a - b);
}

}  // namespace

std::string report_html(const Report& r) {
  present::Header h;
  h.title = "Cache-state transitions";
  h.measured = fmt::format(
      "{} arms, each a prefix-cache transition (admit, reuse, evict, expire, invalidate) shown by probes and the "
      "backend's own counters before and after.",
      r.arms.size());
  const bool admitted = r.verdict == "admitted";
  std::vector<std::string> reasons;
  for (const auto& a : r.arms) {
    if (!a.invalid_reason.empty()) reasons.push_back(fmt::format("{}: {}", a.label, a.invalid_reason));
  }
  h.verdict = present::Verdict{admitted, admitted ? "admitted: every arm proves its transition" : "invalid arms",
                               std::move(reasons)};
  h.facts = {{"evidence", r.provenance.evidence_kind + (r.provenance.scope.empty() ? "" : ", " + r.provenance.scope)}};
  if (r.created_at_us > 0) h.facts.emplace_back("made", format_rfc3339_us(r.created_at_us));
  if (!r.provenance.command.empty()) h.facts.emplace_back("command", r.provenance.command);
  if (!r.pinned_prefix_digest.empty()) h.facts.emplace_back("pinned prefix", r.pinned_prefix_digest.substr(0, 19));
  if (!r.provenance.tool_version.empty()) h.facts.emplace_back("made by", "modelperfobs " + r.provenance.tool_version);
  if (!r.provenance.note.empty()) h.warnings.push_back(r.provenance.note);
  present::Page page(std::move(h));

  present::Table arms({"arm", "layer", "transition", "result", "reason", "counted", "mechanism", "probes reused",
                       "reuse hits", "evictions", "expirations", "invalidations", "ms"});
  present::Chart probes("Reused tokens of each probe", present::Axis{"probe", present::Scale::kLinear, true, true},
                        present::Axis{"reused tokens"});
  for (const auto& a : r.arms) {
    const auto& t = a.receipt;
    std::size_t reused = 0;
    std::vector<present::Point> pts;
    for (std::size_t i = 0; i < t.probes.size(); ++i) {
      reused += t.probes[i].reused ? 1 : 0;
      pts.push_back({static_cast<double>(i + 1), static_cast<double>(t.probes[i].reused_tokens)});
    }
    probes.add({a.label, std::move(pts), present::Mark::kLineDots, ""});
    arms.row({a.label, t.layer, t.transition, t.result, t.reason.empty() ? "-" : t.reason,
              a.measurement_included ? "yes" : "no", t.mechanism.name + (t.mechanism.exit_ok ? "" : " (failed)"),
              fmt::format("{} of {}", reused, t.probes.size()),
              counter_delta(t.pre_metrics, t.post_metrics, &MetricSnapshot::reuse_hits),
              counter_delta(t.pre_metrics, t.post_metrics, &MetricSnapshot::evictions),
              counter_delta(t.pre_metrics, t.post_metrics, &MetricSnapshot::expirations),
              counter_delta(t.pre_metrics, t.post_metrics, &MetricSnapshot::invalidations),
              fmt::format("{:.1f}", static_cast<double>(t.ended_at_us - t.started_at_us) / 1000.0)},
             a.measurement_included && t.result != "invalid" ? "" : "worse");
  }
  probes.note(
      "A probe reuses the pinned prefix when the cache still holds it: after an eviction, expiry or "
      "invalidation the next probe's reused tokens drop to 0.");
  page.section("Arms",
               arms.html("arms") +
                   present::paragraph("Counter columns: the backend's counter after the arm less before it.", "note"));
  page.section("Probes", probes.svg());
  return page.html();
}

}  // namespace mpo::cachestate
