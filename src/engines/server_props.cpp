// The implementation of engines/server_props.hpp.
#include "engines/server_props.hpp"

#include <fmt/format.h>

#include <optional>

#include "core/json.hpp"

namespace mpo::engines {

std::string ServerSlots::source() const {
  if (sglang) {
    const std::string ranks = dp_size > 1 ? fmt::format(" x dp_size {}", dp_size) : std::string();
    return build.empty() ? fmt::format("SGLang GET {} {}{}", route, member, ranks)
                         : fmt::format("SGLang {} GET {} {}{}", build, route, member, ranks);
  }
  return build.empty() ? std::string("llama.cpp GET /props total_slots")
                       : fmt::format("llama.cpp {} GET /props total_slots", build);
}

std::string ServerSlots::context() const {
  if (kv_tokens > 0) return fmt::format(", a KV cache of {} tokens shared", kv_tokens);
  if (context_per_slot > 0) return fmt::format(", {} tokens of context a slot", context_per_slot);
  return {};
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

Result<ServerSlots> parse_sglang_server_info(std::string_view body, std::string_view route) {
  const auto fail = [&](std::string_view why) {
    return make_error(errc::kEngineProps, fmt::format("GET {} {}", route, why));
  };
  auto doc = parse_json(body);
  if (!doc || !doc->is_object()) return fail("is not a JSON object");
  const auto& o = doc->as_object();
  const auto positive = [](std::optional<std::int64_t> v) { return v && *v > 0 && *v <= 1'000'000; };
  std::int64_t dp = 1;
  if (o.contains("dp_size")) {
    const auto d = json_int(o, "dp_size");
    if (!positive(d)) return fail("states a dp_size that is not a positive integer");
    dp = *d;
  }
  ServerSlots s;
  s.sglang = true;
  s.route = std::string(route.substr(0, 64));
  s.dp_size = static_cast<int>(dp);
  std::optional<std::int64_t> per_rank;
  if (const auto* states = o.if_contains("internal_states"); states && states->is_array()) {
    const auto& a = states->as_array();
    if (!a.empty() && a.front().is_object())
      per_rank = json_int(a.front().as_object(), "effective_max_running_requests_per_dp");
  }
  if (positive(per_rank)) {
    s.member = "effective_max_running_requests_per_dp";
  } else if (const auto arg = json_int(o, "max_running_requests"); positive(arg) && dp == 1) {
    per_rank = arg;
    s.member = "max_running_requests";
  } else {
    return fail(dp == 1 ? "states no positive effective_max_running_requests_per_dp or max_running_requests"
                        : "states no positive effective_max_running_requests_per_dp");
  }
  if (*per_rank * dp > 1'000'000) return fail("states a capacity over 1,000,000 requests");
  s.slots = static_cast<int>(*per_rank * dp);
  if (const auto version = json_string(o, "version")) s.build = std::string(version->substr(0, 64));
  if (const auto kv = json_int(o, "max_total_num_tokens"); kv && *kv > 0) s.kv_tokens = *kv;
  return s;
}

}  // namespace mpo::engines
