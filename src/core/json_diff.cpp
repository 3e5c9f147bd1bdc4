// The implementation of core/json_diff.hpp. Where two JSON documents differ, field by field: what
// `verify` commands use to name the first stated field that does not follow from a receipt's own
// contents, with the value written and the value re-derived.
#include "core/json_diff.hpp"

#include <fmt/format.h>

#include <map>

#include "core/go_json.hpp"

namespace mpo {
namespace {

constexpr std::size_t kShownChars = 120;
const char* const kAbsent = "(absent)";

std::string shown(const boost::json::value& v) {
  std::string s = go_marshal(v);
  if (s.size() > kShownChars) s = s.substr(0, kShownChars) + "...";
  return s;
}

class Differ {
 public:
  explicit Differ(const JsonDiffOptions& o) : o_(o) {}

  void value(const std::string& path, const boost::json::value* w, const boost::json::value* d) {
    if (full()) return;
    if (!path.empty() && o_.skip && o_.skip(path)) return;
    if (w == nullptr && d == nullptr) return;
    if (w == nullptr || d == nullptr) return add(path, w, d);
    if (w->is_object() && d->is_object()) return object(path, w->as_object(), d->as_object());
    if (w->is_array() && d->is_array()) return array(path, w->as_array(), d->as_array());
    if (go_marshal(*w) != go_marshal(*d)) add(path, w, d);
  }

  std::vector<JsonDifference> take() { return std::move(out_); }

 private:
  bool full() const { return out_.size() >= o_.max_differences; }

  void add(const std::string& path, const boost::json::value* w, const boost::json::value* d) {
    out_.push_back({path.empty() ? "(document)" : path, w ? shown(*w) : kAbsent, d ? shown(*d) : kAbsent});
  }

  static std::string join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

  void object(const std::string& path, const boost::json::object& w, const boost::json::object& d) {
    for (const auto& kv : d) value(join(path, kv.key()), w.if_contains(kv.key()), &kv.value());
    if (!o_.extra_written_fields_differ) return;
    for (const auto& kv : w) {
      if (!d.contains(kv.key())) value(join(path, kv.key()), &kv.value(), nullptr);
    }
  }

  std::string label_of(const std::string& path, const boost::json::value& e) const {
    if (!o_.label || !e.is_object()) return "";
    return o_.label(path, e.as_object());
  }

  void array(const std::string& path, const boost::json::array& w, const boost::json::array& d) {
    // Matched by label when every element of both sides has a distinct one.
    std::map<std::string, const boost::json::value*> written;
    bool labelled = !d.empty() || !w.empty();
    for (const auto& e : w) {
      const auto l = label_of(path, e);
      if (l.empty() || !written.emplace(l, &e).second) labelled = false;
    }
    std::vector<std::string> derived_labels;
    for (const auto& e : d) {
      derived_labels.push_back(label_of(path, e));
      if (derived_labels.back().empty()) labelled = false;
    }
    if (labelled) {
      for (std::size_t i = 0; i < d.size(); ++i) {
        const auto it = written.find(derived_labels[i]);
        value(fmt::format("{}[{}]", path, derived_labels[i]), it == written.end() ? nullptr : it->second, &d[i]);
        if (it != written.end()) written.erase(it);
      }
      for (const auto& [l, e] : written) value(fmt::format("{}[{}]", path, l), e, nullptr);
      return;
    }
    const std::size_t n = std::max(w.size(), d.size());
    for (std::size_t i = 0; i < n; ++i) {
      value(fmt::format("{}[{}]", path, i), i < w.size() ? &w[i] : nullptr, i < d.size() ? &d[i] : nullptr);
    }
  }

  const JsonDiffOptions& o_;
  std::vector<JsonDifference> out_;
};

}  // namespace

std::vector<JsonDifference> json_differences(const boost::json::value& written, const boost::json::value& derived,
                                             const JsonDiffOptions& options) {
  Differ d(options);
  d.value("", &written, &derived);
  return d.take();
}

std::string describe(const JsonDifference& d) {
  return fmt::format("{}: written {}, re-derived {}", d.path, d.written, d.derived);
}

}  // namespace mpo
