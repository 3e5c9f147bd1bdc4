// The writer and the helpers of exposition.hpp. Every family gets its TYPE line (untyped ones too),
// so a re-parse resolves each sample to the same family.
#include <cmath>

#include <fmt/format.h>

#include "promtext/exposition.hpp"
#include "promtext/number.hpp"

namespace mpo::promtext {
namespace {

void append_label_value(std::string& out, std::string_view v) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

void append_labels(std::string& out, const Labels& labels) {
  if (labels.empty()) return;
  out += '{';
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (i) out += ',';
    out += labels[i].name;
    out += "=\"";
    append_label_value(out, labels[i].value);
    out += '"';
  }
  out += '}';
}

void append_help(std::string& out, std::string_view help, Format format) {
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && format == Format::kOpenMetrics) out += "\\\"";
    else out += c;
  }
}

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
  std::string out;
  const bool om = e.format == Format::kOpenMetrics;
  for (const MetricFamily& f : e.families) {
    if (f.help) {
      fmt::format_to(std::back_inserter(out), "# HELP {} ", f.name);
      append_help(out, *f.help, e.format);
      out += '\n';
    }
    const std::string_view type = f.type == MetricType::kUntyped && om ? "unknown" : to_string(f.type);
    fmt::format_to(std::back_inserter(out), "# TYPE {} {}\n", f.name, type);
    if (f.unit) fmt::format_to(std::back_inserter(out), "# UNIT {} {}\n", f.name, *f.unit);
    for (const Sample& s : f.samples) {
      out += s.name;
      append_labels(out, s.labels);
      out += ' ';
      out += format_number(s.value);
      if (s.timestamp) {
        out += ' ';
        out += format_number(*s.timestamp);
      }
      if (s.exemplar) {
        out += " # ";
        if (s.exemplar->labels.empty()) out += "{}";
        append_labels(out, s.exemplar->labels);
        out += ' ';
        out += format_number(s.exemplar->value);
        if (s.exemplar->timestamp) {
          out += ' ';
          out += format_number(*s.exemplar->timestamp);
        }
      }
      out += '\n';
    }
  }
  if (om) out += "# EOF\n";
  return out;
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
      if (s.exemplar && (s.exemplar->labels != t.exemplar->labels || !same_number(s.exemplar->value, t.exemplar->value) ||
                         !same_optional(s.exemplar->timestamp, t.exemplar->timestamp))) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace mpo::promtext
