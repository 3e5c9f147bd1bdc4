// The Nsight Compute CSV importer: both layouts ncu writes (the long "details" page, one row per
// launch per metric, and the wide `--page raw` table, one column per metric under a units row),
// grouped by (process, launch), failing closed with a message that names the launch and metric.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::bandwidth {

inline constexpr std::string_view kReadMetric = "dram__bytes_read.sum";
inline constexpr std::string_view kWriteMetric = "dram__bytes_write.sum";
inline constexpr std::string_view kDurationMetric = "gpu__time_duration.sum";

enum class NcuLayout { kDetails, kRaw };
std::string_view to_string(NcuLayout l);

struct KernelTotals {
  std::string name;
  std::uint64_t launches = 0;
  std::optional<std::uint64_t> read_bytes;
  std::optional<std::uint64_t> write_bytes;
  std::optional<double> duration_ns;
};

struct NcuImport {
  NcuLayout layout = NcuLayout::kDetails;
  std::string process_id;
  std::string process_name;
  bool host_column = false;                    // a Host Name column existed (and every row agreed)
  std::optional<std::string> profiler_device;  // the CSV's Device column, when it has one
  std::uint64_t launch_count = 0;
  std::optional<std::uint64_t> read_bytes;  // absent: some launch reported it unavailable
  std::optional<std::uint64_t> write_bytes;
  std::optional<double> duration_ns;
  std::vector<std::string> unavailable;  // which launch made a direction unavailable, and why
  std::vector<KernelTotals> kernels;     // per kernel name, in order of first launch
};

// Error codes: "ncu.header", "ncu.metric", "ncu.unit", "ncu.value", "ncu.mixed", "ncu.duration",
// "ncu.csv". Every message names the launch (and metric) it is about, and what to do.
Result<NcuImport> import_ncu_csv(std::string_view text);

// An exact non-negative integer that fits in 64 bits ("1,500", "500.0", "5e2"; not "500.5").
std::optional<std::uint64_t> parse_byte_count(std::string_view text);

}  // namespace mpo::bandwidth
