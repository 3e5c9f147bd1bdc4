// Fuzz target: the Nsight Compute importer never crashes, and whatever it accepts becomes a receipt
// that verify accepts (the writer and the checker agree on every input).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "bandwidth/ncu_import.hpp"
#include "bandwidth/receipt.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto im = mpo::bandwidth::import_ncu_csv(text);
  if (!im) return 0;
  mpo::bandwidth::CaptureContext c;
  c.file = "fuzz.csv";
  c.device = "fuzz device";
  c.capture_start_us = 1'787'824'800'000'000;
  c.capture_end_us = c.capture_start_us + 1;
  c.theoretical_gb_s = 3350;
  c.device_roofline_gb_s = 3100;
  const std::string receipt = mpo::bandwidth::ncu_receipt_json(*im, c, 1'790'000'000'000'000, "fuzz");
  if (!mpo::bandwidth::verify_receipt(receipt)) std::abort();
  return 0;
}
