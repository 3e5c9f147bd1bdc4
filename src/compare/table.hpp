// The tables of a comparison, one look for `report --baseline` and `sweep compare`: a row per
// metric (metric, n A / B, A, B, change, interval, verdict) as markdown, as an HTML table (worse
// rows red, better green) and as JSON objects. Values are written by the metric's unit: ms with two
// decimals, tokens/s with one, an error rate as a percentage and its change in percentage points.
// Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compare/change.hpp"

namespace mpo::compare {

// What the two sides are called: report's "baseline"/"new", sweep's "A"/"B".
struct Labels {
  std::string n_header;  // "n base / new"
  std::string a_header;  // "baseline"
  std::string b_header;  // "new"
  std::string a_json;    // "baseline": the JSON keys are n_<a_json>, <a_json>, ...
  std::string b_json;    // "new"
  bool gated = false;    // JSON carries bound and beyond_bound (report's --max-regression)
};

std::string value_text(const std::optional<double>& v, std::string_view metric);
std::string signed_text(const std::optional<double>& v, std::string_view metric);

std::vector<std::string> headers(const Labels& l);
// A row's cells; the verdict in bold for markdown, and ", beyond --max-regression" after a gated one.
std::vector<std::string> row_cells(const Change& c, bool bold_verdict);

std::string md_table(const std::vector<Change>& changes, const Labels& l);
std::string html_table(const std::vector<Change>& changes, const Labels& l, const std::string& caption);
std::string changes_json(const std::vector<Change>& changes, const Labels& l);

}  // namespace mpo::compare
