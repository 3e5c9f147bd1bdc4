// The connection-specific header fields a proxy never forwards (RFC 9110 7.6.1). Edge (Beast).
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <string>
#include <string_view>

namespace mpo::proxy {

// RFC 9110 7.6.1: connection-specific fields, never forwarded.
inline bool is_hop_by_hop(std::string_view name, std::string_view connection_tokens) {
  static constexpr std::string_view kFields[] = {
      "connection", "keep-alive",         "proxy-connection",   "te", "trailer", "transfer-encoding",
      "upgrade",    "proxy-authenticate", "proxy-authorization"};
  for (auto f : kFields) {
    if (boost::beast::iequals(name, f)) return true;
  }
  for (const auto& token : boost::beast::http::token_list(connection_tokens)) {
    if (boost::beast::iequals(name, token)) return true;
  }
  return false;
}

template <class Fields>
std::string connection_tokens(const Fields& f) {
  auto it = f.find(boost::beast::http::field::connection);
  return it == f.end() ? std::string() : std::string(it->value());
}

}  // namespace mpo::proxy
