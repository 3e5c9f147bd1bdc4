// Contract 3's envelope (../shared/DESIGN.md "Contract 3: receipts"), written and read one way:
// every receipt opens with `schema`, `created_at` and `tool` {name, version} and carries a
// `validity` block {valid, reasons[]} (a sweep's adds warnings[]). The receipts' own parts
// (`inputs`, `result`, ...) stay with their modules. Two writers exist because receipts written as
// Go's encoding/json writes them (sweep, attribution: core/go_json.hpp) are boost::json objects and
// the others are written in order with JsonObjectWriter; both get their envelope here. Pure.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.hpp"

namespace mpo {

inline constexpr std::string_view kToolName = "modelperfobs";

struct Validity {
  bool valid = false;
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;  // written only where a receipt's format has them (with_warnings)
};

// schema, created_at (RFC 3339, microseconds), tool {name, version}, in that order.
void put_envelope_head(JsonObjectWriter& w, std::string_view schema, std::int64_t created_at_us,
                       std::string_view tool_version);
void put_envelope_head(boost::json::object& o, std::string_view schema, std::int64_t created_at_us,
                       std::string_view tool_version);
// The tool object alone, for a receipt whose tool carries more (a sweep's rules_generation).
boost::json::object tool_object(std::string_view tool_version);

// {"valid":..,"reasons":[..]} (and "warnings":[..] with with_warnings).
std::string validity_json(const Validity& v, bool with_warnings = false);
boost::json::object validity_object(const Validity& v, bool with_warnings = false);

// A receipt's validity block; a receipt without one (or with a `valid` that is not a boolean) is
// not valid, and strings are taken from the arrays as they stand.
Validity read_validity(const boost::json::object& receipt);

}  // namespace mpo
