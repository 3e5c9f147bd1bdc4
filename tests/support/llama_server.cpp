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

std::vector<std::string> command(std::uint16_t port, const std::string& log_path, const char* model_variable) {
  // Through sh only to send its output to a file: a pipe nobody reads would fill and stall it.
  return {"/bin/sh",
          "-c",
          "exec \"$0\" \"$@\" >>'" + log_path + "' 2>&1",
          env("MPO_LLAMA_SERVER"),
          "-m",
          env(model_variable),
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

std::optional<std::string> LlamaServer::unavailable(const char* model_variable) {
  const std::string server = env("MPO_LLAMA_SERVER"), model = env(model_variable);
  if (server.empty() || model.empty()) {
    return "MPO_LLAMA_SERVER and " + std::string(model_variable) +
           " are not set (.ci/run sets them when ../shared/engines/llamacpp has llama-server and its models): "
           "skipped";
  }
  if (access(server.c_str(), X_OK) != 0) return "MPO_LLAMA_SERVER=" + server + " is not an executable file: skipped";
  if (access(model.c_str(), R_OK) != 0) {
    return std::string(model_variable) + "=" + model + " is not a readable file: skipped";
  }
  return std::nullopt;
}

LlamaServer::LlamaServer(const std::string& log_path, std::vector<std::string> extra_args, const char* model_variable) {
  // The port was free a moment ago; in a parallel test run another server may take it first, so
  // readiness means /health answering 200 *from llama.cpp* (its Server header), and a port lost to
  // another process is given up for a new one. llama-server prints no readiness line on stdout:
  // poll every 20 ms, at most 60 s per try.
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = free_loopback_port();
    auto cmd = command(port_, log_path, model_variable);
    cmd.insert(cmd.end(), extra_args.begin(), extra_args.end());
    process_ = std::make_unique<ChildProcess>(cmd);
    for (int i = 0; i < 3000; ++i) {
      if (is_listening(port_)) {
        const auto health = http_get(port_, "/health");
        const auto server = health.headers.find("server");
        const bool llama = server != health.headers.end() && server->second == "llama.cpp";
        if (health.status != 0 && !llama) break;  // someone else answers on this port
        if (health.status == 200) return;
      }
      pollfd none{-1, 0, 0};
      poll(&none, 0, 20);
    }
    process_.reset();
  }
  throw std::runtime_error("llama-server did not become ready on a port of its own; its log: " + log_path);
}

}  // namespace mpo::test
