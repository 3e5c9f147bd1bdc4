#include "support/llama_server.hpp"

#include <poll.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "support/http_client.hpp"

namespace mpo::test {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

std::vector<std::string> command(std::uint16_t port, const std::string& log_path) {
  // Through sh only to send its output to a file: a pipe nobody reads would fill and stall it.
  return {"/bin/sh",
          "-c",
          "exec \"$0\" \"$@\" >>'" + log_path + "' 2>&1",
          env("MPO_LLAMA_SERVER"),
          "-m",
          env("MPO_LLAMA_MODEL"),
          "--host",
          "127.0.0.1",
          "--port",
          std::to_string(port),
          "-c",
          "4096",
          "-np",
          "4",
          "-t",
          "1",
          "--metrics",
          "--alias",
          "real-llama",
          "--no-ui"};
}

}  // namespace

std::optional<std::string> LlamaServer::unavailable() {
  const std::string server = env("MPO_LLAMA_SERVER"), model = env("MPO_LLAMA_MODEL");
  if (server.empty() || model.empty()) {
    return std::string(
        "MPO_LLAMA_SERVER and MPO_LLAMA_MODEL are not set (.ci/run sets them when "
        "../shared/engines/llamacpp has llama-server and its model): skipped");
  }
  if (access(server.c_str(), X_OK) != 0) return "MPO_LLAMA_SERVER=" + server + " is not an executable file: skipped";
  if (access(model.c_str(), R_OK) != 0) return "MPO_LLAMA_MODEL=" + model + " is not a readable file: skipped";
  return std::nullopt;
}

LlamaServer::LlamaServer(const std::string& log_path)
    : port_(free_loopback_port()), process_(command(port_, log_path)) {
  // llama-server prints no readiness line of its own on stdout: poll /health (200 once the model
  // is loaded) every 20 ms, for at most 60 s.
  for (int i = 0; i < 3000; ++i) {
    if (is_listening(port_) && http_get(port_, "/health").status == 200) return;
    pollfd none{-1, 0, 0};
    poll(&none, 0, 20);
  }
  throw std::runtime_error("llama-server did not become ready within 60 s; its log: " + log_path);
}

}  // namespace mpo::test
