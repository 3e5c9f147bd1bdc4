// The --backend URL: scheme, host, port, and a base path that every forwarded target is put under.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::net {

struct BackendUrl {
  std::string scheme;       // "http" or "https"
  std::string host;         // as written, without brackets
  std::uint16_t port = 0;   // explicit or the scheme's default
  std::string base_path;    // "" or "/prefix" (no trailing slash)
  std::string origin;       // "http://host:port"
  std::string host_header;  // the Host header to send
  // base_path + the client's target ("/v1/models" -> "/prefix/v1/models").
  std::string target_for(std::string_view client_target) const;
};

// `what` and `example` name the URL in an error: "invalid --backend '...': ... (expected e.g. ...)".
Result<BackendUrl> parse_backend_url(std::string_view text, std::string_view what = "--backend",
                                     std::string_view example = "http://127.0.0.1:8000");

// For a request to an OpenAI base URL that failed: " (did you mean http://host:port/v1?)" when the
// URL's path does not end in /v1 (the usual slip: the server's origin given as its API base), else
// "".
std::string openai_base_hint(const BackendUrl& url);

// The start-up check of a URL given as an OpenAI base URL: what `GET <base>/models` answered
// (`status` 0 with `transport_error` when nothing did). nullopt when it is an OpenAI model list;
// else one line that says what was expected and what came back, with the /v1 hint where it helps.
std::optional<std::string> openai_models_problem(const BackendUrl& url, int status, std::string_view body,
                                                 std::string_view transport_error);

}  // namespace mpo::net
