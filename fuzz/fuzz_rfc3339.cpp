// Fuzz target: RFC 3339 parsing never crashes, and whatever parses formats back to a timestamp
// that parses to the same instant.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/time.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto t = mpo::parse_rfc3339(text);
  if (t.ok() && *t >= 0 && *t < 253'402'300'800'000'000LL) {
    auto again = mpo::parse_rfc3339(mpo::format_rfc3339_us(*t));
    if (!again.ok() || *again != *t) std::abort();
  }
  return 0;
}
