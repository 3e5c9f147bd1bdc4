// Fuzz target: a client's request head (proxy/request_head). The scanner and the parser never
// crash; the scanner finds the same end whether the bytes come at once or in two pieces; a head it
// completes stays within the limits; what the parser accepts is forwardable (an origin-form target,
// a known version, chunked and Content-Length never both); and, since the proxy makes a request with
// no chunked body from the parser's fields rather than Beast's (issue 43), Beast's parser reads such a
// head too, to the same line and the same message. A head read into the previous input's reading,
// as the proxy's loop reads each request's, is read the same as into a new one.
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/request_head.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using mpo::proxy::HeadScanner;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const mpo::proxy::HeadLimits limits{4096, 64};
  HeadScanner whole(limits), split(limits);
  const auto state = whole.scan(bytes);
  auto split_state = split.scan(bytes.substr(0, size / 2));
  if (split_state == HeadScanner::State::kNeedMore) split_state = split.scan(bytes);
  if (split_state != state) std::abort();
  if (state == HeadScanner::State::kComplete) {
    if (split.head_size() != whole.head_size() || split.leading() != whole.leading()) std::abort();
    if (whole.leading() + whole.head_size() > size || whole.head_size() > limits.max_bytes) std::abort();
    if (whole.fields() > limits.max_fields) std::abort();
  }
  const auto head = mpo::proxy::parse_request_head(bytes, limits);
  static mpo::proxy::RequestHead kept;  // the previous input's reading
  const auto st = mpo::proxy::parse_request_head(bytes, limits, kept);
  if (st.ok() != head.ok()) std::abort();
  if (!st.ok() && st.error().message != head.error().message) std::abort();
  if (head &&
      (kept.method != head->method || kept.target != head->target || kept.origin_rewrite != head->origin_rewrite ||
       kept.version != head->version || kept.fields != head->fields || kept.content_length != head->content_length ||
       kept.chunked != head->chunked || kept.host != head->host ||
       kept.field_lines.size() != head->field_lines.size())) {
    std::abort();
  }
  for (std::size_t i = 0; head && i < head->field_lines.size(); ++i) {
    if (kept.field_lines[i].name != head->field_lines[i].name ||
        kept.field_lines[i].value != head->field_lines[i].value)
      std::abort();
  }
  if (head) {
    if (head->origin_target().empty() || head->origin_target().front() != '/') std::abort();
    // Rewritten only when it differs from the target as sent.
    if (!head->origin_rewrite.empty() && head->origin_rewrite == head->target) std::abort();
    if (head->version != 10 && head->version != 11) std::abort();
    if (head->chunked && head->content_length) std::abort();
    if (head->method.empty()) std::abort();
    if (head->field_lines.size() != head->fields) std::abort();
    if (!head->chunked) {
      namespace http = boost::beast::http;
      http::request_parser<http::empty_body> beast;
      beast.header_limit(static_cast<std::uint32_t>(limits.max_bytes + 1));
      beast.eager(false);
      beast.body_limit(boost::none);  // the proxy judges a length against --max-body itself
      boost::system::error_code ec;
      beast.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      if (ec) std::abort();  // a head Beast refuses, the proxy would forward
      if (!beast.is_header_done()) std::abort();
      const auto& m = beast.get();
      if (m.method_string() != head->method || m.target() != head->target || m.version() != unsigned(head->version))
        std::abort();
      // The fields inserted one by one as the proxy does (Beast keeps those of one name together).
      http::request<http::empty_body> made;
      for (const auto& f : head->field_lines) made.insert(f.name, f.value);
      auto a = m.begin(), b = made.begin();
      for (; a != m.end() && b != made.end(); ++a, ++b) {
        if (a->name_string() != b->name_string() || a->value() != b->value()) std::abort();
      }
      if (a != m.end() || b != made.end()) std::abort();
    }
  } else {
    const int status = mpo::proxy::status_for(head.error());
    if (status < 400 || status > 505 || head.error().message.empty()) std::abort();
  }
  return 0;
}
