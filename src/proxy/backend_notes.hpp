// One line on stderr when the backend looks wrong, from what the proxy's own requests found (the
// proxy sends nothing of its own to the backend): it refuses or times out connections, or it
// answers 404 to the API paths clients send, the usual sign of a --backend given with the wrong
// base path. Each kind is said once, and again only after a request has succeeded. Pure.
#pragma once

#include <optional>
#include <string>

#include "ledger/observation.hpp"

namespace mpo::proxy {

class BackendNotes {
 public:
  explicit BackendNotes(std::string backend) : backend_(std::move(backend)) {}
  // The line to print for this finished request, if any.
  std::optional<std::string> observe(const ledger::Observation& o);

 private:
  std::string backend_;
  bool said_unreachable_ = false, said_not_found_ = false;
};

}  // namespace mpo::proxy
