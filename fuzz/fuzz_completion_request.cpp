// Fuzz target: request bodies of every endpoint the simulator serves (chat, completions, the
// Responses API, Anthropic Messages); a parsed request was accepted with a sane max_tokens, or
// rejected with a message; a Messages request always has max_tokens (it is required there); `n` is
// 1 to kMaxChoices, and 1 on the Responses and Messages APIs. An accepted request's response is
// built for each of its choices (at most 4), in vLLM's chunks and in llama.cpp's (with its timings:
// every API's dialect), and every whole body is JSON.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "sim/openai_api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  using mpo::sim::Endpoint;
  for (auto ep : {Endpoint::kChat, Endpoint::kCompletions, Endpoint::kResponses, Endpoint::kMessages}) {
    auto r = mpo::sim::parse_completion_request(body, ep);
    if (!r.ok() && r.error().message.empty()) std::abort();
    if (r.ok() && r->max_tokens && *r->max_tokens < 1) std::abort();
    if (r.ok() && ep == Endpoint::kMessages && !r->max_tokens) std::abort();
    if (!r.ok()) continue;
    if (r->n < 1 || r->n > mpo::sim::kMaxChoices) std::abort();
    if ((ep == Endpoint::kResponses || ep == Endpoint::kMessages) && r->n != 1) std::abort();
    for (const bool llamacpp : {false, true}) {
      for (int choice = 0; choice < std::min(r->n, 4); ++choice) {
        mpo::sim::ResponseBuilder b(*r, {"chatcmpl-1", 1, "m", 1, choice, llamacpp},
                                    static_cast<int>(r->prompt.size()));
        std::string out = b.stream_start();
        mpo::sim::Emission first, last;
        first.index = 0;
        first.text = " a";
        last.index = 1;
        last.text = "\"b\n";
        last.finish = mpo::sim::FinishReason::kLength;
        out += b.stream_tokens(std::vector{first, last});
        if (llamacpp) {
          mpo::sim::FinishedRequest f;
          f.first_token_s = 1.0;
          f.last_token_s = 1.5;
          f.prompt_tokens = static_cast<int>(r->prompt.size());
          f.completion_tokens = 2;
          b.set_timings(mpo::sim::llamacpp_timings(f));
        }
        out += b.choice_end(0);
        b.count_other_choices(choice);
        out += b.stream_end(0);
        const std::string whole = b.full_body(0);
        boost::system::error_code ec;
        (void)boost::json::parse(whole, ec);
        if (ec || out.empty()) std::abort();
      }
    }
  }
  return 0;
}
