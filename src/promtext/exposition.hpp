// The Prometheus text exposition format 0.0.4 and OpenMetrics 1.0 text format as data: families,
// samples, labels, exemplars. parse_exposition reads either (the format is detected); the writer
// writes the exposition back in the format it was read in, so parse(write(parse(x))) == parse(x).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::promtext {

enum class Format { kText004, kOpenMetrics };
enum class MetricType { kUntyped, kCounter, kGauge, kHistogram, kGaugeHistogram, kSummary, kInfo, kStateSet };

std::string_view to_string(MetricType t);

struct Label {
  std::string name;
  std::string value;
  bool operator==(const Label&) const = default;
};
using Labels = std::vector<Label>;

// The value of label `name`, or nullptr.
const std::string* find_label(const Labels& labels, std::string_view name);

struct Exemplar {
  Labels labels;
  double value = 0;
  std::optional<double> timestamp;
};

struct Sample {
  std::string name;  // the full sample name: "x_bucket", "x_total", "x"
  Labels labels;     // in the order written
  double value = 0;
  // As written: milliseconds in text 0.0.4, seconds in OpenMetrics.
  std::optional<double> timestamp;
  std::optional<Exemplar> exemplar;
  std::uint32_t line = 0;          // 1-based line of the input
  std::uint32_t value_column = 0;  // 1-based column where the value starts
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::optional<std::string> help;
  std::optional<std::string> unit;
  std::vector<Sample> samples;
  std::uint32_t line = 0;  // first line that named the family
};

// A violation that does not stop parsing (a histogram that is not cumulative, a +Inf bucket that
// differs from _count): the family stays readable, and consumers decide whether to trust it.
struct Problem {
  std::uint32_t line = 0;
  std::uint32_t column = 0;
  std::string family;
  std::string message;
};

struct Exposition {
  Format format = Format::kText004;
  std::vector<MetricFamily> families;  // in order of first appearance
  std::vector<Problem> problems;
  const MetricFamily* family(std::string_view name) const;
};

// A syntax error is an Error whose message starts with "line L, column C:". Semantic violations
// are Problems. Never throws, never reads past `text`.
Result<Exposition> parse_exposition(std::string_view text);

std::string write_exposition(const Exposition& e);

// Structural equality of two expositions (NaN equals NaN; line numbers and problems ignored).
bool same_content(const Exposition& a, const Exposition& b);

}  // namespace mpo::promtext
