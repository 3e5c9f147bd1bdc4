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
  double d = 0;  // get_double converts int64 and uint64 too
  if (v.get_double().get(d) == simdjson::SUCCESS) return d;
  return std::nullopt;
}

// An int64, or a double holding an integral value.
inline std::optional<std::int64_t> integer_of(simdjson::dom::element v) {
  switch (v.type()) {
    case simdjson::dom::element_type::INT64: return v.get_int64().value_unsafe();
    case simdjson::dom::element_type::UINT64: {
      std::int64_t i = 0;  // fits when at most INT64_MAX
      if (v.get_int64().get(i) == simdjson::SUCCESS) return i;
      return std::nullopt;
    }
    case simdjson::dom::element_type::DOUBLE: {
      const double d = v.get_double().value_unsafe();
      // In range and integral (a cast of an out-of-range double would be undefined).
      if (d >= -9.2e18 && d <= 9.2e18 && d == static_cast<double>(static_cast<std::int64_t>(d))) {
        return static_cast<std::int64_t>(d);
      }
      return std::nullopt;
    }
    default: return std::nullopt;
  }
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
