// The implementation of proxy/upstream_policy.hpp. The rules of the upstream keep-alive pool, pure
// so they are unit tested without sockets: what a response's `Keep-Alive` header allows, whether a
// failed exchange is retried, and what the proxy has learned about when a backend closes its
// connections.
#include "proxy/upstream_policy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <type_traits>

#include "core/text.hpp"

namespace mpo::proxy {
namespace {

std::string_view trim(std::string_view s) { return trim_blanks(s); }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

template <class T>
std::optional<T> number(std::string_view v) {
  v = trim(v);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  T out{};
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty() || !(out >= 0)) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(out)) return std::nullopt;
  }
  return out;
}

}  // namespace

KeepAliveHint parse_keep_alive(std::string_view header) {
  KeepAliveHint hint;
  while (!header.empty()) {
    const auto comma = header.find(',');
    const std::string_view param = trim(header.substr(0, comma));
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const auto eq = param.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = trim(param.substr(0, eq));
    const std::string_view value = param.substr(eq + 1);
    if (iequals(name, "timeout")) {
      if (auto t = number<double>(value)) hint.timeout_s = *t;
    } else if (iequals(name, "max")) {
      if (auto m = number<std::int64_t>(value)) hint.max = *m;
    }
  }
  return hint;
}

PoolAdmission admit_to_pool(const KeepAliveHint& hint, double pool_idle_s) {
  PoolAdmission a;
  if (hint.max && *hint.max <= 1) return a;
  a.idle_limit_s = pool_idle_s;
  if (hint.timeout_s) {
    const double before_server = *hint.timeout_s >= 2 ? *hint.timeout_s - 1 : *hint.timeout_s / 2;
    a.idle_limit_s = std::min(a.idle_limit_s, before_server);
  }
  a.pool = a.idle_limit_s > 0;
  return a;
}

std::string_view to_string(UpstreamFailure f) {
  switch (f) {
    case UpstreamFailure::kClosed: return "eof";
    case UpstreamFailure::kReset: return "reset";
    case UpstreamFailure::kBrokenPipe: return "broken_pipe";
    case UpstreamFailure::kTimeout: return "timeout";
    case UpstreamFailure::kOther: return "other";
  }
  return "other";
}

bool closed_by_server(UpstreamFailure f) {
  return f == UpstreamFailure::kClosed || f == UpstreamFailure::kReset || f == UpstreamFailure::kBrokenPipe;
}

bool should_retry(const RetryContext& c) {
  return c.retry_stale && c.pooled_connection && c.retries_so_far == 0 && closed_by_server(c.failure) &&
         !c.response_bytes_seen && !c.client_gone;
}

}  // namespace mpo::proxy
