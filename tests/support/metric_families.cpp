// The test view of an exposition, built on the product's parser (src/promtext).
#include "support/metric_families.hpp"

#include <stdexcept>

#include "promtext/exposition.hpp"

namespace mpo::test {

std::optional<double> Exposition::find(std::string_view name, std::initializer_list<std::string_view> needles) const {
  std::optional<double> found;
  for (const auto& [series, v] : values) {
    const auto brace = series.find('{');
    if (series.substr(0, brace) != name) continue;
    bool all = true;
    for (auto n : needles) all = all && series.find(n) != std::string::npos;
    if (!all) continue;
    if (found) throw std::runtime_error("ambiguous series for " + std::string(name));
    found = v;
  }
  return found;
}

Exposition read_exposition(std::string_view text) {
  auto parsed = promtext::parse_exposition(text);
  if (!parsed) throw std::runtime_error("exposition does not parse: " + parsed.error().message);
  Exposition e;
  for (const promtext::MetricFamily& pf : parsed->families) {
    Family& f = e.families[pf.name];
    f.type = std::string(promtext::to_string(pf.type));
    f.help = pf.help.value_or("");
    for (const promtext::Sample& s : pf.samples) {
      ++f.samples;
      std::string series = s.name;
      if (!s.labels.empty()) {
        series += '{';
        for (std::size_t i = 0; i < s.labels.size(); ++i) {
          f.label_names.insert(s.labels[i].name);
          series += (i ? "," : "") + s.labels[i].name + "=\"";
          for (char c : s.labels[i].value) {
            if (c == '\\' || c == '"') series += '\\';
            if (c == '\n')
              series += "\\n";
            else
              series += c;
          }
          series += '"';
        }
        series += '}';
      }
      e.values[series] = s.value;
    }
  }
  return e;
}

}  // namespace mpo::test
