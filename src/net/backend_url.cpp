// The implementation of net/backend_url.hpp. The --backend URL: scheme, host, port, and a base path
// that every forwarded target is put under.
#include "net/backend_url.hpp"

#include <fmt/format.h>

#include <boost/url/parse.hpp>

#include "core/text.hpp"

namespace mpo::net {

std::string BackendUrl::target_for(std::string_view client_target) const {
  if (client_target.empty() || client_target.front() != '/') return base_path + "/" + std::string(client_target);
  return base_path + std::string(client_target);
}

Result<BackendUrl> parse_backend_url(std::string_view text, std::string_view what, std::string_view example) {
  auto bad = [&](std::string_view why) {
    return make_error(errc::kBackendUrl,
                      fmt::format("invalid {} '{}': {} (expected e.g. {})", what, text, why, example));
  };
  auto u = boost::urls::parse_absolute_uri(text);
  if (!u) return bad(u.error().message());
  BackendUrl b;
  b.scheme = std::string(u->scheme());
  if (b.scheme != "http" && b.scheme != "https") return bad("the scheme must be http or https");
  if (!u->has_authority() || u->encoded_host().empty()) return bad("missing host");
  if (u->has_userinfo()) return bad("credentials in the URL are not supported; send them as headers from the client");
  if (u->has_query() || u->has_fragment()) return bad("a query or fragment is not allowed");
  b.host = std::string(u->host_address());
  if (u->has_port()) {
    if (u->port_number() == 0) return bad("port must be 1-65535");
    b.port = u->port_number();
  } else {
    b.port = b.scheme == "https" ? 443 : 80;
  }
  std::string path(u->encoded_path());
  while (!path.empty() && path.back() == '/') path.pop_back();
  b.base_path = path;
  const bool v6 = b.host.find(':') != std::string::npos;
  const std::string host_part = v6 ? "[" + b.host + "]" : b.host;
  b.origin = fmt::format("{}://{}:{}", b.scheme, host_part, b.port);
  const bool default_port = (b.scheme == "http" && b.port == 80) || (b.scheme == "https" && b.port == 443);
  b.host_header = default_port ? host_part : fmt::format("{}:{}", host_part, b.port);
  return b;
}

std::string openai_base_hint(const BackendUrl& url) {
  const std::string_view path = url.base_path;
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") return "";
  return fmt::format(" (did you mean {}{}/v1?)", url.origin, url.base_path);
}

std::optional<std::string> openai_models_problem(const BackendUrl& url, int status, std::string_view body,
                                                 std::string_view transport_error) {
  const std::string where = url.origin + url.base_path + "/models";
  if (status == 0) return fmt::format("cannot reach {}: {}", where, transport_error);
  if (status == 401 || status == 403) {
    return fmt::format("{} answered HTTP {}: the server wants an API key (set it in the variable --api-key-env names)",
                       where, status);
  }
  if (status == 404) {
    return fmt::format("{} answered HTTP 404: expected an OpenAI API base URL that lists its models{}", where,
                       openai_base_hint(url));
  }
  if (status < 200 || status >= 300) return fmt::format("{} answered HTTP {}{}", where, status, openai_base_hint(url));
  const std::string kind = body_kind(body);
  if (kind != "JSON" || body.find("\"data\"") == std::string_view::npos) {
    return fmt::format("{} answered {}, not an OpenAI model list ({{\"data\": [...]}}){}", where,
                       kind == "JSON" ? "JSON without \"data\"" : kind, openai_base_hint(url));
  }
  return std::nullopt;
}

}  // namespace mpo::net
