// The backend's response as Beast's basic_parser reads it (its syntax, framing and limits, as
// before), kept as the proxy needs it (edge: Beast). Beast's own parser built a message whose
// fields were allocated one by one (five allocations per response, and a tree to insert each into:
// 3,500 instructions of the 7,400 a one-token response's head cost, issue 43); this one keeps the
// head's name and value bytes in one string, and copies the body into the buffer the relay gives,
// as Beast's buffer_body does.
#pragma once

#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/thread_blocks.hpp"

namespace mpo::proxy {

namespace http = boost::beast::http;

// One field of the backend's head, as a Beast fields::value_type reads (proxy/hop_by_hop.hpp).
class BackendField {
 public:
  BackendField(http::field id, std::string_view name, std::string_view value) : id_(id), name_(name), value_(value) {}
  http::field name() const { return id_; }
  std::string_view name_string() const { return name_; }
  std::string_view value() const { return value_; }

 private:
  http::field id_;
  std::string_view name_, value_;
};

// The backend's head once read: its status, version and fields in order.
class BackendHead {
 public:
  using const_iterator = std::vector<BackendField>::const_iterator;
  unsigned result_int() const { return status_; }
  http::status result() const { return http::int_to_status(status_); }
  unsigned version() const { return version_; }
  // A Content-Length field was given (Beast's has_content_length()).
  bool has_content_length() const { return content_length_field_; }
  const_iterator begin() const { return fields_->begin(); }
  const_iterator end() const { return fields_->end(); }
  // The first field of that name (Beast's find()).
  const_iterator find(http::field id) const;

 private:
  friend class BackendParser;
  unsigned status_ = 0, version_ = 11;
  bool content_length_field_ = false;
  Kept<std::vector<BackendField>> fields_;
};

class BackendParser : public http::basic_parser<false> {
 public:
  // The buffer the body is copied into, as Beast's buffer_body: `data` advances and `size` falls
  // as bytes are put; a full buffer stops the parse with need_buffer.
  struct Body {
    void* data = nullptr;
    std::size_t size = 0;
  };

  BackendParser() = default;
  const BackendHead& head() const { return head_; }
  Body& body() { return body_; }

 private:
  struct Offsets {
    http::field id;
    std::size_t name_at, name_size, value_at, value_size;
  };

  void on_request_impl(http::verb, boost::beast::string_view, boost::beast::string_view, int,
                       boost::beast::error_code&) override {}
  void on_response_impl(int code, boost::beast::string_view reason, int version, boost::beast::error_code& ec) override;
  void on_field_impl(http::field name, boost::beast::string_view name_string, boost::beast::string_view value,
                     boost::beast::error_code& ec) override;
  void on_header_impl(boost::beast::error_code& ec) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length, boost::beast::error_code& ec) override;
  std::size_t on_body_impl(boost::beast::string_view body, boost::beast::error_code& ec) override;
  void on_chunk_header_impl(std::uint64_t size, boost::beast::string_view extensions,
                            boost::beast::error_code& ec) override;
  std::size_t on_chunk_body_impl(std::uint64_t remain, boost::beast::string_view body,
                                 boost::beast::error_code& ec) override;
  void on_finish_impl(boost::beast::error_code& ec) override;
  std::size_t put_body(boost::beast::string_view bytes, boost::beast::error_code& ec);

  BackendHead head_;
  // Each buffer the thread's next response's (proxy/thread_blocks.hpp, issue 43).
  Kept<std::string, struct BackendFieldBytes> bytes_;  // the fields' names and values, one after another
  Kept<std::vector<Offsets>> offsets_;                 // where each is in bytes_ (views are made once it stops growing)
  Body body_;
};

}  // namespace mpo::proxy
