// The one table of subcommands: name, one-line summary, flag setup, handler. Help text and
// dispatch come from the same rows, so they cannot drift apart.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

namespace mpo::cli {

struct Command {
  std::string_view name;
  std::string_view summary;
  // Declares the subcommand's flags on `app`; returns the handler to run after parsing.
  std::function<std::function<int()>(CLI::App& app)> setup;
};

std::span<const Command> commands();

// Per-command setup functions (one file each).
std::function<int()> setup_simulate(CLI::App& app);
std::function<int()> setup_proxy(CLI::App& app);
std::function<int()> setup_report(CLI::App& app);
std::function<int()> setup_demo(CLI::App& app);
std::function<int()> setup_scrape(CLI::App& app);
std::function<int()> setup_bandwidth(CLI::App& app);
std::function<int()> setup_sweep(CLI::App& app);
std::function<int()> setup_attribute(CLI::App& app);
std::function<int()> setup_cache_state(CLI::App& app);
std::function<int()> setup_top(CLI::App& app);

}  // namespace mpo::cli
