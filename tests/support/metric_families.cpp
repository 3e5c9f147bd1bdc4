#include "support/metric_families.hpp"

#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace mpo::test {
namespace {

std::string family_of(const std::map<std::string, Family>& fams, const std::string& name) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto it = fams.find(base);
      if (it != fams.end() && (it->second.type == "histogram" || it->second.type == "summary")) return base;
    }
  }
  return name;
}

}  // namespace

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
  Exposition e;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line.rfind("# TYPE ", 0) == 0 || line.rfind("# HELP ", 0) == 0) {
      const auto sp = line.find(' ', 7);
      const std::string name = line.substr(7, sp - 7);
      const std::string rest = sp == std::string::npos ? "" : line.substr(sp + 1);
      (line[2] == 'T' ? e.families[name].type : e.families[name].help) = rest;
      continue;
    }
    if (line[0] == '#') continue;
    const auto brace = line.find('{');
    const auto space = line.rfind(' ');
    std::string name = line.substr(0, std::min(brace, line.find(' ')));
    std::string series = line.substr(0, space);
    Family& f = e.families[family_of(e.families, name)];
    ++f.samples;
    if (brace != std::string::npos && brace < space) {
      const auto close = line.rfind('}', space);
      std::string_view labels(line.data() + brace + 1, close - brace - 1);
      std::size_t i = 0;
      while (i < labels.size()) {
        const auto eq = labels.find('=', i);
        if (eq == std::string_view::npos) break;
        f.label_names.emplace(labels.substr(i, eq - i));
        std::size_t j = eq + 2;  // past '="'
        while (j < labels.size() && labels[j] != '"') j += labels[j] == '\\' ? 2 : 1;
        i = j + 2;  // past '",'
      }
    }
    const std::string value = line.substr(space + 1);
    e.values[series] = value == "+Inf" ? HUGE_VAL : value == "-Inf" ? -HUGE_VAL : std::strtod(value.c_str(), nullptr);
  }
  return e;
}

}  // namespace mpo::test
