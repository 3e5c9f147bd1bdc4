// The implementation of sim/config.hpp. Simulator parameters: the engine (vLLM V1 scheduler knobs
// and the step-time model), the output behaviour, and the scenarios.
#include "sim/config.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <functional>
#include <map>

#include "core/json.hpp"

namespace mpo::sim {
namespace {

namespace json = boost::json;

// One table of typed setters keyed by each member's path in the profile ("engine.max_num_seqs"):
// the profile format is data, not branches. A setter is given its path for its errors.
using Setter = std::function<Status(const json::value&, std::string_view path)>;
using Setters = std::map<std::string, Setter, std::less<>>;

template <typename T>
Setter number_setter(T& field, double lo, double hi) {
  return [&field, lo, hi](const json::value& v, std::string_view key) -> Status {
    double d = 0;
    if (v.is_int64())
      d = static_cast<double>(v.get_int64());
    else if (v.is_uint64())
      d = static_cast<double>(v.get_uint64());
    else if (v.is_double())
      d = v.get_double();
    else
      return make_error(errc::kProfileType, fmt::format("'{}' must be a number", key));
    if (!(d >= lo && d <= hi)) {
      return make_error(errc::kProfileRange, fmt::format("'{}' = {} is outside [{}, {}]", key, d, lo, hi));
    }
    if constexpr (std::is_integral_v<T>) {
      if (d != static_cast<double>(static_cast<T>(d))) {
        return make_error(errc::kProfileType, fmt::format("'{}' must be an integer", key));
      }
    }
    field = static_cast<T>(d);
    return Ok{};
  };
}

Setter bool_setter(bool& field) {
  return [&field](const json::value& v, std::string_view key) -> Status {
    if (!v.is_bool()) return make_error(errc::kProfileType, fmt::format("'{}' must be true or false", key));
    field = v.get_bool();
    return Ok{};
  };
}

Setter name_setter(std::string& field) {
  return [&field](const json::value& v, std::string_view key) -> Status {
    if (!v.is_string() || v.get_string().empty()) {
      return make_error(errc::kProfileType, fmt::format("'{}' must be a non-empty string", key));
    }
    field = std::string(v.get_string());
    return Ok{};
  };
}

// The objects that hold members: a path some member's path continues with a dot.
bool is_section(const Setters& setters, std::string_view path) {
  const std::string prefix = std::string(path) + ".";
  const auto it = setters.lower_bound(prefix);
  return it != setters.end() && it->first.starts_with(prefix);
}

// Applies the object `v` found at `where` ("" for the profile itself), member by member.
Status apply(const json::value& v, const Setters& setters, std::string_view where) {
  if (!v.is_object()) return make_error(errc::kProfileType, fmt::format("'{}' must be an object", where));
  for (const auto& [k, val] : v.get_object()) {
    const std::string_view key(k.data(), k.size());
    const std::string path = where.empty() ? std::string(key) : fmt::format("{}.{}", where, key);
    if (const auto it = setters.find(path); it != setters.end()) {
      if (auto st = it->second(val, path); !st) return st;
    } else if (is_section(setters, path)) {
      if (auto st = apply(val, setters, path); !st) return st;
    } else {
      return make_error(errc::kProfileUnknownKey, fmt::format("unknown key '{}.{}' in profile (see docs/SIMULATOR.md)",
                                                              where.empty() ? "profile" : where, key));
    }
  }
  return Ok{};
}

}  // namespace

Result<Profile> parse_profile(std::string_view json_text) {
  auto parsed = parse_json(json_text);
  if (!parsed) return make_error(errc::kProfileJson, "profile: " + parsed.error().message);
  if (!parsed->is_object()) return make_error(errc::kProfileType, "profile must be a JSON object");
  Profile p;
  auto& e = p.engine;
  auto& o = p.output;
  auto& s = p.saturation;
  auto& r = p.ramp;
  auto& f = p.faults;
  const Setters setters{
      {"model", name_setter(p.model)},
      {"engine.max_num_seqs", number_setter(e.max_num_seqs, 1, 1e6)},
      {"engine.max_num_batched_tokens", number_setter(e.max_num_batched_tokens, 1, 1e7)},
      {"engine.num_gpu_blocks", number_setter(e.num_gpu_blocks, 1, 1e8)},
      {"engine.block_size", number_setter(e.block_size, 1, 1024)},
      {"engine.max_model_len", number_setter(e.max_model_len, 2, 1e7)},
      {"engine.enable_prefix_caching", bool_setter(e.enable_prefix_caching)},
      {"engine.step_base_s", number_setter(e.step_base_s, 0, 60)},
      {"engine.step_per_prefill_token_s", number_setter(e.step_per_prefill_token_s, 0, 1)},
      {"engine.step_per_decode_seq_s", number_setter(e.step_per_decode_seq_s, 0, 1)},
      {"engine.num_speculative_tokens", number_setter(e.num_speculative_tokens, 0, 64)},
      {"engine.spec_acceptance", number_setter(e.spec_acceptance, 0, 1)},
      {"output.natural_min_tokens", number_setter(o.natural_min_tokens, 1, 1e7)},
      {"output.natural_max_tokens", number_setter(o.natural_max_tokens, 1, 1e7)},
      {"output.reasoning", bool_setter(o.reasoning)},
      {"output.reasoning_share", number_setter(o.reasoning_share, 0, 1)},
      {"output.tokens_per_chunk", number_setter(o.tokens_per_chunk, 1, 4096)},
      {"scenarios.saturation.max_num_seqs", number_setter(s.max_num_seqs, 1, 1e6)},
      {"scenarios.saturation.reserved_kv_share", number_setter(s.reserved_kv_share, 0, 0.99)},
      {"scenarios.saturation.background_requests", number_setter(s.background_requests, 0, 1e5)},
      {"scenarios.saturation.background_prompt_tokens", number_setter(s.background_prompt_tokens, 1, 1e6)},
      {"scenarios.saturation.background_output_tokens", number_setter(s.background_output_tokens, 1, 1e6)},
      {"scenarios.ramp.duration_s", number_setter(r.duration_s, 0.001, 1e6)},
      {"scenarios.ramp.background_requests", number_setter(r.background_requests, 0, 1e5)},
      {"scenarios.ramp.background_prompt_tokens", number_setter(r.background_prompt_tokens, 1, 1e6)},
      {"scenarios.ramp.background_output_tokens", number_setter(r.background_output_tokens, 1, 1e6)},
      {"scenarios.faults.error_share", number_setter(f.error_share, 0, 1)},
      {"scenarios.faults.truncate_share", number_setter(f.truncate_share, 0, 1)},
      {"scenarios.faults.stall_share", number_setter(f.stall_share, 0, 1)},
      {"scenarios.faults.stall_s", number_setter(f.stall_s, 0, 3600)},
  };
  if (auto st = apply(*parsed, setters, ""); !st) return st.error();
  if (auto st = validate(p); !st) return st.error();
  return p;
}

Status validate(const Profile& p) {
  const auto& e = p.engine;
  if (e.max_num_batched_tokens < e.block_size) {
    return make_error(errc::kProfileRange, "engine.max_num_batched_tokens must be >= engine.block_size");
  }
  if (static_cast<long long>(e.num_gpu_blocks) * e.block_size < e.max_model_len) {
    return make_error(errc::kProfileRange,
                      "engine.num_gpu_blocks * engine.block_size must hold one max_model_len request");
  }
  if (p.output.natural_min_tokens > p.output.natural_max_tokens) {
    return make_error(errc::kProfileRange, "output.natural_min_tokens must be <= output.natural_max_tokens");
  }
  if (p.faults.error_share + p.faults.truncate_share + p.faults.stall_share > 1.0) {
    return make_error(errc::kProfileRange, "faults: error_share + truncate_share + stall_share must be <= 1");
  }
  return Ok{};
}

}  // namespace mpo::sim
