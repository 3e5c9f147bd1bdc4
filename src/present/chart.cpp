// The implementation of present/chart.hpp. Charts for the HTML pages (pure): inline SVG drawn here,
// no scripts and no network, so a page is one self-contained file that opens offline and reads the
// same in every browser.
#include "present/chart.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/text.hpp"

namespace mpo::present {
namespace {

// The SVG's size and the plot area inside it; the legend has the column right of the plot.
constexpr double kW = 760, kH = 340;
constexpr double kLeft = 68, kRight = 560, kTop = 14, kBottom = 290;
constexpr std::size_t kMaxDrawn = 2000;  // points per series; more are thinned evenly, and the note says so
constexpr std::size_t kHoverAll = 80;    // a line with up to this many points gets a hover target per point
constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

const char* scale_name(Scale s) { return s == Scale::kLog2 ? "log2" : s == Scale::kLog10 ? "log10" : "linear"; }

double nice_step(double raw) {
  const double e = std::floor(std::log10(raw));
  const double f = raw / std::pow(10.0, e);
  const double n = f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10;
  return n * std::pow(10.0, e);
}

bool usable(double v, Scale s) { return std::isfinite(v) && (s == Scale::kLinear || v > 0); }

// Value -> pixel along one axis.
struct Map {
  double lo = 0, hi = 1, from = 0, to = 1;
  Scale scale = Scale::kLinear;
  double f(double v) const {
    switch (scale) {
      case Scale::kLog2: return std::log2(v);
      case Scale::kLog10: return std::log10(v);
      case Scale::kLinear: break;
    }
    return v;
  }
  double px(double v) const { return from + (f(v) - f(lo)) / (f(hi) - f(lo)) * (to - from); }
};

std::string num(double v) { return fmt::format("{:.1f}", v); }

std::string value_text(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// A name for the legend: at most 28 characters (the whole one is the entry's title).
std::string short_name(const std::string& s) { return s.size() <= 28 ? s : s.substr(0, 26) + "…"; }

}  // namespace

std::vector<double> ticks(double lo, double hi, Scale scale, int target, bool integer) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {0, 1};
  if (hi < lo) std::swap(lo, hi);
  std::vector<double> out;
  if (scale == Scale::kLinear || lo <= 0) {
    if (hi == lo) {
      const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
      lo = lo == 0 ? 0 : lo - pad;
      hi += pad;
    }
    const double step = std::max(nice_step((hi - lo) / std::max(1, target)), integer ? 1.0 : 0.0);
    const double first = std::floor(lo / step + 1e-9), last = std::ceil(hi / step - 1e-9);
    for (double k = first; k <= last; ++k) out.push_back(k * step == 0 ? 0 : k * step);
    return out;
  }
  if (scale == Scale::kLog2) {
    const int a = static_cast<int>(std::floor(std::log2(lo) + 1e-9));
    int b = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
    if (b == a) ++b;
    const int every = std::max(1, (b - a + 9) / 10);  // at most about ten labels
    for (int k = a; k < b + every; k += every) out.push_back(std::ldexp(1.0, k));
    return out;
  }
  const int a = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int b = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (b == a) ++b;
  // 2 and 5 between the decades when the values span few of them.
  const std::vector<double> steps = std::log10(hi / lo) <= 2.5 ? std::vector<double>{1, 2, 5} : std::vector<double>{1};
  std::vector<double> all;
  for (int k = a; k <= b; ++k) {
    for (double m : steps) all.push_back(m * std::pow(10.0, k));
  }
  // From the last tick at or below lo to the first at or above hi.
  std::size_t i0 = 0, i1 = all.size() - 1;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] <= lo * (1 + 1e-9)) i0 = i;
  }
  for (std::size_t i = all.size(); i-- > 0;) {
    if (all[i] >= hi * (1 - 1e-9)) i1 = i;
  }
  return {all.begin() + static_cast<std::ptrdiff_t>(i0), all.begin() + static_cast<std::ptrdiff_t>(i1) + 1};
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  if (a >= 1000 && v == std::floor(v)) {
    const auto i = static_cast<long long>(a);
    return fmt::format("{}{},{:03d}", v < 0 ? "-" : "", i / 1000, static_cast<int>(i % 1000));
  }
  return fmt::format("{:.4g}", v);
}

