// `modelperfobs simulate`: the HTTP shell around the engine (edge: Asio/Beast, one thread).
// Engine steps run on a timer in real time; each token is written to its stream when its step
// ends, so the simulator knows exactly when every token was emitted.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "sim/config.hpp"

namespace mpo::sim {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 8000;  // 0: any free port (printed on stdout)
  // SO_REUSEPORT: several simulators share one port and the kernel spreads the connections over
  // them (a benchmark's backend that one thread would limit: bench/proxy_scaling).
  bool reuse_port = false;
  std::uint64_t seed = 0;
  std::string truth_path;        // "" = no truth file
  double shutdown_grace_s = 10;  // SIGTERM: finish in-flight requests for at most this long
  // An idle kept-alive connection is closed this long after its last response ended, silently,
  // as uvicorn's `timeout_keep_alive` (vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE, default 5 s); 0:
  // closed as soon as the response ends. Applied before a connection's first request only when
  // imitating llama.cpp (llamacpp_head_and_timings), as its cpp-httplib does.
  double keep_alive_timeout_s = 5;
  // End streams as llama.cpp b10309 does: `[DONE]` and the chunked terminator in separate writes
  // (kLlamaCppTerminatorGap apart), then the connection closed (kLlamaCppCloseDelay later)
  // although the response head offers `Keep-Alive: timeout=5, max=100`.
  bool llamacpp_stream_end = false;
  // Stream as llama.cpp b10309 does before the end too: the response head when a slot starts the
  // request (so a request that waits for a slot waits for its head; measured against the real
  // server, issue 37), chat's role chunk with the first token, and its `timings` object at the end.
  bool llamacpp_head_and_timings = false;
  // Answer as vLLM does, but name the model list's owner "sglang" and describe the server as
  // SGLang's GET /server_info (and /get_server_info) does: the members a client reads of it.
  bool sglang_server_info = false;
  // With sglang_server_info: only the older route, GET /get_server_info (a 404 at /server_info), as
  // SGLang answered before it renamed it.
  bool sglang_legacy_route = false;
  // Engine spans shaped like vLLM's, one per client request, to this OTLP/HTTP traces URL (used
  // as it is, as vLLM's --otlp-traces-endpoint); "" = none. docs/OTEL.md "Engine spans".
  std::string otlp_traces_endpoint;
};

// Runs until SIGTERM/SIGINT. Prints "listening on http://HOST:PORT" on stdout once bound.
// Returns the process exit code; errors (bind failure, unwritable truth file) go to stderr.
int run_simulator(const Profile& profile, const ServerOptions& options);

}  // namespace mpo::sim
