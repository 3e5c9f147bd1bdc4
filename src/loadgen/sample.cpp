// The implementation of loadgen/sample.hpp. One measured request of a sweep or parity run
// (docs/FAK.md 6.3: the fields of fak's `MeasureSSERequest` sample, in its order), plus what this
// project adds so that a receipt can be re-verified from its own contents: when the request was due
// and when it was sent (offsets from the start of the point, so lateness is visible), whether it
// was a warm-up request, and its correlation ID (the ledger line of the same request carries it).
#include "loadgen/sample.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/json.hpp"
#include "loadgen/shard.hpp"

namespace mpo::loadgen {
namespace {

boost::json::value optional_int(const std::optional<std::int64_t>& v) {
  return v ? boost::json::value(*v) : boost::json::value(nullptr);
}

}  // namespace

double round_ms(double ms) { return std::round(ms * 1000.0) / 1000.0; }

boost::json::object sample_json(const Sample& s) {
  boost::json::object o;
  o["id"] = s.id;
  o["status"] = s.ok ? "ok" : "fail";
  if (!s.error.empty()) o["error"] = s.error;
  if (!s.error_class.empty()) o["error_class"] = s.error_class;
  if (s.http_status && *s.http_status != 0) o["http_status"] = *s.http_status;
  if (!s.stream_mode.empty()) o["stream_mode"] = s.stream_mode;
  if (s.ttft_ms) o["ttft_ms"] = *s.ttft_ms;
  if (!s.itl_ms.empty()) {
    boost::json::array a;
    for (double v : s.itl_ms) a.push_back(v);
    o["itl_ms"] = std::move(a);
  }
  if (s.tpot_ms) o["tpot_ms"] = *s.tpot_ms;
  o["end_to_end_ms"] = s.end_to_end_ms;
  o["output_events"] = s.output_events;
  o["output_token_estimate"] = s.output_token_estimate;
  if (s.output_tokens_exact) o["output_tokens_exact"] = *s.output_tokens_exact;
  if (!s.output_token_count_basis.empty()) o["output_token_count_basis"] = s.output_token_count_basis;
  o["prompt_tokens_estimate"] = s.prompt_tokens_estimate;
  if (s.usage) {
    boost::json::object u;
    u["prompt_tokens"] = optional_int(s.usage->prompt_tokens);
    u["completion_tokens"] = optional_int(s.usage->completion_tokens);
    u["total_tokens"] = optional_int(s.usage->total_tokens);
    u["cached_tokens"] = optional_int(s.usage->cached_tokens);
    o["usage"] = std::move(u);
  } else {
    o["usage"] = nullptr;
  }
  if (!s.observation_id.empty()) o["observation_id"] = s.observation_id;
  o["scheduled_offset_ms"] = s.scheduled_offset_ms;
  o["sent_offset_ms"] = s.sent_offset_ms;
  if (s.warmup) o["warmup"] = true;
  if (!s.response_model.empty()) o["response_model"] = s.response_model;
  if (!s.finish_reason.empty()) o["finish_reason"] = s.finish_reason;
  if (!s.first_output.empty()) o["first_output"] = s.first_output;
  if (s.max_tokens) o["max_tokens"] = *s.max_tokens;
  if (s.shard) o["shard"] = *s.shard;
  return o;
}

Result<Sample> sample_from_json(const boost::json::object& o) {
  Sample s;
  auto bad = [&](std::string_view what) {
    return make_error(errc::kSweepSample, fmt::format("sample '{}': {}", s.id, what));
  };
  s.id = std::string(json_string(o, "id").value_or(""));
  const auto status = json_string(o, "status");
  if (!status || (*status != "ok" && *status != "fail")) return bad("status is not \"ok\" or \"fail\"");
  s.ok = *status == "ok";
  s.error = std::string(json_string(o, "error").value_or(""));
  s.error_class = std::string(json_string(o, "error_class").value_or(""));
  if (auto v = json_int(o, "http_status")) s.http_status = static_cast<int>(*v);
  s.stream_mode = std::string(json_string(o, "stream_mode").value_or(""));
  s.ttft_ms = json_double(o, "ttft_ms");
  if (const auto* a = json_array(o, "itl_ms")) {
    for (const auto& v : *a) {
      if (v.is_double())
        s.itl_ms.push_back(v.get_double());
      else if (v.is_int64())
        s.itl_ms.push_back(static_cast<double>(v.get_int64()));
      else
        return bad("itl_ms holds a value that is not a number");
    }
  }
  s.tpot_ms = json_double(o, "tpot_ms");
  const auto e2e = json_double(o, "end_to_end_ms");
  if (!e2e) return bad("end_to_end_ms is missing");
  s.end_to_end_ms = *e2e;
  s.output_events = json_int(o, "output_events").value_or(0);
  s.output_token_estimate = json_int(o, "output_token_estimate").value_or(0);
  s.output_tokens_exact = json_int(o, "output_tokens_exact");
  s.output_token_count_basis = std::string(json_string(o, "output_token_count_basis").value_or(""));
  s.prompt_tokens_estimate = json_int(o, "prompt_tokens_estimate").value_or(0);
  if (const auto* u = json_object(o, "usage")) {
    s.usage = SampleUsage{json_int(*u, "prompt_tokens"), json_int(*u, "completion_tokens"),
                          json_int(*u, "total_tokens"), json_int(*u, "cached_tokens")};
  }
  s.observation_id = std::string(json_string(o, "observation_id").value_or(""));
  s.scheduled_offset_ms = json_double(o, "scheduled_offset_ms").value_or(0);
  s.sent_offset_ms = json_double(o, "sent_offset_ms").value_or(0);
  s.warmup = json_bool(o, "warmup").value_or(false);
  s.response_model = std::string(json_string(o, "response_model").value_or(""));
  s.finish_reason = std::string(json_string(o, "finish_reason").value_or(""));
  s.first_output = std::string(json_string(o, "first_output").value_or(""));
  s.max_tokens = json_int(o, "max_tokens");
  if (const auto shard = json_int(o, "shard")) {
    if (*shard < 0 || *shard > kMaxShards) return make_error(errc::kSweepJson, "a sample's shard is out of range");
    s.shard = static_cast<int>(*shard);
  }
  return s;
}

Result<std::vector<Sample>> samples_from_json(const boost::json::object& parent, ErrorCode not_object) {
  std::vector<Sample> samples;
  if (const auto* items = json_array(parent, "samples")) {
    for (const auto& item : *items) {
      if (!item.is_object()) return make_error(not_object, "a sample is not an object");
      auto sample = sample_from_json(item.as_object());
      if (!sample) return sample.error();
      samples.push_back(std::move(*sample));
    }
  }
  return samples;
}

}  // namespace mpo::loadgen
