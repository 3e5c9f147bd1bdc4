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

// A table of typed setters per section: the profile format is data, not branches.
using Setter = std::function<Status(const json::value&)>;
using Section = std::map<std::string, Setter, std::less<>>;

template <typename T>
Setter number_setter(T& field, std::string key, double lo, double hi) {
  return [&field, key = std::move(key), lo, hi](const json::value& v) -> Status {
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

Setter bool_setter(bool& field, std::string key) {
  return [&field, key = std::move(key)](const json::value& v) -> Status {
    if (!v.is_bool()) return make_error(errc::kProfileType, fmt::format("'{}' must be true or false", key));
    field = v.get_bool();
    return Ok{};
  };
}

Status apply(const json::value& v, const Section& section, std::string_view where) {
  if (!v.is_object()) return make_error(errc::kProfileType, fmt::format("'{}' must be an object", where));
  for (const auto& [k, val] : v.get_object()) {
    auto it = section.find(std::string_view(k.data(), k.size()));
    if (it == section.end()) {
      return make_error(errc::kProfileUnknownKey, fmt::format("unknown key '{}.{}' in profile (see docs/SIMULATOR.md)",
                                                              where, std::string_view(k.data(), k.size())));
    }
    if (auto st = it->second(val); !st) return st;
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
  const Section engine{
      {"max_num_seqs", number_setter(e.max_num_seqs, "engine.max_num_seqs", 1, 1e6)},
      {"max_num_batched_tokens", number_setter(e.max_num_batched_tokens, "engine.max_num_batched_tokens", 1, 1e7)},
      {"num_gpu_blocks", number_setter(e.num_gpu_blocks, "engine.num_gpu_blocks", 1, 1e8)},
      {"block_size", number_setter(e.block_size, "engine.block_size", 1, 1024)},
      {"max_model_len", number_setter(e.max_model_len, "engine.max_model_len", 2, 1e7)},
      {"enable_prefix_caching", bool_setter(e.enable_prefix_caching, "engine.enable_prefix_caching")},
      {"step_base_s", number_setter(e.step_base_s, "engine.step_base_s", 0, 60)},
      {"step_per_prefill_token_s", number_setter(e.step_per_prefill_token_s, "engine.step_per_prefill_token_s", 0, 1)},
      {"step_per_decode_seq_s", number_setter(e.step_per_decode_seq_s, "engine.step_per_decode_seq_s", 0, 1)},
      {"num_speculative_tokens", number_setter(e.num_speculative_tokens, "engine.num_speculative_tokens", 0, 64)},
      {"spec_acceptance", number_setter(e.spec_acceptance, "engine.spec_acceptance", 0, 1)},
  };
  const Section output{
      {"natural_min_tokens", number_setter(o.natural_min_tokens, "output.natural_min_tokens", 1, 1e7)},
      {"natural_max_tokens", number_setter(o.natural_max_tokens, "output.natural_max_tokens", 1, 1e7)},
      {"reasoning", bool_setter(o.reasoning, "output.reasoning")},
      {"reasoning_share", number_setter(o.reasoning_share, "output.reasoning_share", 0, 1)},
      {"tokens_per_chunk", number_setter(o.tokens_per_chunk, "output.tokens_per_chunk", 1, 4096)},
  };
  const Section saturation{
      {"max_num_seqs", number_setter(s.max_num_seqs, "saturation.max_num_seqs", 1, 1e6)},
      {"reserved_kv_share", number_setter(s.reserved_kv_share, "saturation.reserved_kv_share", 0, 0.99)},
      {"background_requests", number_setter(s.background_requests, "saturation.background_requests", 0, 1e5)},
      {"background_prompt_tokens",
       number_setter(s.background_prompt_tokens, "saturation.background_prompt_tokens", 1, 1e6)},
      {"background_output_tokens",
       number_setter(s.background_output_tokens, "saturation.background_output_tokens", 1, 1e6)},
  };
  const Section ramp{
      {"duration_s", number_setter(r.duration_s, "ramp.duration_s", 0.001, 1e6)},
      {"background_requests", number_setter(r.background_requests, "ramp.background_requests", 0, 1e5)},
      {"background_prompt_tokens", number_setter(r.background_prompt_tokens, "ramp.background_prompt_tokens", 1, 1e6)},
      {"background_output_tokens", number_setter(r.background_output_tokens, "ramp.background_output_tokens", 1, 1e6)},
  };
  const Section faults{
      {"error_share", number_setter(f.error_share, "faults.error_share", 0, 1)},
      {"truncate_share", number_setter(f.truncate_share, "faults.truncate_share", 0, 1)},
      {"stall_share", number_setter(f.stall_share, "faults.stall_share", 0, 1)},
      {"stall_s", number_setter(f.stall_s, "faults.stall_s", 0, 3600)},
  };
  const Section scenarios{
      {"saturation", [&](const json::value& v) { return apply(v, saturation, "scenarios.saturation"); }},
      {"ramp", [&](const json::value& v) { return apply(v, ramp, "scenarios.ramp"); }},
      {"faults", [&](const json::value& v) { return apply(v, faults, "scenarios.faults"); }},
  };
  const Section top{
      {"model",
       [&](const json::value& v) -> Status {
         if (!v.is_string() || v.get_string().empty()) {
           return make_error(errc::kProfileType, "'model' must be a non-empty string");
         }
         p.model = std::string(v.get_string());
         return Ok{};
       }},
      {"engine", [&](const json::value& v) { return apply(v, engine, "engine"); }},
      {"output", [&](const json::value& v) { return apply(v, output, "output"); }},
      {"scenarios", [&](const json::value& v) { return apply(v, scenarios, "scenarios"); }},
  };
  if (auto st = apply(*parsed, top, "profile"); !st) return st.error();
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
