#include "support/html_page.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

namespace mpo::test {
namespace {

// The value of attribute `name` in the tag that starts at `tag` (the text up to its '>').
std::string attribute(std::string_view tag, std::string_view name) {
  const auto end = tag.find('>');
  const auto head = tag.substr(0, end);
  const std::string needle = fmt::format(" {}=\"", name);
  const auto at = head.find(needle);
  if (at == std::string_view::npos) return {};
  const auto from = at + needle.size();
  return std::string(head.substr(from, head.find('"', from) - from));
}

int count(std::string_view text, std::string_view needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// Each element that starts with `open` inside `text`, from its start to the next `close`.
std::vector<std::string_view> elements(std::string_view text, std::string_view open, std::string_view close) {
  std::vector<std::string_view> out;
  for (auto at = text.find(open); at != std::string_view::npos; at = text.find(open, at + 1)) {
    const auto end = text.find(close, at);
    out.push_back(text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
  }
  return out;
}

std::string unescape(std::string s) {
  for (const auto& [from, to] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + 1))
      s.replace(at, std::string_view(from).size(), to);
  }
  return s;
}

}  // namespace

std::vector<ChartSeen> charts_in(const std::string& dom) {
  std::vector<ChartSeen> out;
  for (const auto fig : elements(dom, "<figure class=\"chart\"", "</figure>")) {
    ChartSeen c;
    c.title = unescape(attribute(fig, "data-title"));
    for (const auto g : elements(fig, "<g class=\"series\"", "</g>"))
      c.series[unescape(attribute(g, "data-name"))] = std::atoi(attribute(g, "data-points").c_str());
    for (const auto g : elements(fig, "<g class=\"reference\"", "</g>"))
      c.references.push_back(unescape(attribute(g, "data-name")));
    for (const auto axis : elements(fig, "<g class=\"x-axis\"", "</g>")) {
      c.x_scale = attribute(axis, "data-scale");
      c.x_ticks = count(axis, "class=\"tick\"");
    }
    for (const auto axis : elements(fig, "<g class=\"y-axis\"", "</g>")) {
      c.y_scale = attribute(axis, "data-scale");
      c.y_ticks = count(axis, "class=\"tick\"");
    }
    // The plot's right edge: the x axis's frame line ends there.
    double plot_right = 0;
    for (const auto axis : elements(fig, "<g class=\"x-axis\"", "</g>")) {
      for (const auto line : elements(axis, "<line class=\"frame\"", ">"))
        plot_right = std::atof(attribute(line, "x2").c_str());
    }
    const auto legend_at = fig.find("<g class=\"legend\"");
    if (legend_at != std::string_view::npos) {
      const auto legend = fig.substr(legend_at);
      const auto items = elements(legend, "<g class=\"legend-item\"", "</g>");
      c.legend_items = static_cast<int>(items.size());
      c.legend_right_of_plot = plot_right > 0;
      for (const auto item : items) {
        for (const auto text : elements(item, "<text", ">")) {
          if (std::atof(attribute(text, "x").c_str()) <= plot_right) c.legend_right_of_plot = false;
        }
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::string chart_titles(const std::vector<ChartSeen>& charts) {
  std::string s;
  for (const auto& c : charts) s += (s.empty() ? "" : "; ") + c.title;
  return s;
}

std::string chart_problems(const std::vector<ChartSeen>& charts) {
  std::string out;
  for (const auto& c : charts) {
    int with_points = 0;
    for (const auto& [name, n] : c.series) with_points += n > 0 ? 1 : 0;
    if (with_points == 0) out += fmt::format("'{}': no series with points\n", c.title);
    if (c.x_ticks < 3 || c.y_ticks < 3)
      out += fmt::format("'{}': {} x ticks, {} y ticks\n", c.title, c.x_ticks, c.y_ticks);
    if (c.legend_items != static_cast<int>(c.series.size() + c.references.size()))
      out += fmt::format("'{}': {} legend entries for {} series and {} references\n", c.title, c.legend_items,
                         c.series.size(), c.references.size());
    if (!c.legend_right_of_plot) out += fmt::format("'{}': the legend is not beside the plot\n", c.title);
  }
  return out;
}

std::vector<std::string> table_headers(const std::string& dom) {
  std::vector<std::string> out;
  for (const auto table : elements(dom, "<table", "</thead>")) {
    std::string joined;
    for (const auto th : elements(table, "<th>", "</th>"))
      joined += (joined.empty() ? "" : "|") + unescape(std::string(th.substr(4)));
    out.push_back(joined);
  }
  return out;
}

}  // namespace mpo::test