Scale scale_for(const std::vector<double>& values, double min_ratio) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!std::isfinite(v)) continue;
    if (v <= 0) return Scale::kLinear;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return std::isfinite(lo) && hi / lo >= min_ratio ? Scale::kLog10 : Scale::kLinear;
}

Scale scale_for_counts(const std::vector<double>& values) {
  return scale_for(values, 4) == Scale::kLog10 ? Scale::kLog2 : Scale::kLinear;
}

Chart& Chart::add(Series s) {
  if (s.color.empty()) s.color = kPalette[series_.size() % std::size(kPalette)];
  series_.push_back(std::move(s));
  return *this;
}

Chart& Chart::hline(std::string name, double y, std::string color) {
  rules_.push_back({std::move(name), y, std::move(color), true});
  return *this;
}

Chart& Chart::vline(std::string name, double x, std::string color) {
  rules_.push_back({std::move(name), x, std::move(color), false});
  return *this;
}

Chart& Chart::note(std::string text) {
  note_ = std::move(text);
  return *this;
}

bool Chart::empty() const {
  for (const auto& s : series_) {
    if (!s.points.empty()) return false;
  }
  return true;
}

namespace {

// What a chart is drawn on: the ticks and the value-to-pixel maps of both axes, over the ranges of
// the points and reference lines each scale can draw (no data: 0 to 1, linear).
struct Frame {
  std::vector<double> xt, yt;
  Scale xs = Scale::kLinear, ys = Scale::kLinear;
  Map mx, my;
  bool no_data = false;
  std::size_t dropped = 0;  // points a log scale cannot draw
};

Frame frame_of(const std::vector<Series>& series, const std::vector<ReferenceLine>& rules, const Axis& x,
               const Axis& y) {
  Frame f;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const auto& s : series) {
    for (const auto& p : s.points) {
      if (!usable(p.x, x.scale) || !usable(p.y, y.scale)) {
        ++f.dropped;
        continue;
      }
      x0 = std::min(x0, p.x), x1 = std::max(x1, p.x);
      y0 = std::min(y0, p.y), y1 = std::max(y1, p.y);
    }
  }
  for (const auto& r : rules) {
    if (r.horizontal && usable(r.at, y.scale)) y0 = std::min(y0, r.at), y1 = std::max(y1, r.at);
    if (!r.horizontal && usable(r.at, x.scale)) x0 = std::min(x0, r.at), x1 = std::max(x1, r.at);
  }
  f.no_data = !std::isfinite(x0) || !std::isfinite(y0);
  if (f.no_data) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x.scale == Scale::kLinear && x.from_zero && x0 > 0) x0 = 0;
  if (y.scale == Scale::kLinear && y.from_zero && y0 > 0) y0 = 0;
  f.xt = ticks(x0, x1, f.no_data ? Scale::kLinear : x.scale, 6, x.integer);
  f.yt = ticks(y0, y1, f.no_data ? Scale::kLinear : y.scale, 5, y.integer);
  f.xs = f.no_data || x0 <= 0 ? Scale::kLinear : x.scale;
  f.ys = f.no_data || y0 <= 0 ? Scale::kLinear : y.scale;
  f.mx = Map{f.xt.front(), f.xt.back(), kLeft, kRight, f.xs};
  f.my = Map{f.yt.front(), f.yt.back(), kBottom, kTop, f.ys};
  return f;
}

