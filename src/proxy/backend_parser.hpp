// The backend's response, read as the proxy needs it (edge: Beast's error codes and field enum, no
// I/O). Its syntax, framing and limits are those of Beast's basic_parser, which read it before
// (Boost 1.81, boost/beast/http/impl/basic_parser.ipp): the same status line, field and chunk
// grammar, the same errors, the same body framing (RFC 9112 6.3) and keep-alive rule. Beast's parser
// looked each byte up one at a time and each field name up by hash, ~5,500 instructions a one-token
// response and ~450 a chunk header (issue 43); this one searches lines sixteen bytes at a time and
// keeps the names it met. tests/proxy/backend_parser_test.cpp and fuzz/fuzz_backend_parser.cpp read
// every response with both and compare.
//
// The head's names and values are kept in one string; the body is copied into the buffer the relay
// gives, as Beast's buffer_body does. Trailer fields are checked, not kept. Two deliberate
// differences: the head's fields keep the order they came in (Beast's container puts a field after
// the last of its name), and the CRLF after a chunk's data is taken with it (Beast took it with the
// next chunk's size line), so a whole chunk is relayed whole; neither changes what a response means.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
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

// Where one field of the head lies: its name in the head's lines as they came, its value there or,
// folded over lines, in the joined values.
struct BackendFieldAt {
  http::field id;
  bool folded;
  std::size_t name_at, name_size, value_at, value_size;
};

// The backend's head once read: its status, version and fields in order. The fields are read from
// where the parser keeps them, each made as it is visited (no list of them is built, issue 43); a
// field's views stay valid while the parser lives.
class BackendHead {
 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = BackendField;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = BackendField;
    struct Arrow {  // what -> reaches through: the field, made for the call
      BackendField field;
      const BackendField* operator->() const { return &field; }
    };
    const_iterator() = default;
    BackendField operator*() const { return head_->field(*at_); }
    Arrow operator->() const { return {**this}; }
    const_iterator& operator++() {
      ++at_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator was = *this;
      ++at_;
      return was;
    }
    bool operator==(const const_iterator& other) const { return at_ == other.at_; }

   private:
    friend class BackendHead;
    const_iterator(const BackendHead* head, const BackendFieldAt* at) : head_(head), at_(at) {}
    const BackendHead* head_ = nullptr;
    const BackendFieldAt* at_ = nullptr;
  };

  unsigned result_int() const { return status_; }
  http::status result() const { return http::int_to_status(status_); }
  unsigned version() const { return version_; }
  // A Content-Length field was given (Beast's has_content_length()).
  bool has_content_length() const { return content_length_field_; }
  const_iterator begin() const { return {this, at_->data()}; }
  const_iterator end() const { return {this, at_->data() + at_->size()}; }
  // The first field of that name (Beast's find()).
  const_iterator find(http::field id) const;

 private:
  friend class BackendParser;
  BackendField field(const BackendFieldAt& f) const {
    const std::string_view lines = *lines_;
    return {f.id, lines.substr(f.name_at, f.name_size),
            (f.folded ? std::string_view(*folded_) : lines).substr(f.value_at, f.value_size)};
  }
  unsigned status_ = 0, version_ = 11;
  bool content_length_field_ = false;
  // The parser's: its copy of the head's lines, the folded values, where each field is.
  const std::string* lines_ = nullptr;
  const std::string* folded_ = nullptr;
  const std::vector<BackendFieldAt>* at_ = nullptr;
};

class BackendParser {
 public:
  using error_code = boost::system::error_code;
  // The buffer the body is copied into, as Beast's buffer_body: `data` advances and `size` falls
  // as bytes are put; a full buffer stops the parse with need_buffer.
  struct Body {
    void* data = nullptr;
    std::size_t size = 0;
  };

  BackendParser() {
    head_.lines_ = &*bytes_;
    head_.folded_ = &folded_;
    head_.at_ = &*offsets_;
  }
  BackendParser(const BackendParser&) = delete;
  BackendParser& operator=(const BackendParser&) = delete;

