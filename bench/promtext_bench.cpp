// How fast the exposition parser reads a large /metrics page, against two baselines measured in
// the same run: splitting the same bytes into lines (the floor), and Prometheus' own Go parser
// (`promtool check metrics`, which parses the page and lints it; process start included, so its
// figure is a bound from above on the parse).
//
//   build/release/bench/promtext_bench [--models N] [--rounds R]
//
// The page is the real vLLM 0.29.0 capture with every sample repeated for N model names
// (model_name="m0".."mN-1"), keeping each family's samples together.
#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engines/signals.hpp"
#include "promtext/exposition.hpp"
#include "support/build_paths.hpp"

namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replicate(const std::string& page, int models) {
  std::string out;
  std::vector<std::string> block;
  auto flush = [&] {
    for (int m = 0; m < models; ++m) {
      for (const std::string& line : block) {
        std::string l = line;
        const auto at = l.find("model_name=\"qwen2.5-1.5b\"");
        if (at != std::string::npos) l.replace(at, 25, fmt::format("model_name=\"m{}\"", m));
        out += l;
        out += '\n';
      }
    }
    block.clear();
  };
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) == 0) {
      flush();
      out += line + '\n';
    } else {
      block.push_back(line);
    }
  }
  flush();
  return out;
}

template <typename F>
double best_seconds(int rounds, F&& f) {
  double best = 1e9;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int models = 400;
  int rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--models") == 0) models = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::atoi(argv[i + 1]);
  }
  const std::string page = replicate(read(std::string(mpo::test::source_dir()) +
                                          "/tests/fixtures/vllm/vllm-v1_0.29.0_qwen2.5-1.5b_t4_after-load.prom"),
                                     models);
  const double mb = static_cast<double>(page.size()) / 1e6;
  std::size_t samples = 0;
  {
    auto e = mpo::promtext::parse_exposition(page);
    if (!e) {
      fmt::print(stderr, "generated page does not parse: {}\n", e.error().message);
      return 1;
    }
    for (const auto& f : e->families) samples += f.samples.size();
  }
  fmt::print("page: {:.1f} MB, {} samples ({} models x the vLLM 0.29.0 capture), best of {}\n", mb, samples, models,
             rounds);

  volatile std::size_t lines = 0;
  const double t_lines = best_seconds(rounds, [&] {
    std::size_t n = 0;
    for (const char* p = page.data();
         (p = static_cast<const char*>(std::memchr(p, '\n', page.data() + page.size() - p))); ++p) {
      ++n;
    }
    lines = n;
  });
  const double t_parse = best_seconds(rounds, [&] { (void)mpo::promtext::parse_exposition(page); });
  const double t_signals = best_seconds(rounds, [&] {
    auto e = mpo::promtext::parse_exposition(page);
    (void)mpo::engines::extract_signals(*e);
  });
  const std::string tmp = "/tmp/mpo-promtext-bench.prom";
  std::ofstream(tmp, std::ios::binary) << page;
  double t_promtool = -1;
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    t_promtool = best_seconds(rounds, [&] {
      const int rc = std::system(fmt::format("promtool check metrics < {} >/dev/null 2>&1", tmp).c_str());
      (void)rc;
    });
  }
  std::remove(tmp.c_str());

  fmt::print("| step | best time | MB/s | vs line split |\n|---|---|---|---|\n");
  auto row = [&](const char* name, double t) {
    fmt::print("| {} | {:.1f} ms | {:.0f} | {:.1f}x |\n", name, t * 1e3, mb / t, t / t_lines);
  };
  row("line split (count newlines)", t_lines);
  row("parse_exposition", t_parse);
  row("parse + extract_signals", t_signals);
  if (t_promtool > 0) {
    row("promtool check metrics (Go parser + lint, process included)", t_promtool);
    fmt::print("\nours / promtool: {:.2f}x the time ({:.1f}x faster)\n", t_parse / t_promtool, t_promtool / t_parse);
  }
  (void)lines;
  return 0;
}
