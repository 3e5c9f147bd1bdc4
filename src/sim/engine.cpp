// The implementation of sim/engine.hpp. A continuous-batching engine modelled on vLLM V1's
// scheduler, in virtual time (pure: no clock, no I/O).
#include "sim/engine.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace mpo::sim {

struct Engine::Request {
  RequestId id = 0;
  RequestSpec spec;
  std::vector<TokenId> tokens;  // prompt, then generated tokens
  int prompt_len = 0;
  int target_out = 0;  // output length at which the request ends
  FinishReason target_reason = FinishReason::kLength;
  int num_computed = 0;  // tokens whose KV is computed
  std::vector<BlockId> blocks;
  std::vector<BlockHash> hashes;  // chained hashes of the full blocks of `tokens`
  int cached_tokens = -1;         // prefix-cache hit at first scheduling; -1 before
  int preemptions = 0;
  double arrival_s = 0;
  double deferred_until_s = 0;
  std::optional<double> scheduled_s, first_token_s, last_token_s;
  std::string text;      // generated text (only kept when stop strings are set)
  std::size_t sent = 0;  // chars of `text` already emitted
  std::size_t max_stop_len = 0;
  int round_left = 0;  // speculative decoding: tokens the current verification round still yields
  int round_pos = 0;   // draft position of the next token of the round

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  int num_output() const { return num_tokens() - prompt_len; }
};

int natural_length(const OutputConfig& c, std::uint64_t seed) {
  const auto span = static_cast<std::uint64_t>(c.natural_max_tokens - c.natural_min_tokens + 1);
  return c.natural_min_tokens + static_cast<int>(mix64(seed ^ 0x5eedULL) % span);
}

Engine::Engine(EngineConfig config)
    : config_(config),
      pool_(config.num_gpu_blocks, config.enable_prefix_caching),
      max_num_seqs_(config.max_num_seqs),
      stats_(config.max_model_len) {
  stats_.spec_accepted_per_pos.assign(static_cast<std::size_t>(config.num_speculative_tokens), 0);
}

Engine::~Engine() = default;

Result<RequestId> Engine::add_request(RequestSpec spec, double now_s) {
  const int prompt_len = static_cast<int>(spec.prompt.size());
  if (prompt_len == 0) return make_error(errc::kSimEmptyPrompt, "The prompt must not be empty.");
  if (prompt_len >= config_.max_model_len) {
    return make_error(errc::kSimContextLength,
                      fmt::format("This model's maximum context length is {} tokens. However, your request has "
                                  "{} input tokens. Please reduce the length of the input messages.",
                                  config_.max_model_len, prompt_len));
  }
  if (spec.max_tokens && *spec.max_tokens < 1) {
    return make_error(errc::kSimMaxTokens, fmt::format("max_tokens must be at least 1, got {}.", *spec.max_tokens));
  }
  auto r = std::make_unique<Request>();
  r->id = next_id_++;
  r->prompt_len = prompt_len;
  const int room = config_.max_model_len - prompt_len;
  const int max_out = spec.max_tokens ? std::min(*spec.max_tokens, room) : room;
  if (!spec.ignore_eos && spec.natural_tokens >= 1 && spec.natural_tokens < max_out) {
    r->target_out = spec.natural_tokens;
    r->target_reason = FinishReason::kStop;
  } else {
    r->target_out = max_out;
    r->target_reason = FinishReason::kLength;
  }
  r->tokens = spec.prompt;
  r->arrival_s = now_s;
  r->deferred_until_s = now_s + spec.defer_s;
  for (const auto& s : spec.stop) r->max_stop_len = std::max(r->max_stop_len, s.size());
  std::erase_if(spec.stop, [](const std::string& s) { return s.empty(); });
  r->spec = std::move(spec);
  r->spec.prompt.clear();
  r->spec.prompt.shrink_to_fit();
  extend_hashes(*r);
  const RequestId id = r->id;
  waiting_.push_back(r.get());
  requests_.emplace(id, std::move(r));
  return id;
}

void Engine::extend_hashes(Request& r) {
  const auto bs = static_cast<std::size_t>(config_.block_size);
  while ((r.hashes.size() + 1) * bs <= r.tokens.size()) {
    const std::size_t i = r.hashes.size();
    const BlockHash parent = i == 0 ? 0 : r.hashes[i - 1];
    r.hashes.push_back(hash_block(parent, std::span(r.tokens).subspan(i * bs, bs)));
  }
}

