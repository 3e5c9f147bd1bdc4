// Empties an engine's prefix cache by the first route it offers (edge): vLLM's POST
// /reset_prefix_cache, SGLang's POST /flush_cache, llama.cpp's slot erase (GET /slots, then POST
// /slots/ID?action=erase for each). Used by `sweep --reset-cache-between-points` and by
// `cache-state-bench` against an engine.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "core/result.hpp"
#include "loadgen/driver.hpp"

namespace mpo::loadgen {

inline constexpr const char* kSlotEraseRoute = "llama.cpp slot erase (GET /slots, POST /slots/ID?action=erase)";

// The route that worked ("POST /reset_prefix_cache", ...); `route` keeps it for the next call ("" at
// first: every route is tried in turn). The error says what each route answered and what the
// engine needs (vLLM: VLLM_SERVER_DEV_MODE=1; llama.cpp: --slot-save-path DIR, and --cache-ram 0,
// since its host-memory prompt cache outlives a slot erase).
boost::asio::awaitable<Result<std::string>> reset_prefix_cache(Driver& driver, std::string& route);

}  // namespace mpo::loadgen
