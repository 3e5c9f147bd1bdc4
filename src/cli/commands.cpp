#include "cli/commands.hpp"

#include <array>

namespace mpo::cli {

std::span<const Command> commands() {
  static const std::array<Command, 1> kCommands = {{
      {"simulate", "vLLM-compatible engine simulator: OpenAI API, SSE streams, real vLLM /metrics",
       setup_simulate},
  }};
  return kCommands;
}

}  // namespace mpo::cli
