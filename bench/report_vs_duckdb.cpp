// `modelperfobs report` against DuckDB on the same generated ledger, in the same run: wall time
// and peak memory of each, as child processes (DuckDB through Node's @duckdb/node-api running
// the query of docs/FORMATS.md, which computes fewer statistics than the report does).
//
//   report_vs_duckdb [--lines 1000000]
#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ledger/observation.hpp"
#include "support/process.hpp"

extern char** environ;

namespace {

struct Run {
  double wall_s = 0;
  long max_rss_kib = 0;
  int exit_code = -1;
};

Run timed(std::vector<std::string> argv) {
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return {};
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  Run r;
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.max_rss_kib = ru.ru_maxrss;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  long lines = 1'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--lines") == 0) lines = std::stol(argv[i + 1]);
  }
  const std::string dir = mpo::test::make_temp_dir();
  const std::string ledger = dir + "/model-perf.jsonl";
  {
    std::FILE* f = std::fopen(ledger.c_str(), "w");
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0, 1);
    const char* models[] = {"qwen3-8b", "llama-3.1-8b", "mistral-7b", "gemma-2-9b"};
    for (long i = 0; i < lines; ++i) {
      mpo::ledger::Observation o;
      o.observation_id = fmt::format("bench-{}", i);
      o.started_at_us = 1'787'824'800'000'000 + i * 1000;
      o.proxy_instance = "bench:1";
      o.backend = "http://127.0.0.1:8000";
      o.method = "POST";
      o.path = "/v1/chat/completions";
      o.operation = "chat";
      o.model = models[i % 4];
      o.response_model = o.model;
      o.stream = true;
      o.http_status = 200;
      o.outcome = u(rng) < 0.01 ? "http_error" : "ok";
      o.ttfb_ms = 1 + 4 * u(rng);
      o.ttft_ms = 20 + 400 * u(rng) * u(rng);
      o.completion_tokens = 16 + static_cast<std::int64_t>(240 * u(rng));
      o.prompt_tokens = 32 + static_cast<std::int64_t>(2000 * u(rng));
      o.total_tokens = *o.prompt_tokens + *o.completion_tokens;
      o.e2e_ms = *o.ttft_ms + static_cast<double>(*o.completion_tokens) * (15 + 10 * u(rng));
      o.ended_at_us = o.started_at_us + static_cast<std::int64_t>(*o.e2e_ms * 1000);
      o.itl_ms = {15 + 10 * u(rng), 15 + 10 * u(rng), 20 + 30 * u(rng)};
      o.content_events = o.completion_tokens;
      o.token_source = "usage";
      o.in_flight_at_start = static_cast<std::int64_t>(32 * u(rng));
      const std::string line = mpo::ledger::render_observation(o);
      std::fwrite(line.data(), 1, line.size(), f);
    }
    std::fflush(f);
    ::fsync(fileno(f));  // written back before timing starts: no writeback competes with either side
    std::fclose(f);
  }
  const auto bytes = std::filesystem::file_size(ledger);
  fmt::print("ledger: {} lines, {:.0f} MB ({})\n", lines, static_cast<double>(bytes) / 1e6, ledger);

  // Three rounds, alternating, so neither side always runs on a colder cache or a busier machine;
  // the median of each side is compared.
  const std::vector<std::string> ours_argv{
      mpo::test::binary_path(), "report", "--input", ledger, "--format", "json", "--output", dir + "/report.json"};
  const std::string js = fmt::format(
      "const {{DuckDBInstance}} = require('@duckdb/node-api');"
      "(async () => {{ const db = await DuckDBInstance.create(':memory:'); const c = await db.connect();"
      "const r = await c.runAndReadAll(`SELECT model, count(*) AS requests, quantile_cont(ttft_ms, 0.95) AS "
      "ttft_p95_ms,"
      " quantile_cont(tpot_ms, 0.95) AS tpot_p95_ms, quantile_cont(output_tokens_per_second, 0.5) AS output_tok_s_p50"
      " FROM read_json_auto('{}') GROUP BY model`); console.log(JSON.stringify(r.getRowObjectsJson())); }})();",
      ledger);
  std::vector<Run> ours_runs, duck_runs;
  for (int round = 0; round < 3; ++round) {
    ours_runs.push_back(timed(ours_argv));
    duck_runs.push_back(timed({"node", "-e", js}));
  }
  auto median_run = [](std::vector<Run> runs) {
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) { return a.wall_s < b.wall_s; });
    return runs[runs.size() / 2];
  };
  const Run ours = median_run(ours_runs);
  const Run duck = median_run(duck_runs);
  for (int round = 0; round < 3; ++round) {
    fmt::print("round {}: report {:.2f} s, DuckDB {:.2f} s\n", round + 1, ours_runs[round].wall_s,
               duck_runs[round].wall_s);
  }
  fmt::print(
      "modelperfobs report (json, all statistics, fit, ranking): {:.2f} s wall (median of 3), peak RSS {} MiB, exit "
      "{}\n",
      ours.wall_s, ours.max_rss_kib / 1024, ours.exit_code);
  fmt::print(
      "DuckDB (node, docs/FORMATS.md query):                     {:.2f} s wall (median of 3), peak RSS {} MiB, exit "
      "{}\n",
      duck.wall_s, duck.max_rss_kib / 1024, duck.exit_code);
  fmt::print("ratio report / DuckDB: {:.2f} (target <= 0.50, issue 25); report memory per million lines: {:.0f} MiB\n",
             ours.wall_s / duck.wall_s,
             static_cast<double>(ours.max_rss_kib) / 1024 / (static_cast<double>(lines) / 1e6));
  return ours.exit_code == 0 && duck.exit_code == 0 ? 0 : 1;
}
