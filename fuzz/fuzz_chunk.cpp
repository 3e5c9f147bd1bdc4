// Fuzz target: chunk and response-body classification never crash; kinds are consistent; a request
// body the DOM parse accepts is read by inspect_request (On-Demand) as the DOM reads it, and read
// where it lies (inspect_request_in_place) as its copy is.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "openai/chunk.hpp"
#include "request_reading.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto c = mpo::openai::classify_chunk(text);
  const auto b = mpo::openai::parse_response_body(text);
  if (text != "[DONE]" && c.kind != b.kind) std::abort();
  const auto read = mpo::openai::inspect_request("/v1/chat/completions", text);
  const auto by_dom = mpo::openai::reading::inspect_request_by_dom("/v1/chat/completions", text);
  if (by_dom.json && read != by_dom) std::abort();
  // Where the DOM refuses the body, the reading may still find the members it walks (a fault inside
  // a value it steps over); it never says more than a well-formed walk found.
  if (!read.json && read != mpo::openai::RequestInfo{.operation = read.operation}) std::abort();
  // The proxy's reading where the body lies, with room past its end that holds a closing brace
  // (what a longer body left there), reads as the copy does.
  std::string kept(text.size() + mpo::openai::kRequestBodyPadding, '}');
  kept.assign(text);
  if (mpo::openai::inspect_request_in_place("/v1/chat/completions", kept) != read) std::abort();
  return 0;
}
