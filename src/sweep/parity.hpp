// The single-point, multi-track comparison `fak.serving-parity.v1` (docs/FAK.md 6.5): the same
// workload at the same concurrency against each track's server, with the ours-vs-SGLang "tax".
// Pure: the runner measures, this builds the document.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "loadgen/sample.hpp"
#include "sweep/serving_stats.hpp"

namespace mpo::sweep {

inline constexpr const char* kParitySchema = "fak.serving-parity.v1";

// fak's track names, in its default order.
inline constexpr const char* kParityTracks[] = {"ours", "sglang", "vllm", "fak-fronts-fleet"};
// Case-insensitive, '_' read as '-'; an error names the accepted tracks.
Result<std::string> canonical_track(std::string_view name);

struct ParityTrack {
  std::string track;
  bool measured = false;  // the track was run (it had a base URL)
  std::string reason;     // why not, when not
  std::string base_url;
  std::vector<loadgen::Sample> samples;
  std::optional<ServingStats> stats;  // nullopt: not measured (written as folded from no samples)
};

struct ParityReport {
  std::string generated_at, machine_id = "unknown", model;
  std::int64_t requests = 0, concurrency = 1;
  double slo_ms = 2000;
  std::string workload_digest;  // ours: the same digest rule as sweeps
  std::vector<ParityTrack> tracks;
  std::string artifact, tool_version;
};

// Tracks not given are written as not_measured ("no base URL configured for this track").
boost::json::value parity_json(const ParityReport& r);
// Reads a parity receipt (ours or fak's); numbers exact, unknown fields ignored.
Result<ParityReport> parse_parity(std::string_view text);

}  // namespace mpo::sweep
