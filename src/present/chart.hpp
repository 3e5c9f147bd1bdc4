// Charts for the HTML pages (pure): inline SVG drawn here, no scripts and no network, so a page is
// one self-contained file that opens offline and reads the same in every browser. Axes with tick
// marks and gridlines at "nice" values (1, 2, 5 x 10^k), log scales (base 2 for concurrency in
// powers of two, base 10 for latencies that span decades), the legend in its own column beside the
// plot, reference lines (a budget, dashed and labelled, never on the frame) and markers (a knee),
// and each point's values on hover (an SVG <title>). docs/ARCHITECTURE.md says why not a library.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace mpo::present {

enum class Scale { kLinear, kLog2, kLog10 };

struct Axis {
  std::string label;  // with its unit: "TTFT p99 (ms)"
  Scale scale = Scale::kLinear;
  bool from_zero = true;  // linear: the range starts at 0 unless values go below it
  bool integer = false;   // counts (probes, threads): no tick between whole numbers
};

// Tick values for a range: linear at 1/2/5 x 10^k steps (about `target` of them), log2 at powers
// of two, log10 at decades (with 2 and 5 between them when the range spans few decades). The first
// and last ticks enclose [lo, hi].
std::vector<double> ticks(double lo, double hi, Scale scale, int target = 5, bool integer = false);
// A tick's text: "0.25", "40", "1,500" up to 9,999, then "15k", "2.5M".
std::string tick_label(double v);
// Log10 when every value is positive and they span `min_ratio` or more (max/min), else linear.
Scale scale_for(const std::vector<double>& values, double min_ratio = 30);
// Log2 when every value is positive and they span 4x or more (concurrency 1, 2, 4, ... 64).
Scale scale_for_counts(const std::vector<double>& values);

enum class Mark { kLine, kDots, kLineDots, kStep };

struct Point {
  double x = 0, y = 0;
};

struct Series {
  std::string name;
  std::vector<Point> points;
  Mark mark = Mark::kLine;
  std::string color;  // empty: the next colour of the palette
};

// A reference line across the plot: horizontal at a y (a budget), vertical at an x (a knee).
struct ReferenceLine {
  std::string name;
  double at = 0;
  std::string color;
  bool horizontal = true;
};

class Chart {
 public:
  Chart(std::string title, Axis x, Axis y) : title_(std::move(title)), x_(std::move(x)), y_(std::move(y)) {}
  Chart& add(Series s);
  // A horizontal reference line at y (a budget): dashed, labelled, in the legend.
  Chart& hline(std::string name, double y, std::string color = "#b00020");
  // A vertical marker at x (a knee, a boundary): dashed, labelled at the top, in the legend.
  Chart& vline(std::string name, double x, std::string color = "#7a1fa2");
  // A sentence under the chart: what is drawn and how to read it.
  Chart& note(std::string text);
  bool empty() const;
  std::string svg() const;

 private:
  std::string title_;
  Axis x_, y_;
  std::vector<Series> series_;
  std::vector<ReferenceLine> rules_;
  std::string note_;
};

}  // namespace mpo::present