std::optional<FinishedRequest> Engine::abort(RequestId id, double now_s) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  Request* r = it->second.get();
  std::erase(running_, r);
  std::erase(waiting_, r);
  return finish(*r, FinishReason::kAbort, now_s);
}

bool Engine::has_work(double now_s) const {
  if (!running_.empty()) return true;
  if (static_cast<int>(running_.size()) >= max_num_seqs_) return false;
  return std::any_of(waiting_.begin(), waiting_.end(),
                     [now_s](const Request* r) { return r->deferred_until_s <= now_s; });
}

std::optional<double> Engine::next_deferred_ready_s() const {
  std::optional<double> t;
  for (const Request* r : waiting_) {
    if (!t || r->deferred_until_s < *t) t = r->deferred_until_s;
  }
  return t;
}

int Engine::num_waiting_deferred(double now_s) const {
  return static_cast<int>(std::count_if(waiting_.begin(), waiting_.end(),
                                        [now_s](const Request* r) { return r->deferred_until_s > now_s; }));
}

void Engine::set_reserved_blocks(int n) {
  // Never take so much that one max_model_len request could not fit.
  const int per_request = (config_.max_model_len + config_.block_size - 1) / config_.block_size;
  reserve_target_ = static_cast<std::size_t>(std::clamp(n, 0, config_.num_gpu_blocks - per_request));
  adjust_reservation();
}

void Engine::adjust_reservation() {
  if (reserved_.size() > reserve_target_) {
    const auto extra = std::span(reserved_).subspan(reserve_target_);
    pool_.release(extra);
    reserved_.resize(reserve_target_);
  } else if (reserved_.size() < reserve_target_) {
    const int want = static_cast<int>(reserve_target_ - reserved_.size());
    const auto got = pool_.allocate(std::min(want, pool_.num_free()));
    reserved_.insert(reserved_.end(), got.begin(), got.end());
  }
}

bool Engine::allocate_for(Request& r, int num_new) {
  const int bs = config_.block_size;
  const int need = (r.num_computed + num_new + bs - 1) / bs - static_cast<int>(r.blocks.size());
  if (need <= 0) return true;
  if (need > pool_.num_free()) return false;
  const auto got = pool_.allocate(need);
  r.blocks.insert(r.blocks.end(), got.begin(), got.end());
  return true;
}

void Engine::preempt(Request& r) {
  pool_.release(r.blocks);
  r.blocks.clear();
  r.num_computed = 0;
  ++r.preemptions;
  ++stats_.preemptions;
  waiting_.push_front(&r);
}

bool Engine::try_admit(Request& r, int& budget, std::vector<std::pair<Request*, int>>& scheduled) {
  const int bs = config_.block_size;
  std::vector<BlockId> hits;
  if (config_.enable_prefix_caching) {
    // At least one token must be computed to sample from, so the last full block of a prompt
    // that is an exact multiple of the block size is never a hit.
    const auto usable = static_cast<std::size_t>((r.num_tokens() - 1) / bs);
    hits = pool_.lookup(std::span(r.hashes).first(std::min(usable, r.hashes.size())));
  }
  const int cached = static_cast<int>(hits.size()) * bs;
  const int num_new = std::min(r.num_tokens() - cached, budget);
  const int need = (cached + num_new + bs - 1) / bs - static_cast<int>(hits.size());
  if (need > pool_.num_free() - pool_.count_free(hits)) return false;
  if (config_.enable_prefix_caching) {
    stats_.prefix_cache_queries += static_cast<std::uint64_t>(r.num_tokens());
    stats_.prefix_cache_hits += static_cast<std::uint64_t>(cached);
  }
  pool_.touch(hits);
  r.blocks = std::move(hits);
  r.num_computed = cached;
  if (r.cached_tokens < 0) r.cached_tokens = cached;
  const bool ok = allocate_for(r, num_new);
  (void)ok;  // guaranteed by the check above
  budget -= num_new;
  scheduled.emplace_back(&r, num_new);
  return true;
}

