// The connection-specific header fields a proxy never forwards (RFC 9110 7.6.1). Edge (Beast).
#pragma once

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <string>
#include <string_view>

namespace mpo::proxy {

// A Connection value that is one bare token (no list separator, whitespace or quote): compared
// whole rather than read by Beast's list parser (issue 43). A plain loop: string_view's
// find_first_of calls a search of the set for every byte.
inline bool single_connection_token(std::string_view v) {
  for (const char c : v) {
    if (c == ',' || c == ' ' || c == '\t' || c == '"') return false;
  }
  return true;
}

// RFC 9110 7.6.1: connection-specific fields, never forwarded: Connection, Keep-Alive,
// Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade, Proxy-Authenticate and
// Proxy-Authorization, and the fields the Connection field names. Told by Beast's enum for the name
// (all nine have one, so a name Beast does not know is never one of them: one switch instead of
// nine case-blind compares per field, issue 43); the Connection field's tokens are read as text.
inline bool is_hop_by_hop_field(boost::beast::http::field id, std::string_view name,
                                std::string_view connection_tokens) {
  using boost::beast::http::field;
  switch (id) {
    case field::connection:
    case field::keep_alive:
    case field::proxy_connection:
    case field::te:
    case field::trailer:
    case field::transfer_encoding:
    case field::upgrade:
    case field::proxy_authenticate:
    case field::proxy_authorization: return true;
    default: break;
  }
  if (connection_tokens.empty()) return false;
  // One bare token ("close" or "keep-alive", nearly every Connection field) is the whole value.
  if (single_connection_token(connection_tokens)) return boost::beast::iequals(name, connection_tokens);
  for (const auto& token : boost::beast::http::token_list(connection_tokens)) {
    if (boost::beast::iequals(name, token)) return true;
  }
  return false;
}

template <class Field>  // a Beast fields::value_type
bool is_hop_by_hop_field(const Field& f, std::string_view connection_tokens) {
  return is_hop_by_hop_field(f.name(), f.name_string(), connection_tokens);
}

// The Connection field's value, a view into `f`.
template <class Fields>
std::string_view connection_tokens(const Fields& f) {
  auto it = f.find(boost::beast::http::field::connection);
  return it == f.end() ? std::string_view() : std::string_view(it->value());
}

}  // namespace mpo::proxy
