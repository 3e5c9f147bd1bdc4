// Drives an Engine in virtual time until it has nothing left to do, collecting what it emitted.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace mpo::sim::test {

struct Run {
  std::vector<FinishedRequest> finished;
  std::map<RequestId, std::string> text;
  std::map<RequestId, int> emitted;
  std::vector<StepResult> steps;  // without emissions, to keep memory small
  double end_s = 0;
};

inline void collect(StepResult r, Run& run) {
  for (const auto& e : r.emissions) {
    run.text[e.id] += e.text;
    ++run.emitted[e.id];
  }
  run.finished.insert(run.finished.end(), r.finished.begin(), r.finished.end());
  r.emissions.clear();
  r.finished.clear();
  run.steps.push_back(std::move(r));
}

inline Run run_until_idle(Engine& engine, double now_s = 0, int max_steps = 1'000'000) {
  Run run;
  for (int i = 0; i < max_steps; ++i) {
    if (!engine.has_work(now_s)) {
      auto next = engine.next_deferred_ready_s();
      if (!next) break;
      now_s = std::max(now_s, *next);
      continue;
    }
    StepResult r = engine.step(now_s);
    if (r.scheduled_tokens == 0) break;
    now_s = r.end_s;
    collect(std::move(r), run);
  }
  run.end_s = now_s;
  return run;
}

inline RequestSpec spec_with_prompt(int prompt_tokens, int max_tokens, std::uint32_t salt = 0) {
  RequestSpec s;
  for (int i = 0; i < prompt_tokens; ++i) s.prompt.push_back(salt * 100003u + static_cast<std::uint32_t>(i));
  s.max_tokens = max_tokens;
  s.ignore_eos = true;
  s.seed = salt;
  return s;
}

}  // namespace mpo::sim::test
