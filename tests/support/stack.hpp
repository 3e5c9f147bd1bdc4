// A simulator with a proxy in front of it, both real processes, and the proxy's ledger.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/process.hpp"

namespace mpo::test {

struct Stack {
  explicit Stack(std::vector<std::string> sim_args = {}, std::vector<std::string> proxy_args = {})
      : dir(make_temp_dir()),
        sim([&] {
          sim_args.insert(sim_args.end(), {"--truth", dir + "/truth.jsonl"});
          return sim_args;
        }()),
        proxy("http://127.0.0.1:" + std::to_string(sim.port), dir + "/ledger.jsonl", std::move(proxy_args)) {}
  std::string ledger_path() const { return dir + "/ledger.jsonl"; }
  // Stops the proxy, which flushes the ledger; returns its lines.
  std::vector<std::string> stop_proxy() {
    EXPECT_EQ(proxy.process.terminate(), 0);
    return read_lines(ledger_path());
  }
  std::string dir;
  Simulator sim;
  Proxy proxy;
};

}  // namespace mpo::test
