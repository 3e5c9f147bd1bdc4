// A continuous-batching engine modelled on vLLM V1's scheduler, in virtual time (pure: no clock,
// no I/O). The caller asks for one step at a time; a step schedules running requests first
// (preempting from the back of the running list when KV blocks run out), then admits waiting ones
// (FCFS, prefix-cache lookup, chunked prefill within the token budget), and takes
// t = a + b*prefill_tokens + c*decode_seqs seconds. Tokens sampled in a step are emitted at its end.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.hpp"
#include "sim/block_pool.hpp"
#include "sim/config.hpp"
#include "sim/engine_stats.hpp"
#include "sim/tokens.hpp"

namespace mpo::sim {

using RequestId = std::uint64_t;

struct RequestSpec {
  std::vector<TokenId> prompt;
  std::optional<int> max_tokens;  // absent: until EOS or max_model_len
  bool ignore_eos = false;
  int natural_tokens = 64;        // where the model "samples EOS" (see natural_length())
  std::vector<std::string> stop;  // stop strings, matched in the generated text
  std::uint64_t seed = 0;         // output text seed
  bool background = false;        // scenario traffic (counted like any client's)
  double defer_s = 0;             // held in the waiting queue with reason "deferred"
};

// One step's visible output for one request.
struct Emission {
  RequestId id = 0;
  int index = 0;  // 0-based index of the generated token
  TokenId token = 0;
  std::string text;                    // text made visible by this token (stop strings held back)
  std::optional<FinishReason> finish;  // set on the request's last emission
};

struct FinishedRequest {
  RequestId id = 0;
  FinishReason reason = FinishReason::kStop;
  bool background = false;
  double arrival_s = 0;
  std::optional<double> scheduled_s;  // first scheduled
  std::optional<double> first_token_s;
  std::optional<double> last_token_s;
  double finished_s = 0;
  int prompt_tokens = 0;
  int cached_prompt_tokens = 0;
  int completion_tokens = 0;
  int preemptions = 0;
};

struct StepResult {
  double start_s = 0;
  double end_s = 0;
  int scheduled_tokens = 0;  // 0: nothing could run; do not step again until something changes
  int prefill_tokens = 0;
  int decode_seqs = 0;
  std::vector<Emission> emissions;
  std::vector<FinishedRequest> finished;
};

// The natural output length of a request seeded with `seed`: uniform in [min, max].
int natural_length(const OutputConfig& c, std::uint64_t seed);

class Engine {
 public:
  explicit Engine(EngineConfig config);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request arriving at `now_s`. Errors: empty prompt, prompt >= max_model_len,
  // max_tokens < 1 (messages as vLLM words them).
  Result<RequestId> add_request(RequestSpec spec, double now_s);
  // Removes a request wherever it is, frees its blocks, counts finished_reason="abort".
  // nullopt if it already finished (or never existed).
  std::optional<FinishedRequest> abort(RequestId id, double now_s);

  // True if a step at `now_s` could schedule something.
  bool has_work(double now_s) const;
  // When a deferred request becomes schedulable, if any is waiting.
  std::optional<double> next_deferred_ready_s() const;
  StepResult step(double now_s);

  void set_max_num_seqs(int n) { max_num_seqs_ = n; }
  int max_num_seqs() const { return max_num_seqs_; }
  // Takes blocks away from the pool (another tenant): up to what is free now, more as it frees.
  void set_reserved_blocks(int n);
  int reserved_blocks() const { return static_cast<int>(reserved_.size()); }
  int reset_prefix_cache() { return pool_.reset_prefix_cache(); }

  int num_running() const { return static_cast<int>(running_.size()); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int num_waiting_deferred(double now_s) const;
  double kv_cache_usage() const { return pool_.usage(); }
  int num_free_blocks() const { return pool_.num_free(); }
  std::size_t num_active() const { return requests_.size(); }
  // The prefix-cache hit of a request once it was first scheduled; nullopt before, or when it is
  // not active.
  std::optional<int> cached_prompt_tokens(RequestId id) const;
  const EngineStats& stats() const { return stats_; }
  const EngineConfig& config() const { return config_; }

 private:
  struct Request;
  bool try_admit(Request& r, int& budget, std::vector<std::pair<Request*, int>>& scheduled);
  bool allocate_for(Request& r, int num_new);
  void preempt(Request& r);
  void extend_hashes(Request& r);
  void adjust_reservation();
  void emit_token(Request& r, double t, StepResult& out);
  void count_speculation(Request& r, int index);
  FinishedRequest finish(Request& r, FinishReason reason, double t);

  EngineConfig config_;
  BlockPool pool_;
  int max_num_seqs_;
  std::size_t reserve_target_ = 0;
  std::vector<BlockId> reserved_;
  RequestId next_id_ = 1;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::vector<Request*> running_;
  std::deque<Request*> waiting_;
  EngineStats stats_;
};

}  // namespace mpo::sim
