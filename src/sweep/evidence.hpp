// What the server and the power source say about one point (pure): counter deltas between the
// scrape before and the scrape after the point, peaks of the gauges sampled during it, restart
// detection (also against the previous point's last scrape), and energy from power samples or a
// DCGM energy counter.
#pragma once

#include <boost/json/value.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/sample.hpp"
#include "scrape/snapshot.hpp"

namespace mpo::sweep {

// Requests of the point that reached the server (it answered, or the client gave up waiting).
std::int64_t requests_reaching_server(const std::vector<loadgen::Sample>& samples);

// The evidence block's "server" member. `previous_after`: the last scrape of the previous point
// (nullptr for the first), so a restart between points is caught too.
boost::json::object server_evidence(const scrape::Snapshot* previous_after, const scrape::Snapshot& before,
                                    const std::vector<scrape::Snapshot>& during, const scrape::Snapshot& after,
                                    std::int64_t requests_sent);

struct PowerSample {
  std::int64_t steady_us = 0;
  double watts = 0;  // summed over the GPUs
};
// Parses `nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits` output: one number per
// GPU per line, summed. nullopt when a line is not a number ("[N/A]", "[Not Supported]").
std::optional<double> parse_power_draw(std::string_view text);
// Sum of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION over every GPU (millijoules); nullopt when absent.
std::optional<double> parse_dcgm_energy_mj(std::string_view exposition_text);

// The "energy" member: joules over [from, to] by the trapezoid rule over the samples (which must
// cover the window), and output tokens per joule.
boost::json::object energy_from_power(const std::vector<PowerSample>& samples, std::int64_t from_us, std::int64_t to_us,
                                      std::int64_t output_tokens);
boost::json::object energy_from_dcgm(std::optional<double> before_mj, std::optional<double> after_mj,
                                     std::int64_t output_tokens, const std::string& source);

}  // namespace mpo::sweep
