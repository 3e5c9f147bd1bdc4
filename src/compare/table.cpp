// The implementation of compare/table.hpp: a comparison's rows as markdown, HTML and JSON.
#include "compare/table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>

#include "core/json.hpp"
#include "present/page.hpp"

namespace mpo::compare {

namespace {

enum class Unit { kMs, kRate, kTokensPerSecond };

Unit unit_of(std::string_view metric) {
  if (metric == "error_rate") return Unit::kRate;
  if (metric == "throughput_tok_s") return Unit::kTokensPerSecond;
  return Unit::kMs;
}

bool colours(const Change& c) { return c.verdict == kWorse || c.verdict == kBetter; }

}  // namespace

namespace {

// A value in its metric's unit; with `sign`, a change (its sign always written, a rate's in
// percentage points).
std::string number_text(const std::optional<double>& v, std::string_view metric, bool sign) {
  if (!v) return "-";
  switch (unit_of(metric)) {
    case Unit::kRate: return sign ? fmt::format("{:+.2f}pp", *v * 100) : fmt::format("{:.2f}%", *v * 100);
    case Unit::kTokensPerSecond: return sign ? fmt::format("{:+.1f}", *v) : fmt::format("{:.1f}", *v);
    case Unit::kMs: break;
  }
  return sign ? fmt::format("{:+.2f}", *v) : fmt::format("{:.2f}", *v);
}

}  // namespace

std::string value_text(const std::optional<double>& v, std::string_view metric) {
  return number_text(v, metric, false);
}

std::string signed_text(const std::optional<double>& v, std::string_view metric) {
  return number_text(v, metric, true);
}

std::vector<std::string> headers(const Labels& l) {
  return {"metric", l.n_header, l.a_header, l.b_header, "change", "interval", "verdict"};
}

std::vector<std::string> row_cells(const Change& c, bool bold_verdict) {
  std::string verdict = bold_verdict && colours(c) ? "**" + c.verdict + "**" : c.verdict;
  if (c.beyond_bound) verdict += ", beyond --max-regression";
  return {c.metric,
          fmt::format("{} / {}", c.n_a, c.n_b),
          value_text(c.a, c.metric),
          value_text(c.b, c.metric),
          signed_text(c.delta, c.metric),
          c.ci_lo ? fmt::format("[{}, {}]", signed_text(c.ci_lo, c.metric), signed_text(c.ci_hi, c.metric)) : "-",
          std::move(verdict)};
}

std::string md_table(const std::vector<Change>& changes, const Labels& l) {
  std::string o = fmt::format("| {} |\n|---|---|---|---|---|---|---|\n", fmt::join(headers(l), " | "));
  for (const auto& c : changes) o += fmt::format("| {} |\n", fmt::join(row_cells(c, true), " | "));
  return o;
}

std::string html_table(const std::vector<Change>& changes, const Labels& l, const std::string& caption) {
  present::Table t(headers(l), caption);
  // Rows coloured by what they mean for the user: worse red, better green.
  for (const auto& c : changes) t.row(row_cells(c, false), colours(c) ? c.verdict : std::string());
  return t.html("comparison");
}

std::string changes_json(const std::vector<Change>& changes, const Labels& l) {
  std::vector<std::string> out;
  for (const auto& c : changes) {
    JsonObjectWriter w;
    w.field("metric", c.metric)
        .field("n_" + l.a_json, static_cast<std::uint64_t>(c.n_a))
        .field("n_" + l.b_json, static_cast<std::uint64_t>(c.n_b))
        .optional_field(l.a_json, c.a)
        .optional_field(l.b_json, c.b)
        .optional_field("change", c.delta)
        .optional_field("interval_low", c.ci_lo)
        .optional_field("interval_high", c.ci_hi)
        .field("verdict", c.verdict);
    if (l.gated) w.optional_field("bound", c.bound).field("beyond_bound", c.beyond_bound);
    out.push_back(std::move(w).finish());
  }
  return fmt::format("[{}]", fmt::join(out, ","));
}

}  // namespace mpo::compare
