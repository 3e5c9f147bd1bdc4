// How fast the engine model runs in virtual time: 10,000 requests with Poisson arrivals, mixed
// prompt and output lengths, through scheduling, prefix caching, preemption and metrics.
// Counters: requests/s of wall time, and the virtual-to-wall ratio (simulated seconds per second).
#include <benchmark/benchmark.h>

#include <random>

#include "sim/engine.hpp"

namespace {

using namespace mpo::sim;

void BM_Simulate10kRequests(benchmark::State& state) {
  const int n = 10'000;
  const double rate = static_cast<double>(state.range(0));  // arrivals per second
  double simulated = 0;
  for (auto _ : state) {
    std::mt19937_64 rng(42);
    std::exponential_distribution<double> gap(rate);
    std::uniform_int_distribution<int> prompt(64, 1024), output(16, 256);
    Engine engine(EngineConfig{});
    double now = 0;
    double next_arrival = 0;
    int added = 0;
    std::uint64_t tokens = 0;
    while (added < n || engine.num_active() > 0) {
      while (added < n && next_arrival <= now) {
        RequestSpec s;
        const int len = prompt(rng);
        // A shared 256-token system prompt on half of the requests: prefix-cache hits.
        for (int i = 0; i < len; ++i) {
          s.prompt.push_back((added % 2 == 0 && i < 256) ? static_cast<TokenId>(i) : static_cast<TokenId>(rng()));
        }
        s.max_tokens = output(rng);
        s.ignore_eos = true;
        s.seed = static_cast<std::uint64_t>(added);
        (void)engine.add_request(std::move(s), next_arrival);
        ++added;
        next_arrival += gap(rng);
      }
      if (engine.has_work(now)) {
        auto r = engine.step(now);
        tokens += r.emissions.size();
        now = r.scheduled_tokens > 0 ? r.end_s : next_arrival;
      } else {
        now = next_arrival;
      }
    }
    benchmark::DoNotOptimize(tokens);
    simulated = now;
  }
  state.counters["requests_per_s"] =
      benchmark::Counter(static_cast<double>(n) * state.iterations(), benchmark::Counter::kIsRate);
  state.counters["simulated_s"] = simulated;
  state.counters["virtual_over_wall"] = benchmark::Counter(simulated * state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Simulate10kRequests)->Arg(2)->Arg(100)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
