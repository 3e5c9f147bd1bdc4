// `modelperfobs proxy`: the observation proxy (edge: Asio/Beast, `threads` event loops). Forwards
// any method and path to the backend, streams pass through event by event as they arrive, and
// every request becomes one ledger line.
#pragma once

#include <cstdint>
#include <string>

#include "proxy/options.hpp"

namespace mpo::proxy {

// --threads' default: the machine's hardware threads, at most 8 (beyond that the ledger writer and
// the shared metrics become the limit before the loops do; docs/PROXY.md "Threads").
int default_proxy_threads();

// Runs until SIGTERM/SIGINT (drains, flushes, exits 0). Prints the listening addresses on stdout.
int run_proxy(const ProxyOptions& options);

}  // namespace mpo::proxy
