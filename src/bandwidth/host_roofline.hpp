// `bandwidth measure-host`: a host-memory roofline measured on the machine it runs on. A
// multi-threaded copy of a working set between two buffers, trials with a calibrated iteration
// count, the median per thread count, a sweep over thread counts, the sustainable figure and the
// knee. Bytes are counted as read + written (2 per copied byte, as STREAM's copy counts them).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::bandwidth {

struct RooflineOptions {
  std::uint64_t working_set_bytes = 64ull << 20;  // bytes copied per iteration (two buffers of this size)
  int trials = 5;
  double target_trial_s = 0.1;  // the iteration count is calibrated to this
  std::vector<int> threads;     // empty: 1, 2, 4, ... up to max(4, cores)
  double knee_threshold = 0.90;
};
Status check_roofline_options(const RooflineOptions& o);

struct RooflinePoint {
  int threads = 0;
  std::uint64_t iterations = 0;    // copies of the working set per trial
  std::vector<double> trial_gb_s;  // in the order measured
  double median_gb_s = 0;
  double first_touch_s = 0;  // faulting the buffers in, reported apart
  double calibration_s = 0;
};

struct RooflineAnalysis {
  std::optional<double> sustainable_gb_s;  // the largest min(median_i, median_i+1) over adjacent points
  std::optional<int> knee_threads;         // the first point from which every point is >= threshold x sustainable
  std::string reason;                      // why a figure is missing
};

double median(std::vector<double> v);  // the mean of the middle two for an even count
RooflineAnalysis analyse_roofline(const std::vector<RooflinePoint>& points, double knee_threshold);

// Runs the sweep; `progress` gets one line per point.
std::vector<RooflinePoint> measure_host_roofline(const RooflineOptions& o,
                                                 const std::function<void(const std::string&)>& progress);

std::string host_roofline_receipt_json(const RooflineOptions& o, const std::vector<RooflinePoint>& points,
                                       const RooflineAnalysis& a, std::string_view host_cpu, std::int64_t created_at_us,
                                       std::string_view tool_version);

}  // namespace mpo::bandwidth