std::optional<int> Engine::cached_prompt_tokens(RequestId id) const {
  const auto it = requests_.find(id);
  if (it == requests_.end() || it->second->cached_tokens < 0) return std::nullopt;
  return it->second->cached_tokens;
}

StepResult Engine::step(double now_s) {
  StepResult out;
  out.start_s = out.end_s = now_s;
  adjust_reservation();
  int budget = config_.max_num_batched_tokens;
  std::vector<std::pair<Request*, int>> scheduled;
  bool preempted_any = false;

  // 1. Running requests, in order; preempt from the back when blocks run out.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    Request& r = *running_[i];
    const int num_new = std::min(r.num_tokens() - r.num_computed, budget);
    if (num_new <= 0) {
      ++i;
      continue;
    }
    bool can = true;
    while (!allocate_for(r, num_new)) {
      Request* victim = running_.back();
      running_.pop_back();
      preempt(*victim);
      preempted_any = true;
      if (victim == &r) {
        can = false;
        break;
      }
    }
    if (!can) break;
    budget -= num_new;
    scheduled.emplace_back(&r, num_new);
    ++i;
  }

  // 2. Waiting requests, FCFS, only if nothing was preempted in this step (as vLLM V1).
  if (!preempted_any) {
    for (std::size_t i = 0; i < waiting_.size() && budget > 0 && static_cast<int>(running_.size()) < max_num_seqs_;) {
      Request& r = *waiting_[i];
      if (r.deferred_until_s > now_s) {
        ++i;  // deferred: skipped, keeps its place
        continue;
      }
      if (!try_admit(r, budget, scheduled)) break;  // capacity: the queue waits
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      running_.push_back(&r);
      if (!r.scheduled_s) r.scheduled_s = now_s;
    }
  }

  if (scheduled.empty()) return out;
  for (const auto& [r, n] : scheduled) {
    out.scheduled_tokens += n;
    if (n == 1 && r->num_computed >= r->prompt_len) {
      ++out.decode_seqs;
    } else {
      out.prefill_tokens += n;
    }
  }
  out.end_s = now_s + config_.step_base_s + config_.step_per_prefill_token_s * out.prefill_tokens +
              config_.step_per_decode_seq_s * out.decode_seqs;
  ++stats_.steps;
  stats_.iteration_tokens.observe(out.scheduled_tokens);

  // 3. Apply the step: KV computed, full blocks cached, tokens sampled at the step's end.
  const int bs = config_.block_size;
  for (const auto& [r, n] : scheduled) {
    r->num_computed += n;
    const auto full = static_cast<std::size_t>(r->num_computed / bs);
    for (std::size_t b = 0; b < full && b < r->blocks.size() && b < r->hashes.size(); ++b) {
      pool_.cache(r->blocks[b], r->hashes[b]);
    }
    if (r->num_computed >= r->num_tokens()) emit_token(*r, out.end_s, out);
  }
  return out;
}

// A token after the first either opens a verification round (a draft of k tokens is checked; the
// round yields its own token plus the accepted prefix of the draft) or is an accepted draft token.
void Engine::count_speculation(Request& r, int index) {
  const int k = config_.num_speculative_tokens;
  if (k <= 0) return;
  if (r.round_left > 0) {
    --r.round_left;
    ++stats_.spec_accepted_tokens;
    ++stats_.spec_accepted_per_pos[static_cast<std::size_t>(r.round_pos++)];
    return;
  }
  ++stats_.spec_drafts;
  stats_.spec_draft_tokens += static_cast<std::uint64_t>(k);
  int accepted = 0;
  for (int pos = 0; pos < k; ++pos) {
    const std::uint64_t x = mix64(r.spec.seed ^ (static_cast<std::uint64_t>(index) * 0x9e3779b97f4a7c15ULL) ^
                                  (static_cast<std::uint64_t>(pos + 1) * 0xc2b2ae3d27d4eb4fULL));
    const double u = static_cast<double>(x >> 11) * 0x1.0p-53;  // uniform in [0, 1)
    if (u >= config_.spec_acceptance) break;
    ++accepted;
  }
  r.round_left = accepted;
  r.round_pos = 0;
}

