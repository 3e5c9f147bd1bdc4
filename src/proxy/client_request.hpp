// A client's request as the proxy holds it while it forwards it (edge: Beast's method and field
// enums, no I/O). Made from the head parse_request_head read, its fields kept as views into one copy
// of the head's bytes in the order they came: no second parse of the head, no node allocated per
// field, as Beast's message would (issue 43: a tenth of the proxy's instructions per request). A
// request Beast's parser read (a chunked body) or a refused one is copied in from Beast's message.
#pragma once

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/verb.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/request_head.hpp"
#include "proxy/thread_blocks.hpp"

namespace mpo::proxy {

namespace http = boost::beast::http;

class ClientRequest {
 public:
  struct Field {
    std::string_view name, value;
    http::field id;  // Beast's enum for the name, http::field::unknown for a name it does not know
  };

  // Empty, holding none of the thread's kept buffers (those are taken by the factories below; an
  // empty request is usually assigned one of theirs, issue 43).
  ClientRequest() = default;
  // Views into storage that moves with the request: moved, never copied.
  ClientRequest(ClientRequest&&) = default;
  ClientRequest& operator=(ClientRequest&&) = default;
  ClientRequest(const ClientRequest&) = delete;
  ClientRequest& operator=(const ClientRequest&) = delete;

  // From a head parse_request_head passed: `head_bytes` are the bytes it read, `parsed` its reading.
  static ClientRequest from_head(std::string_view head_bytes, const RequestHead& parsed);
  // From Beast's message: its line, fields (in Beast's order) and body.
  static ClientRequest from_message(http::request<http::string_body>&& m);
  // A request line alone (a refused request): method and target as far as they could be read.
  static ClientRequest from_line(std::string_view method, std::string_view target, unsigned version);

  std::string_view method_string() const { return method_; }
  http::verb method() const { return verb_; }
  std::string_view target() const { return *target_; }
  void target(std::string_view t) { target_->assign(t); }
  unsigned version() const { return version_; }
  // As Beast's message says it: HTTP/1.1 unless a Connection field says close; HTTP/1.0 only when
  // one says keep-alive.
  bool keep_alive() const;

  const std::vector<Field>& fields() const { return *fields_; }
  // The first field of that name (case-blind), and how many there are.
  std::optional<std::string_view> find(std::string_view name) const;
  std::optional<std::string_view> find(http::field id) const;
  std::size_t count(std::string_view name) const;
  // What find and count say of each of `names`, in one pass over the fields (issue 43: a pass per
  // name was ~120 instructions a request each). An empty name matches no field.
  struct Match {
    std::optional<std::string_view> first;
    std::size_t count = 0;
  };
  // A name looked for, with Beast's enum for it (field_id): a field whose name Beast knows is
  // matched by its enum, with no comparison of text (issue 43).
  struct Wanted {
    std::string_view name;
    http::field id = http::field::unknown;
  };
  static Wanted wanted(std::string_view name);
  void find_each(std::span<const Wanted> names, std::span<Match> out) const;
  void erase(http::field id);

  std::string& body() { return *body_; }
  const std::string& body() const { return *body_; }

 private:
  struct TakeKept {};
  // With each buffer taken from the thread's kept ones.
  explicit ClientRequest(TakeKept) : storage_(), target_(), fields_(), body_() {}

  // Each buffer the thread's next request's (proxy/thread_blocks.hpp, issue 43).
  // The bytes the views below point into (a vector's buffer moves with it).
  Kept<std::vector<char>> storage_{NotTaken{}};
  std::string_view method_;
  http::verb verb_ = http::verb::unknown;
  Kept<std::string, struct RequestTarget> target_{NotTaken{}};
  unsigned version_ = 11;
  Kept<std::vector<Field>> fields_{NotTaken{}};
  Kept<std::string, struct RequestBody> body_{NotTaken{}};
};

}  // namespace mpo::proxy
