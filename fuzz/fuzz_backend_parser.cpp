// Fuzz target: the backend's response parser (proxy/backend_parser.hpp) reads every input as
// Beast's own parser does (status, version, head fields, framing, keep-alive, body bytes, error),
// however it is split and however small the body buffer. The first two bytes choose the split and
// the buffer, the third whether the request was HEAD; the rest is the response.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "backend_parser_reading.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::size_t step = data[0] == 0 ? size : 1 + data[0] % 32;
  const std::size_t room = data[1] == 0 ? 16384 : 1 + data[1] % 64;
  const bool head_request = data[2] % 8 == 0;
  const std::string_view response(reinterpret_cast<const char*>(data) + 3, size - 3);
  using namespace mpo::proxy::reading;
  const Reading ours = read_ours(response, step, room, head_request);
  const Reading beasts = read_beasts(response, step, room, head_request);
  // The body left in place (a body relayed as it came) reads the same.
  if (!(read_ours(response, step, room, head_request, true) == ours)) {
    std::fprintf(stderr, "the in-place reading differs from the copying one\n");
    std::abort();
  }
  if (!(ours == beasts)) {
    for (const Reading* r : {&ours, &beasts}) {
      std::fprintf(
          stderr,
          "%s: '%s' head %d done %d status %u version %u fields %zu chunked %d keep-alive %d length %d/%llu body %zu\n",
          r == &ours ? "ours" : "Beast's", r->error.c_str(), r->header_done, r->done, r->status, r->version,
          r->fields.size(), r->chunked, r->keep_alive, r->has_length, static_cast<unsigned long long>(r->length),
          r->body.size());
      for (std::size_t i = 0; i < r->fields.size(); ++i) {
        std::fprintf(stderr, "  %d [%s] [%s]\n", r->ids[i], r->fields[i].first.c_str(), r->fields[i].second.c_str());
      }
    }
    std::abort();
  }
  return 0;
}
