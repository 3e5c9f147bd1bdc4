// How a point's load is defined: a number of requests kept in flight (closed loop) or an offered
// rate of arrivals (open loop). Pure.
#pragma once

namespace mpo::loadgen {

enum class LoadMode { kConcurrency, kRate };

}  // namespace mpo::loadgen