// Gridlines (under everything), then both axes with their ticks and labels.
std::string axes_svg(const Frame& f, const Axis& x, const Axis& y) {
  std::string o = R"(<g class="grid">)";
  for (double v : f.xt)
    o += fmt::format(R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>)", num(f.mx.px(v)), kTop, kBottom);
  for (double v : f.yt)
    o += fmt::format(R"(<line x1="{1}" y1="{0}" x2="{2}" y2="{0}"/>)", num(f.my.px(v)), kLeft, kRight);
  o += "</g>";
  o += fmt::format(R"(<g class="x-axis" data-scale="{}" data-ticks="{}">)", scale_name(f.xs), f.xt.size());
  o += fmt::format(R"(<line class="frame" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft, kBottom, kRight, kBottom);
  for (double v : f.xt) {
    o += fmt::format(R"(<line class="tick-mark" x1="{0}" y1="{1}" x2="{0}" y2="{2}"/>)", num(f.mx.px(v)), kBottom,
                     kBottom + 5);
    o += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="middle">{}</text>)", num(f.mx.px(v)),
                     kBottom + 18, tick_label(v));
  }
  o += fmt::format(R"(<text class="axis-label" x="{}" y="{}" text-anchor="middle">{}</text></g>)", (kLeft + kRight) / 2,
                   kH - 8, html_escape(x.label));
  o += fmt::format(R"(<g class="y-axis" data-scale="{}" data-ticks="{}">)", scale_name(f.ys), f.yt.size());
  o += fmt::format(R"(<line class="frame" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft, kTop, kLeft, kBottom);
  for (double v : f.yt) {
    o += fmt::format(R"(<line class="tick-mark" x1="{}" y1="{}" x2="{}" y2="{}"/>)", kLeft - 5, num(f.my.px(v)), kLeft,
                     num(f.my.px(v)));
    o += fmt::format(R"(<text class="tick" x="{}" y="{}" text-anchor="end">{}</text>)", kLeft - 8, num(f.my.px(v) + 4),
                     tick_label(v));
  }
  const double mid = (kTop + kBottom) / 2;
  o += fmt::format(
      R"x(<text class="axis-label" x="16" y="{0}" transform="rotate(-90 16 {0})" text-anchor="middle">{1}</text></g>)x",
      mid, html_escape(y.label));
  return o;
}

// One series with its hover values; more than kMaxDrawn points are thinned evenly (counted in
// thinned_from / thinned_to for the note).
std::string series_svg(const Series& s, const Frame& f, const Axis& x, const Axis& y, std::size_t& thinned_from,
                       std::size_t& thinned_to) {
  std::vector<Point> pts;
  for (const auto& p : s.points) {
    if (usable(p.x, f.xs) && usable(p.y, f.ys)) pts.push_back(p);
  }
  if (pts.size() > kMaxDrawn) {
    thinned_from += pts.size();
    std::vector<Point> keep;
    for (std::size_t i = 0; i < kMaxDrawn; ++i) keep.push_back(pts[i * (pts.size() - 1) / (kMaxDrawn - 1)]);
    thinned_to += keep.size();
    pts = std::move(keep);
  }
  const char* kind = s.mark == Mark::kDots       ? "dots"
                     : s.mark == Mark::kLineDots ? "line-dots"
                     : s.mark == Mark::kStep     ? "step"
                                                 : "line";
  std::string o = fmt::format(R"(<g class="series" data-name="{}" data-kind="{}" data-points="{}">)",
                              html_escape(s.name), kind, pts.size());
  if (s.mark != Mark::kDots && !pts.empty()) {
    std::string path = fmt::format("M{},{}", num(f.mx.px(pts[0].x)), num(f.my.px(pts[0].y)));
    for (std::size_t i = 1; i < pts.size(); ++i) {
      if (s.mark == Mark::kStep) path += fmt::format(" H{}", num(f.mx.px(pts[i].x)));
      path += fmt::format(" L{},{}", num(f.mx.px(pts[i].x)), num(f.my.px(pts[i].y)));
    }
    o += fmt::format(R"(<path d="{}" fill="none" stroke="{}" stroke-width="2"><title>{}</title></path>)", path, s.color,
                     html_escape(s.name));
  }
  const bool dots = s.mark == Mark::kDots || s.mark == Mark::kLineDots;
  if (dots || pts.size() <= kHoverAll) {
    const char* r = dots ? "3" : "4";
    const char* opacity = dots ? "0.8" : "0";  // a line's hover targets are invisible
    for (const auto& p : pts) {
      o += fmt::format(
          R"(<circle cx="{}" cy="{}" r="{}" fill="{}" fill-opacity="{}"><title>{}: {} = {}, {} = {}</title></circle>)",
          num(f.mx.px(p.x)), num(f.my.px(p.y)), r, s.color, opacity, html_escape(s.name), html_escape(x.label),
          value_text(p.x), html_escape(y.label), value_text(p.y));
    }
  }
  return o + "</g>";
}