  // The most bytes the head may take (Beast's header_limit; 8 KiB unless set).
  void header_limit(std::size_t bytes) { header_limit_ = bytes; }
  // The response has no body whatever its head says (the answer to a HEAD request).
  void skip(bool yes) { skip_body_ = yes; }
  // The body's bytes left where put() found them instead of copied into body() (a body relayed as
  // it came: issue 43): each put's body bytes are then body_spans(), in order, pointers into the
  // bytes given to put; body().size still limits how many a round takes, and body().data is unused.
  struct Span {
    const char* data;
    std::size_t size;
  };
  void body_in_place(bool yes) { in_place_ = yes; }
  std::span<const Span> body_spans() const { return {spans_.data(), spans_.size()}; }
  void clear_body_spans() { spans_.clear(); }

  // Parses what it can of `bytes` and says how many it took. need_more: the head or a chunk header
  // is not whole yet (its bytes stay the caller's); need_buffer: the body buffer is full; any other
  // error: the response broke HTTP (Beast's http::error codes). Past the end: stale_parser.
  std::size_t put(boost::asio::const_buffer bytes, error_code& ec);
  // The connection ended: completes a body read to the close; partial_message when anything else
  // was not whole.
  void put_eof(error_code& ec);

  bool got_some() const { return state_ != State::kNothingYet; }
  bool is_header_done() const { return state_ > State::kFields; }
  bool is_done() const { return state_ == State::kComplete; }
  bool chunked() const { return chunked_; }
  std::optional<std::uint64_t> content_length() const {
    return has_length_ ? std::optional<std::uint64_t>(length0_) : std::nullopt;
  }
  // Whether the connection may carry another request after this response (Beast's rule: HTTP/1.1
  // unless "Connection: close", HTTP/1.0 only with "Connection: keep-alive", never when the body
  // is read to the close).
  bool keep_alive() const;

  const BackendHead& head() const { return head_; }
  Body& body() { return body_; }

 private:
  enum class State : std::uint8_t {
    kNothingYet,
    kStartLine,
    kFields,
    kLengthBody,
    kBodyToEof,
    kChunkHeader,
    kChunkBody,
    kComplete,
  };

  // Each parses from `p` and returns where it got to; a need_more leaves what was not whole.
  const char* parse_head(const char* p, const char* last, error_code& ec);
  const char* parse_start_line(const char* p, const char* last, error_code& ec);
  const char* parse_fields(const char* p, const char* last, bool trailer, error_code& ec);
  const char* parse_field(const char* p, const char* last, std::string_view& name, std::string_view& value,
                          bool& folded, error_code& ec);
  void apply_field(http::field id, std::string_view value, error_code& ec);
  void apply_content_length(std::string_view value, error_code& ec);
  void finish_head(error_code& ec);
  const char* parse_chunk_header(const char* p0, const char* last, error_code& ec);
  std::size_t put_body(const char* p, std::size_t n, error_code& ec);

  State state_ = State::kNothingYet;
  std::size_t header_limit_ = 8192;
  std::size_t head_used_ = 0;    // head bytes taken so far (header_limit counts them all)
  std::size_t head_resume_ = 0;  // a head not whole: its end is looked for this far into the bytes
  std::size_t resume_ = 0;       // a chunk header's search for its line end resumes this far in
  std::uint64_t length_ = 0;     // body or chunk bytes left
  std::uint64_t length0_ = 0;    // the Content-Length
  bool skip_body_ = false, http11_ = false, has_length_ = false, chunked_ = false;
  bool connection_close_ = false, connection_keep_alive_ = false, need_eof_ = false;
  bool expect_crlf_ = false, final_chunk_ = false, in_place_ = false;
  // A round's spans: a read holds a few chunks (held inline: a vector cost two allocations a
  // response, issue 43).
  boost::container::small_vector<Span, 8> spans_;

  // Each buffer the thread's next response's (proxy/thread_blocks.hpp, issue 43).
  Kept<std::string, struct BackendFieldBytes> bytes_;  // the head's field lines as they came
  Kept<std::vector<BackendFieldAt>> offsets_;          // where each field is
  std::string folded_;                                 // values folded over lines (obs-fold), each joined
  BackendHead head_;                                   // reads the three above
  Body body_;
};

}  // namespace mpo::proxy
