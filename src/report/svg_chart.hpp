// A small self-contained SVG line/dot chart (no scripts), and HTML escaping: shared by the
// report page and the sweep page.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.hpp"

namespace mpo::report {

inline std::string esc(std::string_view s) { return html_escape(s); }

// A small SVG chart: linear axes from data ranges, series as polylines or dots.
class Chart {
 public:
  Chart(std::string title, std::string x_label, std::string y_label)
      : title_(std::move(title)), x_label_(std::move(x_label)), y_label_(std::move(y_label)) {}
  void line(std::vector<std::pair<double, double>> pts, std::string color, std::string name) {
    series_.push_back({std::move(pts), std::move(color), std::move(name), false});
  }
  void dots(std::vector<std::pair<double, double>> pts, std::string color, std::string name) {
    series_.push_back({std::move(pts), std::move(color), std::move(name), true});
  }
  std::string svg() const {
    double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
    for (const auto& s : series_) {
      for (const auto& [x, y] : s.pts) {
        x0 = std::min(x0, x);
        x1 = std::max(x1, x);
        y1 = std::max(y1, y);
        y0 = std::min(y0, y);
      }
    }
    std::string o = fmt::format(
        R"x(<figure><figcaption>{}</figcaption><svg class="chart" viewBox="0 0 {} {}" width="{}" height="{}" role="img" aria-label="{}">)x",
        esc(title_), kW, kH, kW, kH, esc(title_));
    if (!std::isfinite(x0) || x1 <= x0) x1 = x0 + 1;
    if (!std::isfinite(x0)) x0 = 0, x1 = 1;
    if (!(y1 > y0)) y1 = y0 + 1;
    auto px = [&](double x) { return kL + (x - x0) / (x1 - x0) * (kW - kL - kR); };
    auto py = [&](double y) { return kH - kB - (y - y0) / (y1 - y0) * (kH - kT - kB); };
    o += fmt::format(
        R"x(<line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/><line class="axis" x1="{}" y1="{}" x2="{}" y2="{}"/>)x",
        kL, kH - kB, kW - kR, kH - kB, kL, kT, kL, kH - kB);
    o += fmt::format(
        R"x(<text x="{}" y="{}" class="tick">{:.4g}</text><text x="{}" y="{}" class="tick" text-anchor="end">{:.4g}</text>)x",
        kL, kH - kB + 14, x0, kW - kR, kH - kB + 14, x1);
    o += fmt::format(
        R"x(<text x="{}" y="{}" class="tick" text-anchor="end">{:.4g}</text><text x="{}" y="{}" class="tick" text-anchor="end">{:.4g}</text>)x",
        kL - 4, kH - kB, y0, kL - 4, kT + 8, y1);
    o += fmt::format(R"x(<text x="{}" y="{}" class="label" text-anchor="middle">{}</text>)x", (kL + kW - kR) / 2,
                     kH - 4, esc(x_label_));
    o += fmt::format(
        R"x(<text x="12" y="{}" class="label" transform="rotate(-90 12 {})" text-anchor="middle">{}</text>)x",
        (kT + kH - kB) / 2, (kT + kH - kB) / 2, esc(y_label_));
    int legend = 0;
    for (const auto& s : series_) {
      if (s.pts.empty()) continue;
      if (s.dots) {
        o += fmt::format(R"x(<g class="series" data-name="{}" data-points="{}" fill="{}">)x", esc(s.name), s.pts.size(),
                         s.color);
        for (const auto& [x, y] : s.pts)
          o += fmt::format(R"x(<circle cx="{:.1f}" cy="{:.1f}" r="2.5"/>)x", px(x), py(y));
        o += "</g>";
      } else {
        std::string pts;
        for (const auto& [x, y] : s.pts) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
        o += fmt::format(
            R"x(<polyline class="series" data-name="{}" data-points="{}" fill="none" stroke="{}" stroke-width="2" points="{}"/>)x",
            esc(s.name), s.pts.size(), s.color, pts);
      }
      o += fmt::format(R"x(<text x="{}" y="{}" class="legend" fill="{}">{}</text>)x", kW - kR - 150,
                       kT + 12 + 14 * legend++, s.color, esc(s.name));
    }
    return o + "</svg></figure>";
  }

 private:
  static constexpr int kW = 520, kH = 300, kL = 56, kR = 12, kT = 12, kB = 36;
  struct Series {
    std::vector<std::pair<double, double>> pts;
    std::string color, name;
    bool dots;
  };
  std::string title_, x_label_, y_label_;
  std::vector<Series> series_;
};

}  // namespace mpo::report
