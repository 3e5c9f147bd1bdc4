// Fuzz target: the backend's Keep-Alive header (proxy/upstream_policy) never crashes, and what it
// yields keeps the pool's invariants: no negative values, an idle limit within (0, pool_idle].
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/upstream_policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto hint = mpo::proxy::parse_keep_alive(text);
  if (hint.timeout_s && !(*hint.timeout_s >= 0)) std::abort();
  if (hint.max && *hint.max < 0) std::abort();
  const auto a = mpo::proxy::admit_to_pool(hint, 4.0);
  if (a.pool && !(a.idle_limit_s > 0 && a.idle_limit_s <= 4.0)) std::abort();
  if (hint.max && *hint.max <= 1 && a.pool) std::abort();
  return 0;
}
