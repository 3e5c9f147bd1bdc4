// Fuzz target: request bodies of every endpoint the simulator serves (chat, completions, the
// Responses API, Anthropic Messages); a parsed request was accepted with a sane max_tokens, or
// rejected with a message; a Messages request always has max_tokens (it is required there).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/openai_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  using mpo::sim::Endpoint;
  for (auto ep : {Endpoint::kChat, Endpoint::kCompletions, Endpoint::kResponses, Endpoint::kMessages}) {
    auto r = mpo::sim::parse_completion_request(body, ep);
    if (!r.ok() && r.error().message.empty()) std::abort();
    if (r.ok() && r->max_tokens && *r->max_tokens < 1) std::abort();
    if (r.ok() && ep == Endpoint::kMessages && !r->max_tokens) std::abort();
  }
  return 0;
}