std::string reference_svg(const ReferenceLine& r, const Frame& f) {
  if (r.horizontal ? !usable(r.at, f.ys) : !usable(r.at, f.xs)) return {};
  std::string o = fmt::format(R"(<g class="reference" data-name="{}">)", html_escape(r.name));
  if (r.horizontal) {
    o += fmt::format(
        R"(<line x1="{0}" y1="{2}" x2="{1}" y2="{2}" stroke="{3}" stroke-width="1.5" stroke-dasharray="6 4"/>)", kLeft,
        kRight, num(f.my.px(r.at)), r.color);
    o += fmt::format(R"(<text class="rule-label" x="{}" y="{}" text-anchor="end" fill="{}">{} {}</text>)", kRight - 4,
                     num(f.my.px(r.at) - 4), r.color, html_escape(r.name), value_text(r.at));
  } else {
    o += fmt::format(
        R"(<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="{3}" stroke-width="1.5" stroke-dasharray="3 3"/>)",
        num(f.mx.px(r.at)), kTop, kBottom, r.color);
    o += fmt::format(R"(<text class="rule-label" x="{}" y="{}" fill="{}">{} {}</text>)", num(f.mx.px(r.at) + 4),
                     kTop + 10, r.color, html_escape(r.name), value_text(r.at));
  }
  return o + "</g>";
}

// The legend, in its own column: never over the data.
std::string legend_svg(const std::vector<Series>& series, const std::vector<ReferenceLine>& rules) {
  std::string o = R"(<g class="legend">)";
  double ly = kTop + 8;
  auto entry = [&](const std::string& name, const std::string& swatch) {
    o += fmt::format(R"(<g class="legend-item"><title>{}</title>{}<text x="{}" y="{}">{}</text></g>)",
                     html_escape(name), swatch, kRight + 40, num(ly + 4), html_escape(short_name(name)));
    ly += 18;
  };
  const double lx = kRight + 16;
  for (const auto& s : series) {
    const std::string swatch =
        s.mark == Mark::kDots
            ? fmt::format(R"(<circle cx="{}" cy="{}" r="4" fill="{}"/>)", lx + 9, num(ly), s.color)
            : fmt::format(R"(<line x1="{0}" y1="{2}" x2="{1}" y2="{2}" stroke="{3}" stroke-width="2"/>)", lx, lx + 18,
                          num(ly), s.color);
    entry(s.name, swatch);
  }
  for (const auto& r : rules) {
    entry(r.name,
          fmt::format(
              R"(<line x1="{0}" y1="{2}" x2="{1}" y2="{2}" stroke="{3}" stroke-width="1.5" stroke-dasharray="{4}"/>)",
              lx, lx + 18, num(ly), r.color, r.horizontal ? "6 4" : "3 3"));
  }
  return o + "</g>";
}

}  // namespace

std::string Chart::svg() const {
  const Frame f = frame_of(series_, rules_, x_, y_);
  std::string o = fmt::format(R"(<figure class="chart" data-title="{0}"><figcaption>{0}</figcaption>)"
                              R"(<svg viewBox="0 0 {1} {2}" width="{1}" height="{2}" role="img" aria-label="{0}">)",
                              html_escape(title_), kW, kH);
  o += axes_svg(f, x_, y_);
  std::size_t thinned_from = 0, thinned_to = 0;
  for (const auto& s : series_) o += series_svg(s, f, x_, y_, thinned_from, thinned_to);
  for (const auto& r : rules_) o += reference_svg(r, f);
  if (f.no_data) {
    o += fmt::format(R"(<text class="no-data" x="{}" y="{}" text-anchor="middle">no data to draw</text>)",
                     (kLeft + kRight) / 2, (kTop + kBottom) / 2);
  }
  o += legend_svg(series_, rules_);
  o += "</svg>";
  std::string note = note_;
  if (thinned_from > 0) {
    note += fmt::format("{}{} of {} points drawn (evenly spaced).", note.empty() ? "" : " ", thinned_to, thinned_from);
  }
  if (f.dropped > 0 && (x_.scale != Scale::kLinear || y_.scale != Scale::kLinear)) {
    note +=
        fmt::format("{}{} points at or below zero are not drawn on the log scale.", note.empty() ? "" : " ", f.dropped);
  }
  if (!note.empty()) o += fmt::format(R"(<p class="chart-note">{}</p>)", html_escape(note));
  return o + "</figure>";
}

}  // namespace mpo::present
