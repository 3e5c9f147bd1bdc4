// The cache-state report as a page (pure, src/present): the verdict, each arm's transition with
// its result and the counters that prove it, and the probes' reused tokens.
#pragma once

#include <string>

#include "cachestate/receipt.hpp"

namespace mpo::cachestate {

std::string report_html(const Report& r);

}  // namespace mpo::cachestate
