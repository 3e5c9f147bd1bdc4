// Fuzz target: the simulator's JSON profile parser never crashes and accepts only valid profiles.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sim/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto p = mpo::sim::parse_profile(text);
  if (p.ok() && !mpo::sim::validate(*p).ok()) std::abort();  // accepted means valid
  return 0;
}
