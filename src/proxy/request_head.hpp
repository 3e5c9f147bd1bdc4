// A client's request head, found and judged before anything of it is forwarded (pure, fuzzed:
// fuzz/fuzz_request_head.cpp). The proxy re-frames every body, so a request the engine would read
// one way and a front-end ahead of the proxy another must never get through: framing is checked as
// strictly as RFC 9112 asks and nginx does (docs/PROXY.md "Requests the proxy refuses").
//
// Two steps. `HeadScanner` finds where the head ends in the bytes read so far, scanning each byte
// once however the head arrives, and stops at the size and line limits (a head of 10,000 short
// lines costs one pass, not a parse). `parse_request_head` then reads the whole head and returns
// what the proxy forwards, or an error whose code names the status to answer (`status_for`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace mpo::proxy {

struct HeadLimits {
  std::size_t max_bytes = 64 * 1024;  // request line + fields + the blank line
  std::size_t max_fields = 100;       // field lines
};

class HeadScanner {
 public:
  enum class State { kNeedMore, kComplete, kTooLarge, kTooManyFields };
  explicit HeadScanner(HeadLimits limits) : limits_(limits) {}

  // `bytes`: everything read for this request so far (the same prefix each call, growing).
  // kComplete: head_size() bytes are the head, blank line included. Empty lines before the request
  // line (RFC 9112 2.2 lets a server skip them; clients send a stray CRLF after a body) are skipped:
  // leading() says how many bytes they took, the head starts there.
  State scan(std::string_view bytes);
  std::size_t leading() const { return leading_; }
  std::size_t head_size() const { return end_ - leading_; }
  // Field lines seen so far (the request line is not one).
  std::size_t fields() const { return lines_ > 0 ? lines_ - 1 : 0; }

 private:
  HeadLimits limits_;
  State state_ = State::kNeedMore;
  std::size_t pos_ = 0;      // next byte to look at
  std::size_t leading_ = 0;  // bytes of empty lines before the request line
  bool started_ = false;     // past the leading empty lines
  std::size_t line_start_ = 0;
  std::size_t lines_ = 0;  // complete lines of the head (request line included)
  std::size_t end_ = 0;
};

// What the proxy forwards of a valid head. Views into the head given to parse_request_head.
struct RequestHead {
  std::string_view method;
  std::string_view target;  // as sent
  // What goes upstream when it is not the target as sent (an absolute-form reduced to its path and
  // query, a query without a path given one): "" when the target goes as it is, the usual case (issue
  // 43: a copy of every target was an allocation per request).
  std::string origin_rewrite;
  // The path and query the backend gets.
  std::string_view origin_target() const { return origin_rewrite.empty() ? target : std::string_view(origin_rewrite); }
  int version = 11;  // 10 or 11
  std::size_t fields = 0;
  // The field lines in order, each name and value (trimmed of its optional whitespace) as sent: the
  // proxy builds the request from them instead of parsing the head a second time (issue 43).
  struct Field {
    std::string_view name, value;
  };
  std::vector<Field> field_lines;
  std::optional<std::uint64_t> content_length;
  bool chunked = false;
  std::string_view host;  // the Host field's value ("" when an HTTP/1.0 request has none)
};

// Error codes (each with the status to answer): request.bad (400), request.method (405),
// request.too_large (431), request.transfer_coding (501), request.version (505).
Result<RequestHead> parse_request_head(std::string_view head, const HeadLimits& limits = {});
// The same read into `out` (whatever it held before is replaced; its field list's buffer is reused:
// the proxy reads each request's head into one kept per loop, issue 43). On an error `out` holds
// part of the head's reading, not to be used.
Status parse_request_head(std::string_view head, const HeadLimits& limits, RequestHead& out);

// The HTTP status for an error of parse_request_head (400 for any other code).
int status_for(const Error& e);

// Field names the proxy does not forward, as nginx's default (underscores_in_headers off): a name
// with an underscore can be read as the same variable as its dashed twin by CGI-style backends.
bool dropped_field_name(std::string_view name);

}  // namespace mpo::proxy
