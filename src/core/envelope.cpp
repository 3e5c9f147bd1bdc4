// The implementation of core/envelope.hpp: contract 3's envelope, written and read.
#include "core/envelope.hpp"

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>

#include "core/time.hpp"

namespace mpo {

namespace {

boost::json::array string_array(const std::vector<std::string>& items) {
  boost::json::array a;
  for (const auto& s : items) a.push_back(boost::json::string(s));
  return a;
}

void read_strings(const boost::json::object& o, std::string_view key, std::vector<std::string>& out) {
  if (const auto* a = json_array(o, key)) {
    for (const auto& x : *a)
      if (x.is_string()) out.emplace_back(x.get_string());
  }
}

}  // namespace

void put_envelope_head(JsonObjectWriter& w, std::string_view schema, std::int64_t created_at_us,
                       std::string_view tool_version) {
  w.field("schema", schema).field("created_at", format_rfc3339_us(created_at_us));
  JsonObjectWriter tool;
  tool.field("name", kToolName).field("version", tool_version);
  w.raw_field("tool", std::move(tool).finish());
}

boost::json::object tool_object(std::string_view tool_version) {
  boost::json::object tool;
  tool["name"] = kToolName;
  tool["version"] = tool_version;
  return tool;
}

void put_envelope_head(boost::json::object& o, std::string_view schema, std::int64_t created_at_us,
                       std::string_view tool_version) {
  o["schema"] = schema;
  o["created_at"] = format_rfc3339_us(created_at_us);
  o["tool"] = tool_object(tool_version);
}

std::string validity_json(const Validity& v, bool with_warnings) {
  JsonObjectWriter w;
  w.field("valid", v.valid).raw_field("reasons", json_string_array(v.reasons));
  if (with_warnings) w.raw_field("warnings", json_string_array(v.warnings));
  return std::move(w).finish();
}

boost::json::object validity_object(const Validity& v, bool with_warnings) {
  boost::json::object o;
  o["valid"] = v.valid;
  o["reasons"] = string_array(v.reasons);
  if (with_warnings) o["warnings"] = string_array(v.warnings);
  return o;
}

Validity read_validity(const boost::json::object& receipt) {
  Validity v;
  const auto* block = json_object(receipt, "validity");
  if (!block) return v;
  v.valid = json_bool(*block, "valid").value_or(false);
  read_strings(*block, "reasons", v.reasons);
  read_strings(*block, "warnings", v.warnings);
  return v;
}

}  // namespace mpo
