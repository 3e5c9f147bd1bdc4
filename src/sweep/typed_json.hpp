// Typed reads of a receipt's JSON members, for the typed structs of a sweep receipt
// (serving_stats, point_evidence): a missing or null member leaves the field as it is; a member of
// the wrong type records the first error, naming the member by its path ("stats.ttft_ms.p99").
// Pure.
#pragma once

#include <fmt/format.h>

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace mpo::sweep {

class JsonReader {
 public:
  JsonReader(const boost::json::object& o, std::string where) : o_(o), where_(std::move(where)) {}

  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty(); }
  // A reader of a nested object member (nullptr when absent; an error when not an object).
  const boost::json::object* object(std::string_view key) {
    const auto* v = find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) fail(key, "an object");
    return v->if_object();
  }
  std::string path(std::string_view key) const { return where_ + "." + std::string(key); }
  // Takes a nested reader's first error as this one's.
  void adopt(const JsonReader& nested) {
    if (error_.empty()) error_ = nested.error_;
  }

  void read(std::string_view key, std::string& out) {
    if (const auto* v = find(key)) {
      if (v->is_string())
        out = std::string(v->get_string());
      else
        fail(key, "a string");
    }
  }
  void read(std::string_view key, std::optional<std::string>& out) {
    if (find(key)) {
      std::string s;
      read(key, s);
      out = std::move(s);
    }
  }
  void read(std::string_view key, std::optional<double>& out) {
    if (const auto* v = find(key)) {
      if (v->is_number())
        out = v->to_number<double>();
      else
        fail(key, "a number");
    }
  }
  void read(std::string_view key, double& out) {
    std::optional<double> v;
    read(key, v);
    if (v) out = *v;
  }
  void read(std::string_view key, std::optional<std::int64_t>& out) {
    if (const auto* v = find(key)) {
      if (v->is_int64())
        out = v->get_int64();
      else if (v->is_uint64() && v->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
        out = static_cast<std::int64_t>(v->get_uint64());
      else
        fail(key, "an integer");
    }
  }
  void read(std::string_view key, std::int64_t& out) {
    std::optional<std::int64_t> v;
    read(key, v);
    if (v) out = *v;
  }
  void read(std::string_view key, std::uint64_t& out) {
    if (const auto* v = find(key)) {
      if (v->is_uint64())
        out = v->get_uint64();
      else if (v->is_int64() && v->get_int64() >= 0)
        out = static_cast<std::uint64_t>(v->get_int64());
      else
        fail(key, "an unsigned integer");
    }
  }
  void read(std::string_view key, std::optional<bool>& out) {
    if (const auto* v = find(key)) {
      if (v->is_bool())
        out = v->get_bool();
      else
        fail(key, "true or false");
    }
  }

 private:
  const boost::json::value* find(std::string_view key) const {
    const auto* v = o_.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  void fail(std::string_view key, std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{} is not {}", path(key), what);
  }

  const boost::json::object& o_;
  std::string where_;
  std::string error_;
};

// The members of `o` whose names are not in `known`, as written.
template <class Names>
boost::json::object unknown_members(const boost::json::object& o, const Names& known) {
  boost::json::object out;
  for (const auto& [k, v] : o) {
    bool named = false;
    for (std::string_view n : known) named = named || n == std::string_view(k);
    if (!named) out[k] = v;
  }
  return out;
}

}  // namespace mpo::sweep
