// The load generator (edge: Asio, one thread). Sends a point's requests to an OpenAI-compatible
// server in the API it is told to speak (loadgen/api.hpp: chat, completions, responses, messages), closed loop (N
// workers, each sends its next request when the last one ends) or open loop (arrivals on a schedule: Poisson, gamma
// with burstiness, constant, or the recorded times of a replayed ledger or trace). A multi-turn workload's session
// (loadgen/conversation.hpp) is sent as one: its turns in order on one connection, each after the previous one
// ended and its think time passed, with X-Session-ID; a closed loop's N is then live sessions, an open loop's
// arrivals are sessions' first turns. It measures each one as fak's sample
// (docs/FAK.md 6.3, with TTFT at the first generated-content event of any kind) and as a ledger line. It measures
// itself too: when each request was due and when it was sent, and its own CPU time.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ledger/observation.hpp"
#include "loadgen/api.hpp"
#include "loadgen/load_mode.hpp"
#include "loadgen/sample.hpp"
#include "loadgen/shard.hpp"
#include "loadgen/workload.hpp"
#include "net/backend_url.hpp"

namespace mpo::loadgen {

struct Target {
  net::BackendUrl url;  // the OpenAI base URL, e.g. http://127.0.0.1:8000/v1
  std::string model;
  std::string api_key;      // sent as Authorization: Bearer when not empty
  std::string ca_file;      // extra CAs for https
  double timeout_s = 60;    // per request
  bool ignore_eos = false;  // ask for exactly max_tokens (vLLM/SGLang extension)
  Api api = Api::kChat;     // the API spoken (--api)
  std::string run_id;       // written as the ledger lines' proxy_instance ("sweep:<id>")
  // A conversation's turns after the first continue the previous turn's response
  // (`previous_response_id`, --api responses): each sends only what is new since it, and the server
  // holds the conversation. A turn whose previous turn has no response id is sent whole.
  bool chain_responses = false;
};

enum class Arrival { kPoisson, kGamma, kConstant, kRecorded };

struct PointPlan {
  LoadMode mode = LoadMode::kConcurrency;
  double coordinate = 1;  // concurrency, or offered rate (req/s)
  Arrival arrival = Arrival::kPoisson;
  double burstiness = 1;  // gamma shape; 1 is Poisson
  double speed = 1;       // recorded arrivals: played this many times faster
  std::uint64_t seed = 1;
  std::vector<ServingRequest> requests;  // warm-up requests first
  std::size_t warmup = 0;
  double duration_s = 0;  // closed loop: > 0 sends the measured requests in a cycle
                          // until this long after the first measured one was sent
  std::string label;      // "concurrency=8": the ledger lines' sweep_point
  Shard shard;            // open loop: only this shard's arrivals are sent (loadgen/shard.hpp)
};

struct PointRun {
  std::vector<Sample> samples;  // in the order requests were due
  double cpu_seconds = 0;       // the generator thread's CPU time over the point
  double wall_seconds = 0;
  std::int64_t started_at_us = 0, ended_at_us = 0;  // wall clock
  std::int64_t started_steady_us = 0;
};

class Driver {
 public:
  // `on_observation` gets each request's ledger line as it ends; `on_progress` (done, total).
  Driver(Target target, std::function<void(const ledger::Observation&)> on_observation,
         std::function<void(std::size_t, std::size_t)> on_progress);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  boost::asio::awaitable<PointRun> run_point(const PointPlan& plan);
  // Ctrl-C, from the driver's own loop: stop_sending() sends no further request of the point (its
  // in-flight ones run on); abandon() also closes every in-flight request's connection now (each
  // is recorded as failed, "interrupted"). Both hold until the next run_point().
  void stop_sending();
  void abandon();
  // GET base + path (e.g. "/models"): the status and body, for the engine identity.
  boost::asio::awaitable<std::pair<int, std::string>> get(std::string path);
  // GET or POST (empty body) on the server's origin, not under the base path: engines' admin routes
  // such as vLLM's /reset_prefix_cache or llama.cpp's /slots.
  boost::asio::awaitable<std::pair<int, std::string>> get_admin(std::string path);
  boost::asio::awaitable<std::pair<int, std::string>> post_admin(std::string path);
  // POST a JSON body on the server's origin (llama.cpp's /tokenize, /apply-template; vLLM's /tokenize).
  boost::asio::awaitable<std::pair<int, std::string>> post_json_admin(std::string path, std::string body);

 private:
  struct Impl;
  boost::asio::awaitable<std::pair<int, std::string>> simple(bool post, std::string path, bool origin,
                                                             std::string body = {});
  std::unique_ptr<Impl> impl_;
};

// Arrival offsets in seconds from the start of an open-loop point (pure; seeded).
std::vector<double> arrival_offsets(const PointPlan& plan);

}  // namespace mpo::loadgen
