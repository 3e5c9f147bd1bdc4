// The exposition parser: one pass over the lines, a family index for resolving sample names
// (exact name first, then the type's suffixes: _bucket, _count, _sum, _created, _total, ...), and
// histogram validation at the end. Lenient where real exporters differ from the letter of the
// formats (families split across the input, `_sum` before buckets, comments that are not HELP or
// TYPE, a missing final newline); strict where a mistake would change a value.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <unordered_map>

#include "promtext/exposition.hpp"
#include "promtext/histogram.hpp"
#include "promtext/number.hpp"

namespace mpo::promtext {
namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
bool is_label_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_label_char(char c) { return is_label_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t'; }

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::optional<MetricType> parse_type(std::string_view s) {
  if (s == "counter") return MetricType::kCounter;
  if (s == "gauge") return MetricType::kGauge;
  if (s == "histogram") return MetricType::kHistogram;
  if (s == "gaugehistogram") return MetricType::kGaugeHistogram;
  if (s == "summary") return MetricType::kSummary;
  if (s == "untyped" || s == "unknown") return MetricType::kUntyped;
  if (s == "info") return MetricType::kInfo;
  if (s == "stateset") return MetricType::kStateSet;
  return std::nullopt;
}

// Which sample-name suffixes a family of this type owns.
bool owns_suffix(MetricType t, std::string_view suffix) {
  switch (t) {
    case MetricType::kCounter: return suffix == "_total" || suffix == "_created";
    case MetricType::kHistogram:
      return suffix == "_bucket" || suffix == "_count" || suffix == "_sum" || suffix == "_created";
    case MetricType::kGaugeHistogram: return suffix == "_bucket" || suffix == "_gcount" || suffix == "_gsum";
    case MetricType::kSummary: return suffix == "_count" || suffix == "_sum" || suffix == "_created";
    case MetricType::kInfo: return suffix == "_info";
    default: return false;
  }
}

constexpr std::string_view kSuffixes[] = {"_bucket", "_count",  "_sum",  "_created",
                                          "_total",  "_gcount", "_gsum", "_info"};

// HELP text unescaping: \\ and \n (and \" in OpenMetrics); any other backslash is kept as written.
std::string unescape_help(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      const char n = s[i + 1];
      if (n == '\\' || n == '"') {
        out += n;
        ++i;
        continue;
      }
      if (n == 'n') {
        out += '\n';
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

class Parser {
 public:
  Result<Exposition> run(std::string_view text) {
    std::uint32_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t nl = text.find('\n', pos);
      std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text.size() : nl + 1;
      ++line_no;
      // CRLF line ends; a CR just before a line end is never content (the writer could not write
      // it back: it would read as CRLF), so every trailing CR goes.
      while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      line_ = line;
      line_no_ = line_no;
      if (auto st = parse_line(); !st) return st.error();
    }
    validate_histograms();
    return std::move(out_);
  }

 private:
  Error fail(std::size_t column0, std::string_view message) const {
    return make_error(errc::kPromtextSyntax, fmt::format("line {}, column {}: {}", line_no_, column0 + 1, message));
  }

  Status parse_line() {
    std::size_t i = 0;
    while (i < line_.size() && is_space(line_[i])) ++i;
    if (i == line_.size()) return Ok{};  // blank
    if (saw_eof_) return fail(i, "content after '# EOF'; an OpenMetrics exposition ends there");
    if (line_[i] == '#') return parse_comment(i);
    return parse_sample(i);
  }

  // Reads a metric name at `i`; returns its end or npos.
  std::size_t name_end(std::size_t i, bool label) const {
    if (i >= line_.size() || !(label ? is_label_start(line_[i]) : is_name_start(line_[i])))
      return std::string_view::npos;
    ++i;
    while (i < line_.size() && (label ? is_label_char(line_[i]) : is_name_char(line_[i]))) ++i;
    return i;
  }

  // A double-quoted string at line_[i] == '"' (a label value, or a Prometheus 3 UTF-8 name): its
  // text unescaped into `out`, and the index after the closing quote. `what` names it in errors.
  Result<std::size_t> quoted_at(std::size_t i, std::string& out, std::string_view what) const {
    ++i;  // '"'
    while (true) {
      // Copy the run up to the next quote or backslash at once.
      std::size_t run = i;
      while (run < line_.size() && line_[run] != '"' && line_[run] != '\\') ++run;
      out.append(line_.data() + i, run - i);
      i = run;
      if (i >= line_.size()) return fail(i, fmt::format("{} is not closed with '\"'", what));
      if (line_[i] == '"') return i + 1;
      if (i + 1 >= line_.size()) return fail(i, fmt::format("a backslash ends the line inside {}", what));
      const char n = line_[i + 1];
      // \\, \" and \n are escapes; a backslash before any other character is kept as written, as
      // the OpenMetrics 1.0 grammar allows and Prometheus's parser does.
      if (n == '\\' || n == '"') {
        out += n;
      } else if (n == 'n') {
        out += '\n';
      } else {
        out += '\\';
        out += n;
      }
      i += 2;
    }
  }

  std::size_t skip_space(std::size_t i) const {
    while (i < line_.size() && is_space(line_[i])) ++i;
    return i;
  }

  Status parse_comment(std::size_t i) {
    std::size_t k = i + 1;
    if (k >= line_.size() || !is_space(line_[k])) return Ok{};  // "#foo": a comment
    k = skip_space(k);
    std::size_t kw_end = k;
    while (kw_end < line_.size() && !is_space(line_[kw_end])) ++kw_end;
    const std::string_view kw = line_.substr(k, kw_end - k);
    if (kw == "EOF" && skip_space(kw_end) == line_.size()) {
      saw_eof_ = true;
      out_.format = Format::kOpenMetrics;
      return Ok{};
    }
    if (kw != "HELP" && kw != "TYPE" && kw != "UNIT") return Ok{};  // any other comment is ignored
    const std::size_t name_at = skip_space(kw_end);
    std::string quoted;
    std::size_t ne = std::string_view::npos;
    if (name_at < line_.size() && line_[name_at] == '"') {  // Prometheus 3: # TYPE "my.metric" counter
      auto end = quoted_at(name_at, quoted, "a quoted metric name");
      if (!end) return end.error();
      ne = *end;
      if (quoted.empty()) return fail(name_at, "a quoted metric name is empty");
    } else {
      ne = name_end(name_at, false);
    }
    if (ne == std::string_view::npos || (ne < line_.size() && !is_space(line_[ne]))) {
      return fail(name_at, fmt::format("'# {}' needs a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, or quoted)", kw));
    }
    const std::string name = line_[name_at] == '"' ? quoted : std::string(line_.substr(name_at, ne - name_at));
    // One separating blank; the rest of the line is the text (HELP may be empty).
    std::string_view rest = ne < line_.size() ? line_.substr(ne + 1) : std::string_view{};
    MetricFamily& f = family_named(name);
    if (kw == "HELP") {
      if (f.help) return fail(i, fmt::format("second HELP line for {}", name));
      f.help = unescape_help(rest);
      return Ok{};
    }
    rest = rest.substr(skip_space_in(rest));
    while (!rest.empty() && (is_space(rest.back()) || rest.back() == '\r')) rest.remove_suffix(1);
    if (kw == "UNIT") {
      if (f.unit) return fail(i, fmt::format("second UNIT line for {}", name));
      f.unit = std::string(rest);
      out_.format = Format::kOpenMetrics;
      return Ok{};
    }
    const auto type = parse_type(rest);
    if (!type) {
      return fail(ne + 1, fmt::format("unknown metric type '{}' for {} (counter, gauge, histogram, summary, "
                                      "untyped, gaugehistogram, info, stateset)",
                                      rest, name));
    }
    if (typed_[&f - out_.families.data()]) return fail(i, fmt::format("second TYPE line for {}", name));
    if (!f.samples.empty()) return fail(i, fmt::format("TYPE line for {} comes after its samples", name));
    typed_[&f - out_.families.data()] = true;
    f.type = *type;
    if (rest == "unknown" || rest == "info" || rest == "stateset" || rest == "gaugehistogram") {
      out_.format = Format::kOpenMetrics;
    }
    return Ok{};
  }

  static std::size_t skip_space_in(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && is_space(s[i])) ++i;
    return i;
  }

  MetricFamily& family_named(std::string_view name) {
    if (auto it = index_.find(name); it != index_.end()) return out_.families[it->second];
    index_.emplace(std::string(name), out_.families.size());
    out_.families.push_back(MetricFamily{std::string(name), MetricType::kUntyped, {}, {}, {}, line_no_});
    typed_.push_back(false);
    return out_.families.back();
  }

  // The family a sample name belongs to: the exact name, else a declared family whose type owns
  // the suffix, else a new untyped family named after the sample.
  MetricFamily& family_for_sample(std::string_view name) {
    if (auto it = index_.find(name); it != index_.end()) return out_.families[it->second];
    for (std::string_view suffix : kSuffixes) {
      if (name.size() > suffix.size() && name.ends_with(suffix)) {
        auto it = index_.find(name.substr(0, name.size() - suffix.size()));
        if (it != index_.end() && owns_suffix(out_.families[it->second].type, suffix)) {
          return out_.families[it->second];
        }
      }
    }
    return family_named(name);
  }

  // Parses `{a="b",...}` starting at line_[i] == '{'; returns the index after '}'. Prometheus 3's
  // UTF-8 names: a label name may be quoted (`"label.name"="v"`), and with `metric_name` a quoted
  // string on its own, anywhere in the set, is the sample's metric name (`{"my.metric",a="b"}`,
  // `{a="b", "my.metric"}`, as prometheus/common's text parser reads them).
  Result<std::size_t> parse_labels(std::size_t i, Labels& labels, std::string* metric_name = nullptr) {
    ++i;  // '{'
    while (true) {
      i = skip_space(i);
      if (i >= line_.size()) return fail(i, "label set is not closed with '}'");
      if (line_[i] == '}') return i + 1;
      std::string lname;
      if (line_[i] == '"') {
        auto end = quoted_at(i, lname, "a quoted name");
        if (!end) return end.error();
        const std::size_t after = skip_space(*end);
        if (after < line_.size() && line_[after] != '=' && metric_name != nullptr && metric_name->empty()) {
          if (lname.empty()) return fail(i, "a quoted metric name is empty");
          if (line_[after] != ',' && line_[after] != '}') return fail(after, "expected ',' or '}' after a metric name");
          *metric_name = std::move(lname);
          i = after;
          if (line_[i] == ',') ++i;
          continue;
        }
        if (lname.empty()) return fail(i, "a quoted label name is empty");
        i = after;
      } else {
        const std::size_t ne = name_end(i, true);
        if (ne == std::string_view::npos) {
          return fail(i, "expected a label name ([a-zA-Z_][a-zA-Z0-9_]*, or quoted) or '}'");
        }
        lname.assign(line_.substr(i, ne - i));
        i = skip_space(ne);
      }
      if (i >= line_.size() || line_[i] != '=') return fail(i, fmt::format("expected '=' after label {}", lname));
      i = skip_space(i + 1);
      if (i >= line_.size() || line_[i] != '"') return fail(i, fmt::format("label {}'s value must be quoted", lname));
      std::string value;
      auto end = quoted_at(i, value, fmt::format("label {}'s value", lname));
      if (!end) return end.error();
      i = *end;
      for (const Label& l : labels) {
        if (l.name == lname) return fail(i, fmt::format("label {} appears twice", lname));
      }
      labels.push_back(Label{std::move(lname), std::move(value)});
      i = skip_space(i);
      if (i < line_.size() && line_[i] == ',') {
        ++i;
        continue;
      }
      i = skip_space(i);
      if (i < line_.size() && line_[i] == '}') return i + 1;
      return fail(i, "expected ',' or '}' after a label value");
    }
  }

  // A whitespace-delimited number token at i; `what` names it in errors.
  Result<std::pair<double, std::size_t>> number_at(std::size_t i, std::string_view what) {
    std::size_t e = i;
    while (e < line_.size() && !is_space(line_[e])) ++e;
    const auto v = parse_number(line_.substr(i, e - i));
    if (!v) return fail(i, fmt::format("{} '{}' is not a number", what, line_.substr(i, e - i)));
    return std::pair{*v, e};
  }

  Status parse_sample(std::size_t i) {
    Sample s;
    s.line = line_no_;
    if (line_[i] == '{') {  // Prometheus 3: {"my.metric",a="b"} 1
      const std::size_t at = i;
      auto r = parse_labels(i, s.labels, &s.name);
      if (!r) return r.error();
      if (s.name.empty()) return fail(at, "a label set without a metric name: name it, quoted, in the set");
      return parse_sample_value(*r, std::move(s));
    }
    const std::size_t ne = name_end(i, false);
    if (ne == std::string_view::npos) {
      return fail(i, "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*, or quoted in '{...}') or '#'");
    }
    s.name = std::string(line_.substr(i, ne - i));
    i = ne;
    // Text format 0.0.4 allows blanks between the name and its label set (promtool and Prometheus
    // accept `m {a="b"} 1`).
    if (const std::size_t brace = skip_space(i); brace < line_.size() && line_[brace] == '{') i = brace;
    if (i < line_.size() && line_[i] == '{') {
      auto r = parse_labels(i, s.labels);
      if (!r) return r.error();
      i = *r;
    }
    return parse_sample_value(i, std::move(s));
  }

  // The rest of a sample line after its name and labels, at `i`: value, timestamp, exemplar.
  Status parse_sample_value(std::size_t i, Sample s) {
    const std::size_t value_at = skip_space(i);
    if (value_at == i) return fail(i, fmt::format("expected a space and a value after {}", s.name));
    if (value_at >= line_.size()) return fail(value_at, fmt::format("{} has no value", s.name));
    auto v = number_at(value_at, "value");
    if (!v) return v.error();
    s.value = v->first;
    s.value_column = static_cast<std::uint32_t>(value_at + 1);
    i = skip_space(v->second);
    if (i < line_.size() && line_[i] != '#') {
      auto ts = number_at(i, "timestamp");
      if (!ts) return ts.error();
      if (!std::isfinite(ts->first)) return fail(i, "a timestamp must be finite");
      s.timestamp = ts->first;
      i = skip_space(ts->second);
    }
    if (i < line_.size()) {
      if (line_[i] != '#') return fail(i, "unexpected text after the sample");
      auto ex = parse_exemplar(i);
      if (!ex) return ex.error();
      s.exemplar = std::move(*ex);
    }
    family_for_sample(s.name).samples.push_back(std::move(s));
    return Ok{};
  }

  // OpenMetrics exemplar: ` # {labels} value [timestamp]`.
  Result<Exemplar> parse_exemplar(std::size_t i) {
    i = skip_space(i + 1);
    if (i >= line_.size() || line_[i] != '{') return fail(i, "an exemplar starts with '# {'");
    Exemplar ex;
    auto r = parse_labels(i, ex.labels);
    if (!r) return r.error();
    i = skip_space(*r);
    if (i >= line_.size()) return fail(i, "the exemplar has no value");
    auto v = number_at(i, "exemplar value");
    if (!v) return v.error();
    ex.value = v->first;
    i = skip_space(v->second);
    if (i < line_.size()) {
      auto ts = number_at(i, "exemplar timestamp");
      if (!ts) return ts.error();
      ex.timestamp = ts->first;
      i = skip_space(ts->second);
      if (i < line_.size()) return fail(i, "unexpected text after the exemplar");
    }
    return ex;
  }

  void validate_histograms() {
    for (const MetricFamily& f : out_.families) {
      if (f.type != MetricType::kHistogram && f.type != MetricType::kGaugeHistogram) continue;
      for (HistogramSeries& h : assemble_histograms(f)) {
        for (Problem& p : h.problems) out_.problems.push_back(std::move(p));
      }
    }
  }

  Exposition out_;
  std::unordered_map<std::string, std::size_t, StringHash, std::equal_to<>> index_;
  std::vector<bool> typed_;
  std::string_view line_;
  std::uint32_t line_no_ = 0;
  bool saw_eof_ = false;
};

}  // namespace

Result<Exposition> parse_exposition(std::string_view text) { return Parser{}.run(text); }

}  // namespace mpo::promtext
