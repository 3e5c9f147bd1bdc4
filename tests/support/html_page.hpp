// Reading the charts and tables back out of a page's DOM (as headless Chromium serialises it), for
// the tests that check what a person would see: every chart with its series, axes with ticks, the
// legend outside the plot; tables rendered as tables.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mpo::test {

struct ChartSeen {
  std::string title;
  std::map<std::string, int> series;    // name -> points drawn
  std::vector<std::string> references;  // reference lines and markers, by name
  int x_ticks = 0, y_ticks = 0;         // tick labels drawn
  std::string x_scale, y_scale;         // linear | log2 | log10
  int legend_items = 0;
  bool legend_right_of_plot = false;  // every legend entry's text starts right of the plot's frame
};

std::vector<ChartSeen> charts_in(const std::string& dom);
// The titles of the charts, for messages.
std::string chart_titles(const std::vector<ChartSeen>& charts);
// Checks every chart: at least one series with points (or a "no data" mark), at least 3 ticks on
// each axis, a legend entry per series and reference, the legend outside the plot. Returns what
// failed, one line each ("" when all hold).
std::string chart_problems(const std::vector<ChartSeen>& charts);
// The <table> elements' header texts, in order (one string per table, headers joined with '|').
std::vector<std::string> table_headers(const std::string& dom);

}  // namespace mpo::test
