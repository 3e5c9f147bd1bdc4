// The HTML pages' frame (pure): one stylesheet, a header that says what was measured, when,
// against what, and whether the evidence holds for claims; sections with a table of contents;
// rendered tables. Shared by report, sweep, attribute, cache-state-bench and bandwidth. Every
// text is escaped here; callers pass plain text, and HTML only where a parameter says so.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mpo::present {

// A table whose numeric cells are right-aligned (a cell is numeric when it reads as a number,
// optionally with a unit or % after it).
class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::string caption = {})
      : headers_(std::move(headers)), caption_(std::move(caption)) {}
  // `row_class`: a CSS class of the row (the stylesheet colours "worse" and "better").
  Table& row(std::vector<std::string> cells, std::string row_class = {});
  bool empty() const { return rows_.empty(); }
  std::string html(std::string_view css_class = {}) const;

 private:
  std::vector<std::string> headers_;
  std::string caption_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> row_classes_;
};

struct Verdict {
  bool valid = false;
  std::string label;                 // "valid for claims", "not valid for claims"
  std::vector<std::string> reasons;  // why not, or what holds
};

struct Header {
  std::string title;                                       // "Serving sweep: qwen3-8b"
  std::string measured;                                    // one sentence: what was measured
  std::vector<std::pair<std::string, std::string>> facts;  // when, against what, how many, ...
  std::optional<Verdict> verdict;                          // absent: the page makes no claim
  std::vector<std::string> warnings;
};

class Page {
 public:
  explicit Page(Header h) : header_(std::move(h)) {}
  // A section (listed in the contents); `html` is the section's body, already rendered.
  Page& section(std::string title, std::string html, std::string id = {});
  std::string html() const;

 private:
  Header header_;
  std::vector<std::pair<std::string, std::string>> sections_;  // title, body
  std::vector<std::string> ids_;
};

// Small pieces of body, escaped.
std::string paragraph(std::string_view text, std::string_view css_class = {});
std::string bullets(const std::vector<std::string>& items);
std::string heading(std::string_view text, int level = 3);
// A definition list of name: value pairs (a finding, a point's facts).
std::string facts(const std::vector<std::pair<std::string, std::string>>& items);
// A number for a cell: fixed `digits`, or "n/a" when absent.
std::string cell(std::optional<double> v, int digits = 1);

}  // namespace mpo::present
