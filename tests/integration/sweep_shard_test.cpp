// Sharded sweeps (issue 24): two `sweep --shard I/2` runs against one simulator started together
// with --start-at, joined by `sweep merge`: the merged receipt verifies, sends the same requests as
// one unsharded run of the same workload and measures it within sampling error; merges of shards
// that do not line up are refused, saying what differs and by how much.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <future>
#include <map>
#include <set>

#include "core/time.hpp"
#include "support/process.hpp"

namespace mpo::test {
namespace {

namespace json = boost::json;

// Capacity 16, fast steps: a point of 48 requests takes about a second.
constexpr const char* kProfile =
    R"({"engine":{"max_num_seqs":16,"step_base_s":0.004,"step_per_prefill_token_s":0.00002,"step_per_decode_seq_s":0.0002}})";

std::vector<std::string> sweep_args(std::uint16_t port, const std::string& out, std::vector<std::string> extra) {
  std::vector<std::string> args = {"sweep",
                                   "--url",
                                   fmt::format("http://127.0.0.1:{}/v1", port),
                                   "--model",
                                   "sim-model",
                                   "--input-tokens",
                                   "48",
                                   "--output-tokens",
                                   "24",
                                   "--ignore-eos",
                                   "--quiet",
                                   "--seed",
                                   "7",
                                   "--output",
                                   out};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A wall time a moment from now, in RFC 3339 (the shards' common start).
std::string soon(double seconds) {
  const auto now =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return format_rfc3339_us(now + static_cast<std::int64_t>(seconds * 1e6));
}

// Runs shards 0..n-1 at once (each its own process), all due at one start time.
void run_shards(std::uint16_t port, const std::string& dir, int n, std::vector<std::string> extra) {
  const std::string at = soon(1.0);
  std::vector<std::future<CliRun>> runs;
  for (int i = 0; i < n; ++i) {
    auto args = sweep_args(port, fmt::format("{}/shard{}.json", dir, i), extra);
    args.insert(args.end(), {"--shard", fmt::format("{}/{}", i, n), "--start-at", at, "--point-period", "4s"});
    runs.push_back(std::async(std::launch::async, [args] { return run_cli(args, 120000); }));
  }
  for (auto& r : runs) {
    const auto done = r.get();
    ASSERT_EQ(done.exit_code, 0) << done.out;
  }
}

const json::object& track_point(const json::object& receipt, std::size_t i) {
  return receipt.at("points").as_array()[i].at("tracks").as_array()[0].as_object();
}

std::multiset<std::string> measured_ids(const json::object& tp) {
  std::multiset<std::string> ids;
  for (const auto& s : tp.at("samples").as_array()) {
    if (!s.as_object().contains("warmup")) ids.insert(std::string(s.at("id").as_string()));
  }
  return ids;
}

const json::object& stats(const json::object& tp) { return tp.at("stats").as_object(); }
double quantile(const json::object& tp, const char* metric, const char* q) {
  return stats(tp).at(metric).at(q).to_number<double>();
}

CliRun merge(const std::string& dir, std::vector<std::string> shards, const std::string& out = "merged.json") {
  std::string args = "sweep merge";
  for (const auto& s : shards) args += " " + dir + "/" + s;
  return run_cli_with_stderr(args + " --output " + dir + "/" + out);
}

TEST(SweepShards, TwoClosedLoopShardsMergeIntoWhatOneRunMeasures) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kProfile);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::vector<std::string> load = {"--concurrencies", "2,8", "--requests", "48"};
  run_shards(sim.port, dir, 2, load);
  // Each shard ran half the workers and their requests.
  const auto s1 = json::parse(read_file(dir + "/shard1.json")).as_object();
  EXPECT_EQ(s1.at("load").at("shard").at("index"), 1);
  EXPECT_EQ(s1.at("load").at("shard").at("count"), 2);
  EXPECT_EQ(stats(track_point(s1, 1)).at("requests"), 24);
  EXPECT_EQ(stats(track_point(s1, 1)).at("observed_max_in_flight"), 4);

  const auto merged_cli = merge(dir, {"shard0.json", "shard1.json"});
  ASSERT_EQ(merged_cli.exit_code, 0) << merged_cli.out;
  const auto verified = run_cli({"sweep", "verify", dir + "/merged.json"});
  EXPECT_EQ(verified.exit_code, 0) << verified.out;
  const auto merged = json::parse(read_file(dir + "/merged.json")).as_object();
  EXPECT_EQ(merged.at("load").at("shards").as_array().size(), 2u);
  EXPECT_FALSE(merged.at("load").as_object().contains("shard"));

  // The same workload unsharded, right after.
  const auto one = run_cli(sweep_args(sim.port, dir + "/one.json", load), 120000);
  ASSERT_EQ(one.exit_code, 0) << one.out;
  const auto single = json::parse(read_file(dir + "/one.json")).as_object();
  EXPECT_EQ(merged.at("workload").at("digest"), single.at("workload").at("digest"));
  for (std::size_t p = 0; p < 2; ++p) {
    const auto& m = track_point(merged, p);
    const auto& u = track_point(single, p);
    EXPECT_EQ(measured_ids(m), measured_ids(u)) << "point " << p << ": the shards sent the run's requests";
    EXPECT_EQ(stats(m).at("ok"), 48);
    EXPECT_EQ(stats(m).at("observed_max_in_flight"), stats(u).at("observed_max_in_flight"));
    // Within sampling error: the simulated engine serves both the same way. TTFT here is a few
    // engine steps of 4 ms, and two generators share this machine's two vCPUs with the engine:
    // 10 ms of slack beside the 35%.
    for (const char* metric : {"ttft_ms", "end_to_end_ms"}) {
      const double a = quantile(m, metric, "p50"), b = quantile(u, metric, "p50");
      EXPECT_NEAR(a, b, std::max(0.35 * b, 10.0)) << metric << " at point " << p;
    }
    const double tm = stats(m).at("throughput_tok_s").at("value").to_number<double>();
    const double tu = stats(u).at("throughput_tok_s").at("value").to_number<double>();
    EXPECT_NEAR(tm, tu, 0.35 * tu) << "point " << p;
  }
}

TEST(SweepShards, ConversationsAreSplitWholeAcrossShards) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kProfile);
  Simulator sim({"--profile", dir + "/p.json"});
  run_shards(
      sim.port, dir, 2,
      {"--workload", "multi-turn", "--sessions", "6", "--turns", "3", "--user-tokens", "20", "--concurrencies", "2"});
  // Each shard ran one of the two live conversations at a time: three whole conversations each.
  std::set<std::string> seen;
  for (int i = 0; i < 2; ++i) {
    const auto shard = json::parse(read_file(fmt::format("{}/shard{}.json", dir, i))).as_object();
    const auto ids = measured_ids(track_point(shard, 0));
    EXPECT_EQ(ids.size(), 9u) << "shard " << i;
    std::map<std::string, int> turns;
    for (const auto& id : ids) ++turns[id.substr(0, id.find('/'))];
    EXPECT_EQ(turns.size(), 3u) << "shard " << i;
    for (const auto& [conversation, n] : turns) {
      EXPECT_EQ(n, 3) << conversation << " in shard " << i;
      EXPECT_TRUE(seen.insert(conversation).second) << conversation << " in both shards";
    }
    EXPECT_EQ(stats(track_point(shard, 0)).at("observed_max_in_flight"), 1);
  }
  const auto merged = merge(dir, {"shard0.json", "shard1.json"});
  ASSERT_EQ(merged.exit_code, 0) << merged.out;
  EXPECT_EQ(stats(track_point(json::parse(read_file(dir + "/merged.json")).as_object(), 0)).at("ok"), 18);
}

