// `modelperfobs.bandwidth.v1`: what a profile import (or a host-memory sample) proves, and only
// that. Built from an import and the operator's statements; re-checked by verify_receipt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bandwidth/ncu_import.hpp"
#include "core/result.hpp"

namespace mpo::bandwidth {

enum class Phase { kPrefill, kDecode, kTransfer, kOther };
enum class Shape { kSmall, kMedium, kLarge };
Result<Phase> parse_phase(std::string_view s);
Result<Shape> parse_shape(std::string_view s);
std::string_view to_string(Phase p);
std::string_view to_string(Shape s);

// What the operator states on the command line. Optional numbers are absent unless given.
struct CaptureContext {
  std::string file;    // the CSV's path as given
  std::string device;  // operator-declared label, e.g. "NVIDIA H100 80GB HBM3 (0)"
  std::int64_t capture_start_us = 0;
  std::int64_t capture_end_us = 0;
  Phase phase = Phase::kOther;
  Shape shape = Shape::kSmall;
  std::optional<std::string> engine;
  std::optional<double> theoretical_gb_s;
  std::optional<double> device_roofline_gb_s;
};

// Checks the context (device label set, end after start, rooflines > 0) before anything is built.
Status check_context(const CaptureContext& c);

struct Rates {
  std::optional<double> read_gb_s, write_gb_s, total_gb_s;
  std::optional<double> utilization_of_theoretical, utilization_of_device_roofline;
};
// One byte per nanosecond is one decimal GB/s. Total only when both directions exist;
// utilisations only with a total and the roofline.
Rates compute_rates(std::optional<std::uint64_t> read_bytes, std::optional<std::uint64_t> write_bytes,
                    std::optional<double> duration_ns, std::optional<double> theoretical_gb_s,
                    std::optional<double> device_roofline_gb_s);
// validity.reasons of an HBM receipt: each direction or the duration that is unavailable.
std::vector<std::string> hbm_validity_reasons(const Rates& rates, bool has_duration);

// What every HBM receipt states in fixed words (verify checks them word for word).
inline constexpr std::string_view kAggregation = "sum-cumulative-bytes-over-sum-profiled-kernel-active-nanoseconds";
inline constexpr const char* kHbmStatements[] = {
    "Profiled-kernel active-time bandwidth: the bytes the profiled kernels moved divided by the time they ran "
    "under the profiler. Not request wall-time throughput.",
    "Nsight Compute serialises and replays kernels: pair this receipt with an uninstrumented latency/throughput "
    "run of the same workload before drawing conclusions about serving.",
    "The device label, engine and rooflines are the operator's statements; the CSV proves the process, the "
    "launches, the counters and (when it has the column) the profiler's device ID.",
};

std::string ncu_receipt_json(const NcuImport& import, const CaptureContext& context, std::int64_t created_at_us,
                             std::string_view tool_version);

// A host-memory sample against a measured host roofline (`collect --measured-gb-s`): its kind is
// "host-memory-sample" and it can never be read as HBM evidence.
struct HostSample {
  double measured_roofline_gb_s = 0;  // from `bandwidth measure-host`
  std::uint64_t bytes = 0;            // bytes the workload moved (operator's figure)
  double seconds = 0;                 // over this wall time
  std::string bytes_evidence;         // what the byte figure rests on
  std::int64_t capture_start_us = 0;
  std::int64_t capture_end_us = 0;
  Phase phase = Phase::kOther;
  Shape shape = Shape::kSmall;
};
Status check_host_sample(const HostSample& s);
std::string host_sample_receipt_json(const HostSample& s, std::int64_t created_at_us, std::string_view tool_version);

struct Verdict {
  std::string kind;     // "hbm-profiled-kernel-active-time", "host-memory-sample", "host-roofline"
  std::string summary;  // one line
};
// Re-checks a receipt: schema, fields known, arithmetic, omissions (no unavailable value written
// as a number), window. The error says what does not hold.
Result<Verdict> verify_receipt(std::string_view json);

}  // namespace mpo::bandwidth
