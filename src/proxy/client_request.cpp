// The implementation of proxy/client_request.hpp.
#include "proxy/client_request.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cstring>
#include <iterator>

#include "proxy/field_id.hpp"
#include "proxy/hop_by_hop.hpp"

namespace mpo::proxy {

namespace {

// A view of `s` moved from the bytes starting at `from` to the same place in those at `to`.
std::string_view rebased(std::string_view s, const char* from, const char* to) {
  return s.empty() ? std::string_view() : std::string_view(to + (s.data() - from), s.size());
}

}  // namespace

ClientRequest ClientRequest::from_head(std::string_view head_bytes, const RequestHead& parsed) {
  ClientRequest r{TakeKept{}};
  r.storage_->assign(head_bytes.begin(), head_bytes.end());
  const char* from = head_bytes.data();
  const char* to = r.storage_->data();
  r.method_ = rebased(parsed.method, from, to);
  r.verb_ = http::string_to_verb(r.method_);
  r.target_->assign(parsed.target);
  r.version_ = static_cast<unsigned>(parsed.version);
  r.fields_->reserve(parsed.field_lines.size());
  for (const auto& f : parsed.field_lines) {
    r.fields_->push_back({rebased(f.name, from, to), rebased(f.value, from, to), field_id(f.name)});
  }
  return r;
}

ClientRequest ClientRequest::from_message(http::request<http::string_body>&& m) {
  ClientRequest r{TakeKept{}};
  std::size_t bytes = m.method_string().size();
  for (const auto& f : m) bytes += f.name_string().size() + f.value().size();
  r.storage_->reserve(bytes);  // never grows below: the views stay where they point
  const auto keep = [&r](std::string_view s) {
    const std::size_t at = r.storage_->size();
    r.storage_->insert(r.storage_->end(), s.begin(), s.end());
    return std::string_view(r.storage_->data() + at, s.size());
  };
  r.method_ = keep(m.method_string());
  r.verb_ = m.method();
  r.target_->assign(m.target());
  r.version_ = m.version();
  for (const auto& f : m) r.fields_->push_back({keep(f.name_string()), keep(f.value()), f.name()});
  *r.body_ = std::move(m.body());
  return r;
}

ClientRequest ClientRequest::from_line(std::string_view method, std::string_view target, unsigned version) {
  ClientRequest r{TakeKept{}};
  r.storage_->assign(method.begin(), method.end());
  r.method_ = std::string_view(r.storage_->data(), r.storage_->size());
  r.verb_ = http::string_to_verb(method);
  r.target_->assign(target);
  r.version_ = version;
  return r;
}

bool ClientRequest::keep_alive() const {
  // As Beast's message::keep_alive(): the first Connection field's tokens.
  const auto connection = find(http::field::connection);
  const auto has = [&](std::string_view token) {
    if (single_connection_token(*connection)) return boost::beast::iequals(*connection, token);  // the usual value
    for (const auto& t : http::token_list(*connection)) {
      if (boost::beast::iequals(t, token)) return true;
    }
    return false;
  };
  if (version_ < 11) return connection && has("keep-alive");
  return !connection || !has("close");
}

std::optional<std::string_view> ClientRequest::find(std::string_view name) const {
  for (const auto& f : *fields_) {
    if (boost::beast::iequals(f.name, name)) return f.value;
  }
  return std::nullopt;
}

std::optional<std::string_view> ClientRequest::find(http::field id) const {
  for (const auto& f : *fields_) {
    if (f.id == id) return f.value;
  }
  return std::nullopt;
}

ClientRequest::Wanted ClientRequest::wanted(std::string_view name) { return {name, field_id(name)}; }

void ClientRequest::find_each(std::span<const Wanted> names, std::span<Match> out) const {
  for (auto& m : out) m = Match{};
  for (const auto& f : *fields_) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Wanted& w = names[i];
      // Both names known to Beast: the enums say it. Otherwise their text, case-blind (a field
      // copied from Beast's message has its enum too, so a known name never meets an unknown one).
      const bool same =
          f.id != http::field::unknown || w.id != http::field::unknown
              ? f.id == w.id
              : f.name.size() == w.name.size() && !w.name.empty() && boost::beast::iequals(f.name, w.name);
      if (same && out[i].count++ == 0) out[i].first = f.value;
    }
  }
}

std::size_t ClientRequest::count(std::string_view name) const {
  std::size_t n = 0;
  for (const auto& f : *fields_) n += boost::beast::iequals(f.name, name) ? 1 : 0;
  return n;
}

void ClientRequest::erase(http::field id) {
  std::erase_if(*fields_, [id](const Field& f) { return f.id == id; });
}

}  // namespace mpo::proxy
