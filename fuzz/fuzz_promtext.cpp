// Fuzz target: the exposition parser never crashes; whatever it accepts, the writer writes in a
// form it accepts again with the same content; histogram assembly, quantiles, signals, deltas and
// facts never crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "engines/delta.hpp"
#include "engines/facts.hpp"
#include "promtext/exposition.hpp"
#include "promtext/histogram.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = mpo::promtext::parse_exposition(text);
  if (!e) return 0;
  for (const auto& f : e->families) {
    for (const auto& h : mpo::promtext::assemble_histograms(f)) {
      (void)mpo::promtext::histogram_quantile(0.95, h.buckets);
    }
  }
  // Catalog lookup, deltas and facts never crash on whatever parsed.
  const auto signals = mpo::engines::extract_signals(*e);
  (void)mpo::engines::derive_facts(signals, std::nullopt);
  if (auto d = mpo::engines::delta_signals(signals, signals)) (void)mpo::engines::derive_facts(*d, 1.0);
  const std::string written = mpo::promtext::write_exposition(*e);
  auto again = mpo::promtext::parse_exposition(written);
  if (!again || !mpo::promtext::same_content(*e, *again)) std::abort();
  return 0;
}
