// Fuzz target: the DOM-free readings of streamed chunks (openai/chunk_scan.hpp) answer only what the
// full parse would. The input is one chunk, or two separated by a newline: the scan's reading of
// each, whenever it answers, equals classify_chunk_fully's field for field; and the second read by
// a template learnt from the first, whenever that answers, does too.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "openai/chunk_scan.hpp"

namespace {

void check_scan(std::string_view text) {
  if (const auto scanned = mpo::openai::scan_chat_chunk(text)) {
    if (!(*scanned == mpo::openai::classify_chunk_fully(text))) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto nl = text.find('\n');
  if (nl == std::string_view::npos) {
    check_scan(text);
    return 0;
  }
  const std::string_view first = text.substr(0, nl), second = text.substr(nl + 1);
  check_scan(first);
  check_scan(second);
  mpo::openai::ChunkTemplate t;
  if (t.learn(first)) {
    if (const auto* read = t.read(first); read == nullptr || !(*read == mpo::openai::classify_chunk_fully(first))) {
      std::abort();  // a template reads its own chunk as the full parse does
    }
    if (const auto* read = t.read(second); read != nullptr && !(*read == mpo::openai::classify_chunk_fully(second))) {
      std::abort();
    }
  }
  return 0;
}
