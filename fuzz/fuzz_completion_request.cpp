// Fuzz target: OpenAI request bodies, for both endpoints; a parsed request always has a prompt or
// was rejected with a message.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/openai_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto ep : {mpo::sim::Endpoint::kChat, mpo::sim::Endpoint::kCompletions}) {
    auto r = mpo::sim::parse_completion_request(body, ep);
    if (!r.ok() && r.error().message.empty()) std::abort();
    if (r.ok() && r->max_tokens && *r->max_tokens < 1) std::abort();
  }
  return 0;
}