TEST(SweepShards, OpenLoopShardsThinOneArrivalProcessAndTogetherOfferTheRate) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kProfile);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::vector<std::string> load = {"--rates", "40", "--requests", "60"};
  run_shards(sim.port, dir, 2, load);
  const auto s0 = json::parse(read_file(dir + "/shard0.json")).as_object();
  const auto s1 = json::parse(read_file(dir + "/shard1.json")).as_object();
  const auto ids0 = measured_ids(track_point(s0, 0)), ids1 = measured_ids(track_point(s1, 0));
  EXPECT_EQ(ids0.size(), 30u);
  EXPECT_EQ(ids1.size(), 30u);
  for (const auto& id : ids0) EXPECT_EQ(ids1.count(id), 0u) << id << " sent by both shards";
  ASSERT_EQ(merge(dir, {"shard1.json", "shard0.json"}).exit_code, 0);
  EXPECT_EQ(run_cli({"sweep", "verify", dir + "/merged.json"}).exit_code, 0);
  const auto merged = json::parse(read_file(dir + "/merged.json")).as_object();
  const auto& tp = track_point(merged, 0);
  EXPECT_EQ(stats(tp).at("ok"), 60);
  // One process of 40 req/s thinned in two: the union offers 40 req/s (sampling error of 60 draws).
  const double offered = tp.at("evidence").at("load").at("offered_rate_rps").to_number<double>();
  EXPECT_NEAR(offered, 40, 12);
  // Every sample says which shard sent it; the generator is judged per shard.
  std::set<std::int64_t> shards;
  for (const auto& s : tp.at("samples").as_array()) shards.insert(s.at("shard").as_int64());
  EXPECT_EQ(shards, (std::set<std::int64_t>{0, 1}));
}

