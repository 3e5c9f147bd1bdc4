// The implementation of bandwidth/receipt.hpp. `modelperfobs.bandwidth.v1`: what a profile import
// (or a host-memory sample) proves, and only that.
#include "bandwidth/receipt.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/envelope.hpp"
#include "core/json.hpp"
#include "core/time.hpp"

namespace mpo::bandwidth {
namespace {

void rates_fields(JsonObjectWriter& r, const Rates& rates) {
  if (rates.read_gb_s) r.field("read_gb_s", *rates.read_gb_s);
  if (rates.write_gb_s) r.field("write_gb_s", *rates.write_gb_s);
  if (rates.total_gb_s) r.field("total_gb_s", *rates.total_gb_s);
  if (rates.utilization_of_theoretical) r.field("utilization_of_theoretical", *rates.utilization_of_theoretical);
  if (rates.utilization_of_device_roofline)
    r.field("utilization_of_device_roofline", *rates.utilization_of_device_roofline);
}

}  // namespace

Result<Phase> parse_phase(std::string_view s) {
  if (s == "prefill") return Phase::kPrefill;
  if (s == "decode") return Phase::kDecode;
  if (s == "transfer") return Phase::kTransfer;
  if (s == "other") return Phase::kOther;
  return make_error(errc::kBandwidthPhase, fmt::format("--phase '{}': use prefill, decode, transfer or other", s));
}

Result<Shape> parse_shape(std::string_view s) {
  if (s == "small") return Shape::kSmall;
  if (s == "medium") return Shape::kMedium;
  if (s == "large") return Shape::kLarge;
  return make_error(errc::kBandwidthShape, fmt::format("--shape '{}': use small, medium or large", s));
}

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::kPrefill: return "prefill";
    case Phase::kDecode: return "decode";
    case Phase::kTransfer: return "transfer";
    case Phase::kOther: break;
  }
  return "other";
}

std::string_view to_string(Shape s) {
  switch (s) {
    case Shape::kSmall: return "small";
    case Shape::kMedium: return "medium";
    case Shape::kLarge: break;
  }
  return "large";
}

Status check_context(const CaptureContext& c) {
  if (c.device.find_first_not_of(" \t") == std::string::npos) {
    return make_error(errc::kBandwidthDevice,
                      "--device is required: the label of the device the capture ran on, e.g. "
                      "\"NVIDIA H100 80GB HBM3 (0)\"");
  }
  if (c.capture_end_us <= c.capture_start_us) {
    return make_error(errc::kBandwidthWindow,
                      "--capture-end must be after --capture-start (the window the capture ran in)");
  }
  for (const auto& [flag, v] : {std::pair{"--theoretical-gb-s", c.theoretical_gb_s},
                                std::pair{"--device-roofline-gb-s", c.device_roofline_gb_s}}) {
    if (v && !(std::isfinite(*v) && *v > 0)) {
      return make_error(errc::kBandwidthRoofline, fmt::format("{} must be a number above 0", flag));
    }
  }
  return Ok{};
}

std::vector<std::string> hbm_validity_reasons(const Rates& rates, bool has_duration) {
  std::vector<std::string> reasons;
  if (!rates.read_gb_s)
    reasons.push_back("read bandwidth unavailable: a launch reported no dram__bytes_read.sum value");
  if (!rates.write_gb_s)
    reasons.push_back("write bandwidth unavailable: a launch reported no dram__bytes_write.sum value");
  if (!has_duration) reasons.push_back("duration unavailable: a launch reported no gpu__time_duration.sum value");
  return reasons;
}

Rates compute_rates(std::optional<std::uint64_t> read_bytes, std::optional<std::uint64_t> write_bytes,
                    std::optional<double> duration_ns, std::optional<double> theoretical_gb_s,
                    std::optional<double> device_roofline_gb_s) {
  Rates r;
  if (!duration_ns || *duration_ns <= 0) return r;
  if (read_bytes) r.read_gb_s = static_cast<double>(*read_bytes) / *duration_ns;
  if (write_bytes) r.write_gb_s = static_cast<double>(*write_bytes) / *duration_ns;
  if (r.read_gb_s && r.write_gb_s) r.total_gb_s = *r.read_gb_s + *r.write_gb_s;
  if (r.total_gb_s && theoretical_gb_s) r.utilization_of_theoretical = *r.total_gb_s / *theoretical_gb_s;
  if (r.total_gb_s && device_roofline_gb_s) r.utilization_of_device_roofline = *r.total_gb_s / *device_roofline_gb_s;
  return r;
}