void Engine::emit_token(Request& r, double t, StepResult& out) {
  const int index = r.num_output();
  const TokenId tok = sample_token(r.spec.seed, static_cast<std::uint64_t>(index));
  r.tokens.push_back(tok);
  extend_hashes(r);
  ++stats_.generation_tokens;
  if (!r.first_token_s) {
    r.first_token_s = t;
    stats_.time_to_first_token.observe(t - r.arrival_s);
    stats_.prompt_tokens += static_cast<std::uint64_t>(r.prompt_len);
    stats_.prompt_tokens_cached += static_cast<std::uint64_t>(r.cached_tokens);
    stats_.prompt_tokens_computed += static_cast<std::uint64_t>(r.prompt_len - r.cached_tokens);
  } else {
    stats_.inter_token_latency.observe(t - *r.last_token_s);
    count_speculation(r, index);
  }
  r.last_token_s = t;

  Emission e;
  e.id = r.id;
  e.index = index;
  e.token = tok;
  std::optional<FinishReason> reason;
  if (r.num_output() >= r.target_out) reason = r.target_reason;
  if (r.spec.stop.empty()) {
    e.text = token_text(tok);
  } else {
    // Hold back the last max_stop_len-1 characters: they may begin a stop string.
    r.text += token_text(tok);
    const std::size_t from = r.sent >= r.max_stop_len ? r.sent - r.max_stop_len : 0;
    std::size_t cut = std::string::npos;
    for (const auto& s : r.spec.stop) cut = std::min(cut, r.text.find(s, from));
    std::size_t end = 0;
    if (cut != std::string::npos) {
      end = std::max(cut, r.sent);
      reason = FinishReason::kStop;
    } else if (reason) {
      end = r.text.size();
    } else {
      end = r.text.size() >= r.max_stop_len - 1 ? r.text.size() - (r.max_stop_len - 1) : 0;
      end = std::max(end, r.sent);
    }
    e.text = r.text.substr(r.sent, end - r.sent);
    r.sent = end;
  }
  if (!reason && r.num_tokens() >= config_.max_model_len) reason = FinishReason::kLength;
  e.finish = reason;
  out.emissions.push_back(std::move(e));
  if (reason) {
    std::erase(running_, &r);
    out.finished.push_back(finish(r, *reason, t));
  }
}

FinishedRequest Engine::finish(Request& r, FinishReason reason, double t) {
  pool_.release(r.blocks);
  r.blocks.clear();
  FinishedRequest f;
  f.id = r.id;
  f.reason = reason;
  f.background = r.spec.background;
  f.arrival_s = r.arrival_s;
  f.scheduled_s = r.scheduled_s;
  f.first_token_s = r.first_token_s;
  f.last_token_s = r.last_token_s;
  f.finished_s = t;
  f.prompt_tokens = r.prompt_len;
  f.cached_prompt_tokens = std::max(r.cached_tokens, 0);
  f.completion_tokens = r.num_output();
  f.preemptions = r.preemptions;

  ++stats_.finished[static_cast<std::size_t>(reason)];
  if (reason != FinishReason::kAbort && r.scheduled_s && r.first_token_s) {
    const double first = *r.first_token_s;
    const double last = *r.last_token_s;
    stats_.e2e_request_latency.observe(t - r.arrival_s);
    stats_.request_queue_time.observe(*r.scheduled_s - r.arrival_s);
    stats_.request_prefill_time.observe(first - *r.scheduled_s);
    stats_.request_decode_time.observe(last - first);
    stats_.request_inference_time.observe(last - *r.scheduled_s);
    stats_.request_prompt_tokens.observe(r.prompt_len);
    stats_.request_generation_tokens.observe(f.completion_tokens);
    stats_.request_prefill_kv_computed_tokens.observe(r.prompt_len - f.cached_prompt_tokens);
    stats_.request_params_n.observe(1);
    const double max_tokens = r.spec.max_tokens ? *r.spec.max_tokens : config_.max_model_len - r.prompt_len;
    stats_.request_max_num_generation_tokens.observe(max_tokens);
    stats_.request_params_max_tokens.observe(max_tokens);
    if (f.completion_tokens > 1) {
      stats_.request_time_per_output_token.observe((last - first) / (f.completion_tokens - 1));
    }
  }
  requests_.erase(r.id);  // destroys r
  return f;
}

}  // namespace mpo::sim
