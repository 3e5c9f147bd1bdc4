// Waiting for the simulator to count an aborted request (integration tests only: it reads /metrics
// over HTTP).
#pragma once

#include <cstdint>

#include "support/http_client.hpp"
#include "support/metric_families.hpp"

namespace mpo::test {

// The simulator on `port` counts an aborted request once a client (or the proxy in front of it)
// closed its connection: reads its /metrics until `aborts` have been counted, or gives up after
// 2,000 reads; returns the count seen last.
inline double wait_for_sim_aborts(std::uint16_t port, double aborts) {
  double seen = 0;
  for (int i = 0; i < 2000 && seen < aborts; ++i) {
    seen = read_exposition(http_get(port, "/metrics").body).find("vllm:request_success_total", {"abort"}).value_or(0);
  }
  return seen;
}

}  // namespace mpo::test
