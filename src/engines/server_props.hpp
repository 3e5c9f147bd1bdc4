// What a server says of its own batch capacity on a route beside its API (pure). llama.cpp's
// `GET /props` (b10309; tools/server/README.md, "GET /props") states `total_slots`, the requests it
// decodes at once (`--parallel`/`-np`), beside `build_info` and each slot's context
// (`default_generation_settings.n_ctx`). A sweep takes that as its batch capacity where none was
// declared, the server's own word as its source.
#pragma once

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
};

// llama.cpp's GET /props body; an error when it is not a JSON object with a positive integer
// `total_slots` (another server's page, an error page, a reverse proxy's 404).
Result<ServerSlots> parse_llamacpp_props(std::string_view body);

}  // namespace mpo::engines
