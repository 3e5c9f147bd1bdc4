// Fuzz target: `--usage inject` (proxy/usage_injection). A request body it rewrites is JSON whose
// stream_options.include_usage is true; the usage stripper gives the same bytes and the same count
// however the stream is split (the first byte picks the cut), and what it keeps of a usage-only
// chunk that carried `timings` (the chunk less its usage) is JSON where the chunk was.
#include <simdjson.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "proxy/usage_injection.hpp"

namespace {

bool json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(text.data(), text.size()).get(e) == simdjson::SUCCESS;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (const auto body = mpo::proxy::inject_include_usage(text)) {
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(body->data(), body->size()).get(root) != simdjson::SUCCESS) std::abort();
    bool asked = false;
    if (root["stream_options"]["include_usage"].get_bool().get(asked) != simdjson::SUCCESS || !asked) std::abort();
  }
  mpo::proxy::UsageStripper whole;
  const std::string all = whole.filter(text, true);
  const std::size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  mpo::proxy::UsageStripper split;
  std::string parts = split.filter(text.substr(0, cut), false);
  parts += split.filter(text.substr(cut), true);
  if (parts != all || split.stripped() != whole.stripped()) std::abort();
  if (all.size() > text.size()) std::abort();  // it only ever takes away
  // A single JSON chunk with usage and timings: what is kept of it is JSON.
  if (json(text) && text.find('\n') == std::string_view::npos) {
    mpo::proxy::UsageStripper one;
    const std::string out = one.filter("data: " + std::string(text) + "\n\n", true);
    if (one.stripped() == 1 && !out.empty()) {
      const std::string_view kept = std::string_view(out).substr(6, out.size() - 8);
      if (!json(kept)) std::abort();
    }
  }
  return 0;
}
