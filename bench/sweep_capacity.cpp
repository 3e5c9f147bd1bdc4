// How much load one core of `modelperfobs sweep` drives before its own sending goes late: the
// generator pinned to CPU 0, the simulator (fast steps, room for every stream) to CPU 1. Open loop:
// offered rates doubling; closed loop: concurrent streams doubling. For each point the generator's
// p99 send lateness (scheduled vs actual write), its CPU share, and achieved vs offered rate; the
// answer is the highest point with p99 lateness <= 1 ms. Client TTFT is set against the
// simulator's own first-token times (its truth file) in the same run: the skew a generator adds.
//
//   sweep_capacity [--rates 100,200,...] [--streams 64,128,...] [--requests 2000]
#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "stream_driver.hpp"
#include "support/process.hpp"

namespace json = boost::json;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    auto c = s.find(',', pos);
    if (c == std::string::npos) c = s.size();
    out.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

double num(const json::value& v) { return v.to_number<double>(); }

// Median of (client TTFT - engine TTFT) per sweep point, over requests joined by correlation ID.
std::map<std::string, double> ttft_skew_ms(const std::string& ledger, const std::string& truth) {
  std::map<std::string, std::pair<std::string, double>> client;  // id -> (point, ttft)
  for (const auto& line : mpo::test::read_lines(ledger)) {
    auto o = json::parse(line).as_object();
    if (o.at("ttft_ms").is_number()) {
      client[std::string(o.at("observation_id").as_string())] = {std::string(o.at("sweep_point").as_string()),
                                                                 num(o.at("ttft_ms"))};
    }
  }
  std::map<std::string, std::vector<double>> skew;
  for (const auto& line : mpo::test::read_lines(truth)) {
    auto o = json::parse(line).as_object();
    const auto* id = o.if_contains("observation_id");
    if (!id || !id->is_string()) continue;
    auto it = client.find(std::string(id->as_string()));
    const auto* engine_ttft = o.if_contains("ttft_ms");
    if (it == client.end() || !engine_ttft || !engine_ttft->is_number()) continue;
    skew[it->second.first].push_back(it->second.second - num(*engine_ttft));
  }
  std::map<std::string, double> out;
  for (auto& [point, v] : skew) {
    std::sort(v.begin(), v.end());
    out[point] = v[v.size() / 2];
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string rates = "100,200,400,800,1600,3200", streams = "64,128,256,512,1024";
  int requests = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rates") == 0) rates = argv[i + 1];
    if (std::strcmp(argv[i], "--streams") == 0) streams = argv[i + 1];
    if (std::strcmp(argv[i], "--requests") == 0) requests = std::stoi(argv[i + 1]);
  }
  const std::string dir = mpo::test::make_temp_dir();
  mpo::test::write_file(dir + "/profile.json",
                        R"({"engine":{"max_num_seqs":4096,"num_gpu_blocks":400000,"max_num_batched_tokens":262144,)"
                        R"("step_base_s":0.002,"step_per_prefill_token_s":0,"step_per_decode_seq_s":0.000001}})");
  const std::string bin = mpo::test::binary_path();
  mpo::test::ChildProcess sim({"/usr/bin/taskset", "-c", "1", bin, "simulate", "--listen", "127.0.0.1:0", "--profile",
                               dir + "/profile.json", "--truth", dir + "/truth.jsonl"});
  const std::string first = sim.read_line();
  const auto colon = first.rfind(':', first.find(" (model"));
  const int port = std::stoi(first.substr(colon + 1));
  auto run = [&](const std::string& name, std::vector<std::string> load) {
    std::vector<std::string> args = {"/usr/bin/taskset",
                                     "-c",
                                     "0",
                                     bin,
                                     "sweep",
                                     "--url",
                                     fmt::format("http://127.0.0.1:{}/v1", port),
                                     "--model",
                                     "sim-model",
                                     "--input-tokens",
                                     "16",
                                     "--ignore-eos",
                                     "--quiet",
                                     "--output",
                                     dir + "/" + name + ".json"};
    args.insert(args.end(), load.begin(), load.end());
    const double sim_cpu0 = mpo::bench::cpu_seconds_of(sim.pid());
    const auto t0 = std::chrono::steady_clock::now();
    mpo::test::ChildProcess p(args);
    if (p.wait() != 0) fmt::print("{} exited non-zero\n", name);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fmt::print("(simulator on CPU 1: {:.0f}% of its core over the {} run)\n\n",
               100 * (mpo::bench::cpu_seconds_of(sim.pid()) - sim_cpu0) / wall, name);
    return json::parse(mpo::test::read_file(dir + "/" + name + ".json")).as_object();
  };
  auto table = [&](const json::object& r, const char* key, const char* label) {
    double best = 0;
    fmt::print(
        "| {} | p50 lateness ms | p99 lateness ms | generator CPU share | achieved req/s | TTFT p50 ms "
        "|\n|---|---|---|---|---|---|\n",
        label);
    for (const auto& p : r.at("points").as_array()) {
      const auto& tp = p.as_object().at("tracks").as_array()[0].as_object();
      const auto& ev = tp.at("evidence").as_object();
      const auto& gen = ev.at("generator").as_object();
      const auto& load = ev.at("load").as_object();
      const double c = num(p.as_object().at(key));
      const double p99 = num(gen.at("send_lateness_p99_ms"));
      const auto& ttft = tp.at("stats").as_object().at("ttft_ms").as_object();
      fmt::print("| {} | {:.3f} | {:.3f} | {:.1f}% | {} | {} |\n", c, num(gen.at("send_lateness_p50_ms")), p99,
                 100 * num(gen.at("cpu_share")),
                 load.contains("achieved_rate_rps") ? fmt::format("{:.1f}", num(load.at("achieved_rate_rps"))) : "n/a",
                 ttft.contains("p50") ? fmt::format("{:.2f}", num(ttft.at("p50"))) : "n/a");
      if (p99 <= 1.0 && c > best) best = c;
    }
    return best;
  };
  fmt::print("## open loop: Poisson arrivals, {} requests per rate, 16-token prompts, 4 output tokens\n\n", requests);
  const auto open = run("open", {"--rates", rates, "--requests", std::to_string(requests), "--output-tokens", "4",
                                 "--arrival", "poisson"});
  const double best_rate = table(open, "rate_rps", "offered req/s");
  fmt::print(
      "\n## closed loop: concurrent streams of 64 output tokens, 4 measured requests per stream after one warm-up "
      "round\n\n");
  std::vector<std::string> stream_list = split(streams);
  const auto closed = run("closed", {"--concurrencies", streams, "--requests",
                                     std::to_string(4 * std::stoi(stream_list.back())), "--output-tokens", "64"});
  const double best_streams = table(closed, "concurrency", "streams");
  fmt::print("\nhighest offered rate with p99 send lateness <= 1 ms: {} req/s\n", best_rate);
  fmt::print("highest concurrent streams with p99 send lateness <= 1 ms: {}\n", best_streams);
  fmt::print("\nmedian client TTFT minus the simulator's own TTFT (arrival to first token), same requests:\n");
  for (const auto& [point, skew] : ttft_skew_ms(dir + "/closed.ledger.jsonl", dir + "/truth.jsonl")) {
    fmt::print("  {}: {:.3f} ms\n", point, skew);
  }
  for (const auto& [point, skew] : ttft_skew_ms(dir + "/open.ledger.jsonl", dir + "/truth.jsonl")) {
    fmt::print("  {}: {:.3f} ms\n", point, skew);
  }
  return 0;
}
