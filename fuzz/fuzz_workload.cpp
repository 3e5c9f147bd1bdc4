// Fuzz target: the workload files a sweep reads (Mooncake-style traces, ShareGPT conversations, fak's
// web tasks) and length distributions never crash, and a trace that reads gives each request the
// prompt length it asked for.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "loadgen/trace.hpp"
#include "loadgen/workload.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mpo::loadgen;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  TraceOptions o;
  o.block_tokens = 16;
  o.max_input_tokens = 4096;  // keeps each case's memory small
  if (auto t = parse_mooncake_trace(text, o)) {
    for (const auto& r : t->requests) {
      const auto& p = r.messages.at(0).content;
      const auto words = static_cast<std::int64_t>(1 + std::count(p.begin(), p.end(), ' '));
      if (words != r.prompt_tokens_estimate) std::abort();
    }
  }
  (void)parse_sharegpt(text, {});
  (void)parse_web_tasks(text, WebTaskOptions{3, 8, "p"});
  (void)parse_length_distribution(text);
  return 0;
}
