// The implementation of loadgen/cache_reset.hpp. Empties an engine's prefix cache by the first
// route it offers (edge): vLLM's POST /reset_prefix_cache, SGLang's POST /flush_cache, llama.cpp's
// slot erase (GET /slots, then POST /slots/ID?action=erase for each).
#include "loadgen/cache_reset.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "core/json.hpp"

namespace mpo::loadgen {

namespace asio = boost::asio;

asio::awaitable<Result<std::string>> reset_prefix_cache(Driver& driver, std::string& route_used) {
  std::string tried;
  auto ok = [](int status) { return status >= 200 && status < 300; };
  auto answer = [](int status, const std::string& body) {
    return status == 0 ? body : fmt::format("HTTP {} {}", status, body.substr(0, 160));
  };
  for (const std::string route : {"POST /reset_prefix_cache", "POST /flush_cache"}) {
    if (!route_used.empty() && route_used != route) continue;
    auto [status, body] = co_await driver.post_admin(route.substr(5));
    if (ok(status)) {
      route_used = route;
      co_return route;
    }
    tried += fmt::format("{}: {}; ", route, answer(status, body));
  }
  const std::string slots = kSlotEraseRoute;
  if (route_used.empty() || route_used == slots) {
    auto [status, body] = co_await driver.get_admin("/slots");
    std::vector<std::int64_t> ids;
    if (ok(status)) {
      if (auto doc = parse_json(body); doc && doc->is_array()) {
        for (const auto& v : doc->as_array()) {
          if (v.is_object()) {
            if (auto id = json_int(v.as_object(), "id")) ids.push_back(*id);
          }
        }
      }
    }
    if (ids.empty()) {
      tried += fmt::format("GET /slots: {}", ok(status) ? "no slots listed" : answer(status, body));
    } else {
      std::string failed;
      for (auto id : ids) {
        auto [st, b] = co_await driver.post_admin(fmt::format("/slots/{}?action=erase", id));
        if (!ok(st) && failed.empty()) {
          failed = fmt::format("POST /slots/{}?action=erase: {}", id, answer(st, b));
          if (b.find("slot-save-path") != std::string::npos)
            failed +=
                " (start llama-server with --slot-save-path DIR, and --cache-ram 0: its host-memory prompt cache "
                "outlives a slot erase)";
        }
      }
      if (failed.empty()) {
        route_used = slots;
        co_return slots;
      }
      tried += failed;
    }
  }
  co_return make_error(errc::kSweepCacheReset,
                       fmt::format("the server offers no prefix-cache reset that works ({}). vLLM needs "
                                   "VLLM_SERVER_DEV_MODE=1 for /reset_prefix_cache",
                                   tried));
}

}  // namespace mpo::loadgen
