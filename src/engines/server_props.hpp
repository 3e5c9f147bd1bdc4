// What a server says of its own batch capacity on a route beside its API (pure). llama.cpp's
// `GET /props` (b10309; tools/server/README.md, "GET /props") states `total_slots`, the requests it
// decodes at once (`--parallel`/`-np`), beside `build_info` and each slot's context
// (`default_generation_settings.n_ctx`). SGLang's `GET /server_info` (`/get_server_info` before it
// was renamed; docs "SGLang Native APIs") states its server arguments and, per data-parallel rank,
// the scheduler's `internal_states`, whose `effective_max_running_requests_per_dp` is the running
// batch's cap as the scheduler set it (lower than `--max-running-requests` where its memory pools
// allow fewer). A sweep takes that as its batch capacity where none was declared, the server's own
// word as its source.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace mpo::engines {

struct ServerSlots {
  int slots = 0;             // > 0
  std::string build;         // "b10309-82bb485"; "" when the page does not say
  int context_per_slot = 0;  // tokens; 0 when the page does not say
  // "llama.cpp b10309-82bb485 GET /props total_slots": where the capacity comes from.
  std::string source() const;
  // What else the page says of the capacity, for a note: ", 2048 tokens of context a slot", or
  // SGLang's ", a KV cache of 20480 tokens shared"; "" when it says nothing.
  std::string context() const;

  // SGLang: the route read, the member the slots came from and the data-parallel ranks (1 when
  // the server runs one); kv_tokens its KV cache's tokens, shared by the running requests.
  bool sglang = false;
  std::string route;
  std::string member;
  int dp_size = 1;
  std::int64_t kv_tokens = 0;
};

// llama.cpp's GET /props body; an error when it is not a JSON object with a positive integer
// `total_slots` (another server's page, an error page, a reverse proxy's 404).
Result<ServerSlots> parse_llamacpp_props(std::string_view body);

// SGLang's GET /server_info (or /get_server_info, `route` as asked) body: the slots are
// `effective_max_running_requests_per_dp` (the first rank's; every rank shares one configuration)
// times the top-level `dp_size`; a server too old to state the effective cap gives its
// `max_running_requests` argument, taken only with one rank (with several, whether it is a rank's
// cap or the whole server's depends on the version). An error when neither is a positive integer.
Result<ServerSlots> parse_sglang_server_info(std::string_view body, std::string_view route);

}  // namespace mpo::engines
