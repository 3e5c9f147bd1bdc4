// `modelperfobs simulate`: its flags, the profile and scenario read, then the simulator's server.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/files.hpp"
#include "cli/number_checks.hpp"
#include "core/host_port.hpp"
#include "sim/config.hpp"
#include "sim/server.hpp"

namespace mpo::cli {
namespace {

struct SimulateArgs {
  std::string listen = "127.0.0.1:8000";
  std::string model;
  std::string profile_path;
  std::uint64_t seed = 42;
  std::string truth_path;
  std::string otlp_traces_endpoint;
  int tokens_per_chunk = 0;
  bool reasoning = false;
  std::string stream_end = "vllm";
  std::string imitate = "vllm";
  bool reuse_port = false;
  double keep_alive_timeout_s = 5;
};

int run_simulate(const SimulateArgs& a) {
  auto addr = parse_host_port(a.listen);
  if (!addr) {
    std::cerr << "modelperfobs simulate: --listen: " << addr.error().message << "\n";
    return 2;
  }
  sim::Profile profile;
  if (!a.profile_path.empty()) {
    auto parsed = read_parsed_file(a.profile_path, "simulate", sim::parse_profile);
    if (!parsed) return 2;
    profile = std::move(*parsed);
  }
  if (!a.model.empty()) profile.model = a.model;
  if (a.tokens_per_chunk > 0) profile.output.tokens_per_chunk = a.tokens_per_chunk;
  if (a.reasoning) profile.output.reasoning = true;
  sim::ServerOptions opts;
  opts.host = addr->host;
  opts.port = addr->port;
  opts.reuse_port = a.reuse_port;
  opts.keep_alive_timeout_s = a.keep_alive_timeout_s;
  opts.seed = a.seed;
  opts.truth_path = a.truth_path;
  opts.otlp_traces_endpoint = a.otlp_traces_endpoint;
  opts.llamacpp_head_and_timings = a.imitate == "llamacpp";
  opts.sglang_server_info = a.imitate == "sglang" || a.imitate == "sglang-legacy";
  opts.sglang_legacy_route = a.imitate == "sglang-legacy";
  opts.llamacpp_stream_end = a.stream_end == "llamacpp" || opts.llamacpp_head_and_timings;
  return sim::run_simulator(profile, opts);
}

}  // namespace

std::function<int()> setup_simulate(CLI::App& app) {
  auto args = std::make_shared<SimulateArgs>();
  app.add_option("--listen", args->listen, "HOST:PORT to listen on; port 0 picks a free port (printed)")
      ->capture_default_str();
  app.add_flag("--reuse-port", args->reuse_port,
               "share the --listen port with other simulators started with this flag (SO_REUSEPORT): the kernel "
               "spreads connections over them, a backend for more load than one thread serves");
  app.add_option("--keep-alive-timeout", args->keep_alive_timeout_s,
                 "seconds an idle kept-alive connection stays open after its last response before the simulator "
                 "closes it without a word, as vLLM's and SGLang's uvicorn (VLLM_HTTP_TIMEOUT_KEEP_ALIVE) and "
                 "llama.cpp do; 0: closed as each response ends")
      ->capture_default_str()
      ->check(non_negative_number());
  app.add_option("--model", args->model, "served model name (default: the profile's, else sim-model)");
  app.add_option("--profile", args->profile_path,
                 "JSON profile: engine, output and scenario parameters (docs/SIMULATOR.md)")
      ->check(CLI::ExistingFile);
  app.add_option("--seed", args->seed, "seed of every random choice; same seed, same outputs")->capture_default_str();
  app.add_option("--truth", args->truth_path, "append one JSONL line of engine truth per finished request");
  app.add_option("--otlp-traces-endpoint", args->otlp_traces_endpoint,
                 "OTLP/HTTP traces URL (e.g. http://127.0.0.1:4318/v1/traces, used as it is, as vLLM's flag): one "
                 "span per request shaped like vLLM's (llm_request: queue, prefill, decode, e2e), a child of the "
                 "request's traceparent (docs/OTEL.md)");
  app.add_option("--tokens-per-chunk", args->tokens_per_chunk, "tokens per SSE event (imitates servers that coalesce)")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--reasoning", args->reasoning, "stream delta.reasoning_content before content (a reasoning model)");
  app.add_option("--stream-end", args->stream_end,
                 "how a streamed response ends: vllm (last events and the chunked terminator together, connection "
                 "kept); llamacpp (as llama.cpp b10309: the terminator in a later write, 5 ms after [DONE], then the "
                 "connection closed 2 ms later although the head offers 'Keep-Alive: timeout=5, max=100')")
      ->check(CLI::IsMember({"vllm", "llamacpp"}))
      ->capture_default_str();
  app.add_option("--imitate", args->imitate,
                 "whose answers to imitate: vllm (the head on accept, chat's role chunk with it); llamacpp (as "
                 "llama.cpp b10309: the head when a slot starts the request, its chunks, bodies and Responses and "
                 "Messages events, a `timings` object at the end, any model name answered, and --stream-end "
                 "llamacpp); sglang (as vllm, but its model list owned by sglang and SGLang's GET /server_info, "
                 "/get_server_info, stating the profile's max_num_seqs as its running-request cap); sglang-legacy (as "
                 "sglang, but only the older route /get_server_info, a 404 at /server_info)")
      ->check(CLI::IsMember({"vllm", "llamacpp", "sglang", "sglang-legacy"}))
      ->capture_default_str();
  return [args] { return run_simulate(*args); };
}

}  // namespace mpo::cli
