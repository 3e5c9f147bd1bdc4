// Field reads shared by the payload readers of each API (chunk.cpp, api_events.cpp). Internal to
// the openai module.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string_view>

namespace mpo::openai::detail {

using simdjson::dom::element;

// The string at `key`, "" when absent or not a string.
inline std::string_view str(element e, std::string_view key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return {};
  return v;
}

// A token count: a non-negative integer, or a non-negative double below 2^53 (a negative count is
// no count); int_field reads the one at `key`.
inline std::optional<std::int64_t> count_of(const std::optional<element>& e) {
  if (!e) return std::nullopt;
  std::int64_t v = 0;
  if (e->get_int64().get(v) == simdjson::SUCCESS) return v >= 0 ? std::optional<std::int64_t>(v) : std::nullopt;
  double d = 0;
  if (e->get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 9e15) return static_cast<std::int64_t>(d);
  return std::nullopt;
}
inline std::optional<std::int64_t> int_field(element e, std::string_view key) {
  element v;
  if (e[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  return count_of(v);
}

// The object at `key`, if there is one.
inline std::optional<element> object_field(element e, std::string_view key) {
  element v;
  if (e[key].get(v) != simdjson::SUCCESS || !v.is_object()) return std::nullopt;
  return v;
}

}  // namespace mpo::openai::detail
