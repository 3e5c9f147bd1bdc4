// Fuzz target: the strict cache-state report reader and its validation never crash; a report that
// reads writes back to text that reads to the same text.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cachestate/receipt.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace mpo::cachestate;
  auto r = parse_report(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!r) return 0;
  (void)validate_report(*r);
  for (const auto& a : r->arms) (void)verify_receipt(a.receipt);
  const std::string once = report_text(*r);
  auto again = parse_report(once);
  if (!again || report_text(*again) != once) std::abort();
  return 0;
}
