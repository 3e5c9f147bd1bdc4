// Fuzz target: a client's request head (proxy/request_head). The scanner and the parser never
// crash; the scanner finds the same end whether the bytes come at once or in two pieces; a head it
// completes stays within the limits; what the parser accepts is forwardable (an origin-form target,
// a known version, chunked and Content-Length never both).
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
  if (head) {
    if (head->origin_target.empty() || head->origin_target.front() != '/') std::abort();
    if (head->version != 10 && head->version != 11) std::abort();
    if (head->chunked && head->content_length) std::abort();
    if (head->method.empty()) std::abort();
  } else {
    const int status = mpo::proxy::status_for(head.error());
    if (status < 400 || status > 505 || head.error().message.empty()) std::abort();
  }
  return 0;
}
