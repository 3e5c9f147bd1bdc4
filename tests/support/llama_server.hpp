// The real llama.cpp server (`llama-server`, build b10309) with a tiny random-weight model, for
// tests against a real engine. Found through MPO_LLAMA_SERVER and MPO_LLAMA_MODEL, which `.ci/run`
// sets when ../shared/engines/llamacpp has them; tests skip with a message where they are unset,
// so a user's clone needs nothing from outside it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/process.hpp"

namespace mpo::test {

class LlamaServer {
 public:
  // Why the server cannot be started here (variables unset, files missing), or nullopt.
  // `model_variable`: the environment variable naming the model (MPO_LLAMA_SMALL_MODEL: the slower
  // model, for tests whose verdicts need the engine's timing to mean something).
  static std::optional<std::string> unavailable(const char* model_variable = "MPO_LLAMA_MODEL");

  // Starts it on a free loopback port with 4 slots and /metrics, serving the model as
  // `real-llama`; returns once GET /health answers 200. Its log goes to `log_path`; `extra_args`
  // are added to its command line (e.g. --slot-save-path DIR).
  explicit LlamaServer(const std::string& log_path, std::vector<std::string> extra_args = {},
                       const char* model_variable = "MPO_LLAMA_MODEL");
  std::uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace mpo::test
