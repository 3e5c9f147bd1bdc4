// Fuzz target: chunk and response-body classification never crash; kinds are consistent.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "openai/chunk.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto c = mpo::openai::classify_chunk(text);
  const auto b = mpo::openai::parse_response_body(text);
  if (text != "[DONE]" && c.kind != b.kind) std::abort();
  (void)mpo::openai::inspect_request("/v1/chat/completions", text);
  return 0;
}