std::string ncu_receipt_json(const NcuImport& im, const CaptureContext& c, std::int64_t created_at_us,
                             std::string_view tool_version) {
  JsonObjectWriter w;
  put_envelope_head(w, "modelperfobs.bandwidth.v1", created_at_us, tool_version);

  JsonObjectWriter in;
  in.field("source", "nvidia-nsight-compute-csv").field("file", c.file);
  in.field("device", c.device).field("device_evidence", "operator-declared-capture-device");
  if (im.profiler_device) {
    in.field("profiler_device", *im.profiler_device).field("profiler_device_evidence", "nvidia-nsight-compute-csv");
  } else {
    in.field("profiler_device_evidence", "unavailable-no-device-column: the device is operator-declared only");
  }
  in.field("capture_started_at", format_rfc3339_us(c.capture_start_us))
      .field("capture_ended_at", format_rfc3339_us(c.capture_end_us))
      .field("phase", to_string(c.phase))
      .field("shape", to_string(c.shape));
  if (c.engine) in.field("engine", *c.engine).field("engine_evidence", "operator-asserted-not-proven-by-csv");
  if (c.theoretical_gb_s) in.field("theoretical_gb_s", *c.theoretical_gb_s);
  if (c.device_roofline_gb_s) {
    in.field("device_roofline_gb_s", *c.device_roofline_gb_s)
        .field("device_roofline_evidence", "operator-supplied-matched-device-measurement");
  }
  w.raw_field("inputs", std::move(in).finish());

  const Rates rates =
      compute_rates(im.read_bytes, im.write_bytes, im.duration_ns, c.theoretical_gb_s, c.device_roofline_gb_s);
  JsonObjectWriter r;
  r.field("kind", "hbm-profiled-kernel-active-time")
      .raw_field("counter_source", json_string_array({kReadMetric, kWriteMetric, kDurationMetric}))
      .field("process_id", im.process_id)
      .field("process", im.process_name)
      .field("launch_count", im.launch_count);
  if (im.read_bytes) r.field("cumulative_read_bytes", *im.read_bytes);
  if (im.write_bytes) r.field("cumulative_write_bytes", *im.write_bytes);
  if (im.duration_ns) r.field("cumulative_duration_ns", *im.duration_ns);
  rates_fields(r, rates);
  r.field("aggregation_scope", kAggregation)
      .field("capture_host_evidence", im.host_column ? "single-host-nsight-csv-value-scrubbed" : "unavailable")
      .field("profiled_kernel_active_time", true)
      .field("uninstrumented_run_required", true);
  if (!im.unavailable.empty()) r.raw_field("unavailable", json_string_array(im.unavailable));
  std::string kernels = "[";
  for (std::size_t i = 0; i < im.kernels.size(); ++i) {
    const KernelTotals& k = im.kernels[i];
    JsonObjectWriter o;
    o.field("name", k.name).field("launches", k.launches);
    if (k.read_bytes) o.field("read_bytes", *k.read_bytes);
    if (k.write_bytes) o.field("write_bytes", *k.write_bytes);
    if (k.duration_ns) o.field("duration_ns", *k.duration_ns);
    kernels += (i ? "," : "") + std::move(o).finish();
  }
  r.raw_field("kernels", kernels + "]");
  r.raw_field("statements", json_string_array({kHbmStatements[0], kHbmStatements[1], kHbmStatements[2]}));
  w.raw_field("result", std::move(r).finish());

  const auto reasons = hbm_validity_reasons(rates, im.duration_ns.has_value());
  w.raw_field("validity", validity_json({rates.total_gb_s.has_value(), reasons, {}}));
  return std::move(w).finish();
}

Status check_host_sample(const HostSample& s) {
  if (!(std::isfinite(s.measured_roofline_gb_s) && s.measured_roofline_gb_s > 0)) {
    return make_error(errc::kBandwidthRoofline,
                      "--measured-gb-s must be a number above 0 (from `modelperfobs bandwidth measure-host`)");
  }
  if (!(std::isfinite(s.seconds) && s.seconds > 0)) {
    return make_error(errc::kBandwidthHost, "--seconds must be above 0: the wall time the --bytes were moved in");
  }
  if (s.capture_end_us <= s.capture_start_us) {
    return make_error(errc::kBandwidthWindow, "--capture-end must be after --capture-start");
  }
  if (s.bytes_evidence.find_first_not_of(" \t") == std::string::npos) {
    return make_error(errc::kBandwidthHost,
                      "--bytes-evidence is required: say what the --bytes figure rests on (e.g. "
                      "\"weights 4.1 GB x 52 decode steps\")");
  }
  return Ok{};
}

std::string host_sample_receipt_json(const HostSample& s, std::int64_t created_at_us, std::string_view tool_version) {
  JsonObjectWriter w;
  put_envelope_head(w, "modelperfobs.bandwidth.v1", created_at_us, tool_version);
  JsonObjectWriter in;
  in.field("source", "operator-host-sample")
      .field("measured_roofline_gb_s", s.measured_roofline_gb_s)
      .field("measured_roofline_evidence", "host-memory-copy-roofline (modelperfobs bandwidth measure-host)")
      .field("bytes_evidence", s.bytes_evidence)
      .field("capture_started_at", format_rfc3339_us(s.capture_start_us))
      .field("capture_ended_at", format_rfc3339_us(s.capture_end_us))
      .field("phase", to_string(s.phase))
      .field("shape", to_string(s.shape));
  w.raw_field("inputs", std::move(in).finish());
  const double gb_s = static_cast<double>(s.bytes) / s.seconds / 1e9;
  JsonObjectWriter r;
  r.field("kind", "host-memory-sample")
      .field("bytes", s.bytes)
      .field("seconds", s.seconds)
      .field("host_gb_s", gb_s)
      .field("utilization_of_measured_host_roofline", gb_s / s.measured_roofline_gb_s)
      .raw_field("statements", json_string_array({
                                   "Host-memory evidence: the operator's byte figure over wall time against a host "
                                   "copy roofline. It is not HBM "
                                   "evidence and no HBM utilisation can be read from it.",
                               }));
  w.raw_field("result", std::move(r).finish());
  w.raw_field("validity", validity_json({true, {}, {}}));
  return std::move(w).finish();
}

}  // namespace mpo::bandwidth
