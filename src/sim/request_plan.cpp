// The implementation of sim/request_plan.hpp. The pure half of the simulator's completion handler:
// from a parsed request, the profile, the scenario's fault draw and the server seed, what the
// engine is asked to do (the RequestSpec), how many tokens the response will carry, where a
// 'truncate' fault cuts the stream, and how many of the tokens are reasoning.
#include "sim/request_plan.hpp"

#include <algorithm>

#include "sim/tokens.hpp"

namespace mpo::sim {

RequestPlan plan_request(const CompletionRequest& req, const Profile& profile, Fault fault, std::uint64_t server_seed,
                         int choice) {
  RequestPlan p;
  const int prompt_len = static_cast<int>(req.prompt.size());
  std::uint64_t prompt_hash = 0x9e37ULL;
  for (TokenId t : req.prompt) prompt_hash = mix64(prompt_hash ^ t);
  RequestSpec& spec = p.spec;
  spec.prompt = req.prompt;
  spec.max_tokens = req.max_tokens;
  spec.ignore_eos = req.ignore_eos;
  spec.stop = req.stop;
  // Same server seed, same prompt, same request seed: the same output.
  spec.seed = mix64(server_seed ^ prompt_hash ^ (req.seed ? mix64(*req.seed + 1) : 0));
  if (choice > 0) spec.seed = mix64(spec.seed ^ mix64(0xc401ceULL + static_cast<std::uint64_t>(choice)));
  spec.natural_tokens = natural_length(profile.output, spec.seed);
  if (fault == Fault::kStall) spec.defer_s = profile.faults.stall_s;
  const int room = profile.engine.max_model_len - prompt_len;
  p.expected_tokens = spec.ignore_eos ? std::min(req.max_tokens.value_or(room), room)
                                      : std::min({spec.natural_tokens, req.max_tokens.value_or(room), room});
  if (fault == Fault::kTruncate) p.truncate_after = std::max(1, p.expected_tokens / 2);
  if (profile.output.reasoning && req.endpoint != Endpoint::kCompletions && !req.tool_name) {
    p.reasoning_tokens = static_cast<int>(profile.output.reasoning_share * p.expected_tokens);
  }
  return p;
}

}  // namespace mpo::sim