TEST(SweepShards, ShardsThatDoNotLineUpAreRefusedWithTheReason) {
  const std::string dir = make_temp_dir();
  write_file(dir + "/p.json", kProfile);
  Simulator sim({"--profile", dir + "/p.json"});
  const std::vector<std::string> load = {"--concurrencies", "4", "--requests", "16"};
  run_shards(sim.port, dir, 2, load);
  auto r = merge(dir, {"shard0.json", "shard0.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("the same shard given twice: 0"), std::string::npos) << r.out;
  r = run_cli_with_stderr("sweep merge " + dir + "/shard0.json --output " + dir + "/m.json");
  EXPECT_NE(r.out.find("two or more shards"), std::string::npos) << r.out;
  // A third shard's worth of the split is missing.
  auto three = sweep_args(sim.port, dir + "/third.json", load);
  three.insert(three.end(), {"--shard", "2/3"});
  ASSERT_EQ(run_cli(three, 60000).exit_code, 0);
  r = merge(dir, {"shard0.json", "third.json"});
  EXPECT_NE(r.out.find("is one of 3 shards, shard 0 one of 2"), std::string::npos) << r.out;
  // Another seed: another workload.
  auto other = sweep_args(sim.port, dir + "/other.json", load);
  *(std::find(other.begin(), other.end(), "--seed") + 1) = "8";
  other.insert(other.end(), {"--shard", "1/2"});
  ASSERT_EQ(run_cli(other, 60000).exit_code, 0);
  r = merge(dir, {"shard0.json", "other.json"});
  EXPECT_NE(r.out.find("workload digest"), std::string::npos) << r.out;
  // The right shard run a few seconds later: the point's windows do not overlap.
  auto late = sweep_args(sim.port, dir + "/late.json", load);
  late.insert(late.end(), {"--shard", "1/2"});
  ASSERT_EQ(run_cli(late, 60000).exit_code, 0);
  r = merge(dir, {"shard0.json", "late.json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("the point at concurrency 4: shard 1 started"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("s after shard 0 (at most 1 s apart)"), std::string::npos) << r.out;
  // Not a shard at all.
  auto whole = sweep_args(sim.port, dir + "/whole.json", load);
  ASSERT_EQ(run_cli(whole, 60000).exit_code, 0);
  r = merge(dir, {"shard0.json", "whole.json"});
  EXPECT_NE(r.out.find("whole.json: not a shard's receipt"), std::string::npos) << r.out;
  // Usage: a shard index out of range.
  r = run_cli_with_stderr("sweep --url http://127.0.0.1:1/v1 --model m --concurrencies 1 --shard 2/2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("expected I/N with 0 <= I < N"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mpo::test
