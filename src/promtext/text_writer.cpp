// The implementation of promtext/text_writer.hpp. The one writer of Prometheus exposition text in
// this project.
#include "promtext/text_writer.hpp"

#include <fmt/format.h>

#include <cmath>
#include <vector>

#include "promtext/number.hpp"

namespace mpo::promtext {
namespace {

void append_escaped(std::string& out, std::string_view v, bool quote) {
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '"' && quote)
      out += "\\\"";
    else
      out += c;
  }
}

// A name Prometheus 2 reads unquoted: [a-zA-Z_:][a-zA-Z0-9_:]* (label names without ':').
bool legacy_name(std::string_view n, bool label) {
  if (n.empty()) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':');
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// A metric or label name: as it is when Prometheus 2 can read it, else quoted as Prometheus 3's
// text format writes UTF-8 names ("my.metric"), escaped like a label value. Our own names are all
// legacy: only a page read from elsewhere (and written back) carries quoted ones.
void append_name(std::string& out, std::string_view n, bool label) {
  if (legacy_name(n, label)) {
    out += n;
    return;
  }
  out += '"';
  append_escaped(out, n, true);
  out += '"';
}

const std::string_view& label_name(const LabelView& l) { return l.first; }
const std::string_view& label_value(const LabelView& l) { return l.second; }
const std::string& label_name(const Label& l) { return l.name; }
const std::string& label_value(const Label& l) { return l.value; }

}  // namespace

std::string format_number(double v, NumberStyle style) {
  if (style == NumberStyle::kShortest || std::isnan(v) || std::isinf(v)) return format_number(v);
  if (v == std::floor(v) && std::fabs(v) < 1e16) return fmt::format("{:.1f}", v);
  return fmt::format("{}", v);
}

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  append_escaped(out, v, true);
  return out;
}

TextWriter& TextWriter::family(std::string_view name, MetricType type, std::optional<std::string_view> help) {
  if (help) {
    out_ += "# HELP ";
    append_name(out_, name, false);
    out_ += ' ';
    // Text 0.0.4 escapes only backslash and newline in HELP; OpenMetrics also the double quote.
    append_escaped(out_, *help, format_ == Format::kOpenMetrics);
    out_ += '\n';
  }
  const std::string_view t =
      type == MetricType::kUntyped && format_ == Format::kOpenMetrics ? "unknown" : to_string(type);
  out_ += "# TYPE ";
  append_name(out_, name, false);
  fmt::format_to(std::back_inserter(out_), " {}\n", t);
  return *this;
}

TextWriter& TextWriter::unit(std::string_view name, std::string_view unit) {
  out_ += "# UNIT ";
  append_name(out_, name, false);
  fmt::format_to(std::back_inserter(out_), " {}\n", unit);
  return *this;
}

void TextWriter::sample_name(std::string_view name) {
  if (legacy_name(name, false)) {
    out_ += name;
  } else {
    quoted_name_ = name;  // written first inside the label set: {"my.metric",...}
  }
}

template <class Range>
void TextWriter::labels(const Range& ls) {
  const bool named = !quoted_name_.empty();
  if (std::empty(ls) && !named) return;
  out_ += '{';
  bool first = true;
  if (named) {
    append_name(out_, quoted_name_, false);
    quoted_name_ = {};
    first = false;
  }
  for (const auto& l : ls) {
    if (!first) out_ += ',';
    first = false;
    append_name(out_, label_name(l), true);
    out_ += "=\"";
    append_escaped(out_, label_value(l), true);
    out_ += '"';
  }
  out_ += '}';
}

void TextWriter::number(double v) { out_ += format_number(v, numbers_); }

TextWriter& TextWriter::sample(std::string_view name, std::initializer_list<LabelView> ls, double value) {
  return sample(name, std::span<const LabelView>(ls.begin(), ls.size()), value);
}

TextWriter& TextWriter::sample(std::string_view name, std::span<const LabelView> ls, double value) {
  sample_name(name);
  labels(ls);
  out_ += ' ';
  number(value);
  out_ += '\n';
  return *this;
}

TextWriter& TextWriter::sample(std::string_view name, const Labels& ls, double value, std::optional<double> timestamp,
                               const Exemplar* exemplar) {
  sample_name(name);
  labels(ls);
  out_ += ' ';
  number(value);
  if (timestamp) {
    out_ += ' ';
    number(*timestamp);
  }
  if (exemplar) {
    out_ += " # ";
    if (exemplar->labels.empty()) out_ += "{}";
    labels(exemplar->labels);
    out_ += ' ';
    number(exemplar->value);
    if (exemplar->timestamp) {
      out_ += ' ';
      number(*exemplar->timestamp);
    }
  }
  out_ += '\n';
  return *this;
}

TextWriter& TextWriter::histogram_samples(std::string_view name, std::initializer_list<LabelView> ls,
                                          std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                                          double sum) {
  return histogram_samples(name, std::span<const LabelView>(ls.begin(), ls.size()), upper_bounds, counts, sum);
}

TextWriter& TextWriter::histogram_samples(std::string_view name, std::span<const LabelView> ls,
                                          std::span<const double> upper_bounds, std::span<const std::uint64_t> counts,
                                          double sum) {
  const std::string bucket = fmt::format("{}_bucket", name);
  std::vector<LabelView> with_le(ls.begin(), ls.end());
  std::size_t le_at = 0;
  while (le_at < with_le.size() && with_le[le_at].first < "le") ++le_at;
  with_le.insert(with_le.begin() + static_cast<std::ptrdiff_t>(le_at), LabelView{"le", ""});
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= upper_bounds.size(); ++i) {
    cumulative += i < counts.size() ? counts[i] : 0;
    const std::string le = i < upper_bounds.size() ? format_number(upper_bounds[i], numbers_) : "+Inf";
    with_le[le_at].second = le;
    sample_name(bucket);
    labels(with_le);
    out_ += ' ';
    number(static_cast<double>(cumulative));
    out_ += '\n';
  }
  sample(fmt::format("{}_count", name), ls, static_cast<double>(cumulative));
  sample(fmt::format("{}_sum", name), ls, sum);
  return *this;
}

std::string TextWriter::take() && {
  if (format_ == Format::kOpenMetrics) out_ += "# EOF\n";
  return std::move(out_);
}

}  // namespace mpo::promtext
