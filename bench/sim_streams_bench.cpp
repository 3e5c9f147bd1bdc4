// Holds N concurrent SSE streams against one `modelperfobs simulate` process (single-threaded, one
// core) and reports what that costs: wall time, the simulator's CPU seconds and peak RSS, and the
// CPU per streamed event against a 1-stream baseline measured in the same run.
//
//   sim_streams_bench [--streams 1000] [--tokens 64]
#include <fmt/format.h>

#include <cstring>
#include <string>

#include "stream_driver.hpp"
#include "support/process.hpp"

int main(int argc, char** argv) {
  int streams = 1000;
  int tokens = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--streams") == 0) streams = std::stoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--tokens") == 0) tokens = std::stoi(argv[i + 1]);
  }
  mpo::bench::raise_fd_limit();
  const std::string dir = mpo::test::make_temp_dir();
  // Enough slots and KV for every stream to run at once: the bench measures the shell, not queueing.
  mpo::test::write_file(
      dir + "/profile.json",
      fmt::format(R"({{"engine":{{"max_num_seqs":{},"num_gpu_blocks":{},"max_num_batched_tokens":65536}}}})",
                  streams + 8, (streams + 8) * 16));
  mpo::test::Simulator sim({"--profile", dir + "/profile.json"});
  const int pid = sim.process.pid();
  const std::string body = fmt::format(
      R"({{"messages":[{{"role":"user","content":"bench"}}],"max_tokens":{},"ignore_eos":true,"stream":true}})",
      tokens);

  const auto idle = mpo::bench::rss_of(pid);
  const double cpu0 = mpo::bench::cpu_seconds_of(pid);
  const auto one = mpo::bench::drive_streams(sim.port, 1, body);
  const double cpu1 = mpo::bench::cpu_seconds_of(pid);
  const auto many = mpo::bench::drive_streams(sim.port, streams, body);
  const double cpu2 = mpo::bench::cpu_seconds_of(pid);
  const auto after = mpo::bench::rss_of(pid);

  const double per_event_one_us = (cpu1 - cpu0) / static_cast<double>(one.events) * 1e6;
  const double per_event_many_us = (cpu2 - cpu1) / static_cast<double>(many.events) * 1e6;
  fmt::print("streams: {} concurrent x {} tokens, completed {} ({} SSE events)\n", streams, tokens, many.completed,
             many.events);
  fmt::print("wall: {:.2f} s for {} streams; {:.2f} s for 1 stream (baseline)\n", many.wall_s, streams, one.wall_s);
  fmt::print("simulator CPU: {:.2f} s ({:.1f}% of one core over the run)\n", cpu2 - cpu1,
             100 * (cpu2 - cpu1) / many.wall_s);
  fmt::print("simulator CPU per SSE event: {:.1f} us with {} streams vs {:.1f} us with 1 (ratio {:.2f})\n",
             per_event_many_us, streams, per_event_one_us, per_event_many_us / per_event_one_us);
  fmt::print("simulator peak RSS: {} KiB (idle {} KiB, {:.1f} KiB per stream)\n", after.peak_kib, idle.current_kib,
             static_cast<double>(after.peak_kib - idle.current_kib) / streams);
  fmt::print(
      "wall vs 1-stream baseline: {:.2f}x (the engine model's step time grows with the batch: "
      "a + c*decode_seqs)\n",
      many.wall_s / one.wall_s);
  return many.completed == streams ? 0 : 1;
}
