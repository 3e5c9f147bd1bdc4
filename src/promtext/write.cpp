// The round-trip writer and the helpers of exposition.hpp. Every family gets its TYPE line
// (untyped ones too), so a re-parse resolves each sample to the same family; the text itself is
// laid out by TextWriter, the project's one exposition writer.
#include <fmt/format.h>

#include <cmath>

#include "promtext/exposition.hpp"
#include "promtext/text_writer.hpp"

namespace mpo::promtext {
namespace {

bool same_number(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
bool same_optional(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || same_number(*a, *b));
}

}  // namespace

std::string_view to_string(MetricType t) {
  switch (t) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kGaugeHistogram: return "gaugehistogram";
    case MetricType::kSummary: return "summary";
    case MetricType::kInfo: return "info";
    case MetricType::kStateSet: return "stateset";
    case MetricType::kUntyped: break;
  }
  return "untyped";
}

const std::string* find_label(const Labels& labels, std::string_view name) {
  for (const Label& l : labels) {
    if (l.name == name) return &l.value;
  }
  return nullptr;
}

const MetricFamily* Exposition::family(std::string_view name) const {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string write_exposition(const Exposition& e) {
  TextWriter w(e.format, NumberStyle::kShortest);
  for (const MetricFamily& f : e.families) {
    w.family(f.name, f.type, f.help ? std::optional<std::string_view>(*f.help) : std::nullopt);
    if (f.unit) w.unit(f.name, *f.unit);
    for (const Sample& s : f.samples) {
      w.sample(s.name, s.labels, s.value, s.timestamp, s.exemplar ? &*s.exemplar : nullptr);
    }
  }
  return std::move(w).take();
}

bool same_content(const Exposition& a, const Exposition& b) {
  if (a.format != b.format || a.families.size() != b.families.size()) return false;
  for (std::size_t i = 0; i < a.families.size(); ++i) {
    const MetricFamily& x = a.families[i];
    const MetricFamily& y = b.families[i];
    if (x.name != y.name || x.type != y.type || x.help != y.help || x.unit != y.unit ||
        x.samples.size() != y.samples.size()) {
      return false;
    }
    for (std::size_t k = 0; k < x.samples.size(); ++k) {
      const Sample& s = x.samples[k];
      const Sample& t = y.samples[k];
      if (s.name != t.name || s.labels != t.labels || !same_number(s.value, t.value) ||
          !same_optional(s.timestamp, t.timestamp) || s.exemplar.has_value() != t.exemplar.has_value()) {
        return false;
      }
      if (s.exemplar &&
          (s.exemplar->labels != t.exemplar->labels || !same_number(s.exemplar->value, t.exemplar->value) ||
           !same_optional(s.exemplar->timestamp, t.exemplar->timestamp))) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace mpo::promtext
