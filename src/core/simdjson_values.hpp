// Typed reads from simdjson DOM values, exactly (Boost.JSON 1.81 rounds doubles; see
// docs/ARCHITECTURE.md): absent, null or mistyped values are nullopt. Header-only: only modules that
// already link simdjson include it (ledger, scrape, bandwidth).
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace mpo::sj {

// `object` is a dom::element or a dom::object.
template <typename Object>
std::optional<simdjson::dom::element> field(Object object, std::string_view key) {
  simdjson::dom::element v;
  if (object[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

inline std::optional<std::string_view> string_of(simdjson::dom::element v) {
  std::string_view s;
  if (v.get_string().get(s) != simdjson::SUCCESS) return std::nullopt;
  return s;
}

// A double, int64 or uint64, as a double.
inline std::optional<double> number_of(simdjson::dom::element v) {
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  std::int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  std::uint64_t u = 0;
  if (v.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return std::nullopt;
}

// An int64, or a double holding an integral value.
inline std::optional<std::int64_t> integer_of(simdjson::dom::element v) {
  std::int64_t i = 0;
  if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (v.get_double().get(d) == simdjson::SUCCESS && d == static_cast<double>(static_cast<std::int64_t>(d))) {
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

template <typename Object>
std::optional<double> number_field(Object object, std::string_view key) {
  auto v = field(object, key);
  return v ? number_of(*v) : std::nullopt;
}

template <typename Object>
std::optional<std::string_view> string_field(Object object, std::string_view key) {
  auto v = field(object, key);
  return v ? string_of(*v) : std::nullopt;
}

}  // namespace mpo::sj
