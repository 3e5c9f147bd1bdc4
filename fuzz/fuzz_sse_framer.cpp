// Fuzz target: the SSE framer yields the same events however the bytes are split, and every
// event's data classifies without crashing.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "openai/chunk.hpp"
#include "openai/sse_framer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> whole, split;
  mpo::openai::SseFramer a, b;
  a.feed(bytes, [&](const mpo::openai::SseEvent& e) {
    whole.emplace_back(e.data);
    (void)mpo::openai::classify_chunk(e.data);
  });
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  b.feed(bytes.substr(0, cut), [&](const mpo::openai::SseEvent& e) { split.emplace_back(e.data); });
  b.feed(bytes.substr(cut), [&](const mpo::openai::SseEvent& e) { split.emplace_back(e.data); });
  if (whole != split) std::abort();
  return 0;
}
