// Fuzz target: the DOM-free readings of streamed chunks (openai/chunk_scan.hpp) answer only what the
// full parse would. The input is one chunk, or two separated by a newline: the scan's reading of
// each, whenever it answers, equals classify_chunk_fully's field for field; the second read by a
// shape learnt from the first (ChunkShape), whenever that answers, does too; and a template learnt
// from that read (ChunkTemplate) is the one the scan learns from the second.
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
  // A shape learnt from the first reads itself and the second as the full parse does, with and
  // without the id.
  mpo::openai::ChunkShape shape;
  if (shape.learn(first)) {
    if (const auto* read = shape.read(first); read == nullptr || !(*read == mpo::openai::classify_chunk_fully(first))) {
      std::abort();
    }
  }
  if (const auto* read = shape.read(second)) {
    const auto full = mpo::openai::classify_chunk_fully(second);
    if (!(*read == full)) std::abort();
    auto without_id = full;
    without_id.id.clear();
    // After the second, the first again: what the second's values changed is the shape's again.
    for (const auto wanted : {mpo::openai::IdWanted::kNo, mpo::openai::IdWanted::kYes}) {
      auto full_first = mpo::openai::classify_chunk_fully(first);
      if (wanted == mpo::openai::IdWanted::kNo) full_first.id.clear();
      const auto* again = shape.read(first, wanted);
      if (again == nullptr || !(*again == full_first)) std::abort();
      if (shape.read(second, wanted) == nullptr) std::abort();
    }
    // A template learnt from the shape's read of the second (no scan) is the one the scan learns
    // from it: both read the two chunks alike, and as the full parse does.
    if (shape.read(second) == nullptr) std::abort();
    mpo::openai::ChunkTemplate by_scan, by_shape;
    const bool scanned = by_scan.learn(second);
    if (by_shape.learn(second, shape)) {
      if (!scanned) std::abort();
      for (const std::string_view x : {first, second}) {
        const auto* a = by_scan.read(x);
        const auto* b = by_shape.read(x);
        if ((a == nullptr) != (b == nullptr)) std::abort();
        if (a != nullptr && (!(*a == *b) || !(*a == mpo::openai::classify_chunk_fully(x)))) std::abort();
      }
    }
  }
  return 0;
}
