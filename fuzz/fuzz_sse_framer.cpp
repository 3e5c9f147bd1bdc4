// Fuzz target: the SSE framer yields the same events however the bytes are split, and every
// event's data classifies without crashing; the stream tap (every API's events) reads the same
// facts however the bytes are split, and never states a negative count.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "openai/chunk.hpp"
#include "openai/sse_framer.hpp"
#include "openai/stream_tap.hpp"

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

  mpo::openai::StreamTap t1(true), t2(true);
  t1.feed(bytes, 1);
  t2.feed(bytes.substr(0, cut), 1);
  t2.feed(bytes.substr(cut), 1);
  t1.finish(true);
  t2.finish(true);
  if (t1.content_events() != t2.content_events() || t1.saw_terminal() != t2.saw_terminal() ||
      t1.unknown_events() != t2.unknown_events() || t1.requires_terminal_event() != t2.requires_terminal_event() ||
      t1.error_event() != t2.error_event() || t1.completion_tokens() != t2.completion_tokens() ||
      t1.prompt_tokens() != t2.prompt_tokens()) {
    std::abort();
  }
  const auto completion = t1.completion_tokens();
  const auto prompt = t1.prompt_tokens();
  if ((completion && *completion < 0) || (prompt && *prompt < 0)) std::abort();
  return 0;
}
