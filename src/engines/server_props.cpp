// The implementation of engines/server_props.hpp.
#include "engines/server_props.hpp"

#include <fmt/format.h>

#include "core/json.hpp"

namespace mpo::engines {

std::string ServerSlots::source() const {
  return build.empty() ? std::string("llama.cpp GET /props total_slots")
                       : fmt::format("llama.cpp {} GET /props total_slots", build);
}

Result<ServerSlots> parse_llamacpp_props(std::string_view body) {
  auto doc = parse_json(body);
  if (!doc || !doc->is_object()) return make_error(errc::kEngineProps, "GET /props is not a JSON object");
  const auto& o = doc->as_object();
  const auto slots = json_int(o, "total_slots");
  if (!slots || *slots <= 0 || *slots > 1'000'000) {
    return make_error(errc::kEngineProps, "GET /props states no positive total_slots");
  }
  ServerSlots s;
  s.slots = static_cast<int>(*slots);
  if (const auto build = json_string(o, "build_info")) s.build = std::string(build->substr(0, 64));
  if (const auto* settings = o.if_contains("default_generation_settings"); settings && settings->is_object()) {
    if (const auto n = json_int(settings->as_object(), "n_ctx"); n && *n > 0 && *n <= 100'000'000) {
      s.context_per_slot = static_cast<int>(*n);
    }
  }
  return s;
}

}  // namespace mpo::engines
