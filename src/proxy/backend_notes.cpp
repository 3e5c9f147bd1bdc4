// The implementation of proxy/backend_notes.hpp. One line on stderr when the backend looks wrong,
// from what the proxy's own requests found (the proxy sends nothing of its own to the backend): it
// refuses or times out connections, or it answers 404 to the API paths clients send, the usual sign
// of a --backend given with the wrong base path.
#include "proxy/backend_notes.hpp"

#include <fmt/format.h>

namespace mpo::proxy {

std::optional<std::string> BackendNotes::observe(const ledger::Observation& o) {
  if (o.outcome == "ok") {
    said_unreachable_ = said_not_found_ = false;
    return std::nullopt;
  }
  if ((o.outcome == "upstream_unreachable" || o.outcome == "upstream_timeout") && !said_unreachable_) {
    said_unreachable_ = true;
    return fmt::format(
        "modelperfobs proxy: --backend {}: {} ({}); requests are answered {} until it answers (said once, and again "
        "after a request has succeeded)",
        backend_, o.outcome, o.error_message.value_or("no response"), o.outcome == "upstream_timeout" ? 504 : 502);
  }
  if (o.http_status == 404 && o.operation != "other" && !said_not_found_) {
    said_not_found_ = true;
    const bool doubled = o.path.rfind("/v1/v1/", 0) == 0 || backend_.ends_with("/v1") || backend_.ends_with("/v1/");
    return fmt::format(
        "modelperfobs proxy: --backend {} answered HTTP 404 for {} {}: --backend is the engine's origin, and clients' "
        "paths (/v1/...) are put under its base path{}",
        backend_, o.method, o.path,
        doubled
            ? fmt::format(" (this one ends in /v1, so a client's /v1/... arrives as {}/v1/...: drop the /v1)", backend_)
            : "");
  }
  return std::nullopt;
}

}  // namespace mpo::proxy
