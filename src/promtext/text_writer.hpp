// The one writer of Prometheus exposition text in this project. The simulator's vLLM page, the
// proxy's own /metrics and promtext's round-trip writer (write_exposition) all lay out families,
// escape label values and HELP text, format numbers and write histograms through it, so the rules
// live in one place with one set of golden tests (tests/promtext/text_writer_test.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "promtext/exposition.hpp"

namespace mpo::promtext {

enum class NumberStyle {
  kShortest,  // the shortest text that reads back exactly: "10", "0.25", "1.7e+09" (Go's, promtool's)
  kPython,    // prometheus_client's float repr, as vLLM and SGLang publish: "10.0", "0.25", "1.7e+09"
};
std::string format_number(double v, NumberStyle style);

// A label value escaped for the exposition (backslash, double quote, newline).
std::string escape_label_value(std::string_view v);

using LabelView = std::pair<std::string_view, std::string_view>;  // name, value (unescaped)

class TextWriter {
 public:
  explicit TextWriter(Format format = Format::kText004, NumberStyle numbers = NumberStyle::kShortest)
      : format_(format), numbers_(numbers) {}

  // "# HELP" (when `help` is set) and "# TYPE" lines. OpenMetrics writes untyped as "unknown".
  TextWriter& family(std::string_view name, MetricType type, std::optional<std::string_view> help);
  TextWriter& unit(std::string_view name, std::string_view unit);  // OpenMetrics "# UNIT"

  TextWriter& sample(std::string_view name, std::initializer_list<LabelView> labels, double value);
  TextWriter& sample(std::string_view name, std::span<const LabelView> labels, double value);
  TextWriter& sample(std::string_view name, const Labels& labels, double value,
                     std::optional<double> timestamp = std::nullopt, const Exemplar* exemplar = nullptr);

  // A whole histogram family's samples, as prometheus_client writes them: `name_bucket` with
  // cumulative counts for each upper bound and +Inf, `le` placed among `labels` in name order, then
  // `name_count` and `name_sum`. `counts` are per bucket (not cumulative), the last one the
  // overflow above the highest bound.
  TextWriter& histogram_samples(std::string_view name, std::initializer_list<LabelView> labels,
                                std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                                double sum);
  TextWriter& histogram_samples(std::string_view name, std::span<const LabelView> labels,
                                std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                                double sum);

  // Anything written so far; OpenMetrics text gets its "# EOF".
  std::string take() &&;

 private:
  // A sample's name: written now when Prometheus 2 can read it, else kept for labels() to write
  // quoted as the label set's first member (Prometheus 3's form for UTF-8 names).
  void sample_name(std::string_view name);
  template <class Range>
  void labels(const Range& labels);
  void number(double v);
  Format format_;
  NumberStyle numbers_;
  std::string out_;
  std::string_view quoted_name_;
};

}  // namespace mpo::promtext
