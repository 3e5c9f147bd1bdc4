// modelperfobs: one binary, one table of subcommands (cli/commands.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <iostream>

#include "cli/commands.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must fail a write (EFBIG), which every writer handles as it
  // handles a full disk, not kill the process and the requests it carries.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"modelperfobs: request-level, queryable evidence from any OpenAI-compatible model server",
               "modelperfobs"};
  app.set_version_flag("--version", std::string("modelperfobs ") + MPO_VERSION);
  app.require_subcommand(1);
  app.footer("Run 'modelperfobs COMMAND --help' for a command's flags. Docs: README.md, docs/.");
  std::function<int()> handler;
  for (const auto& cmd : mpo::cli::commands()) {
    CLI::App* sub = app.add_subcommand(std::string(cmd.name), std::string(cmd.summary));
    auto run = cmd.setup(*sub);
    sub->callback([&handler, run] { handler = run; });
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // help goes to stdout, exit 0
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit 2 with the relevant usage on stderr.
    const auto& table = mpo::cli::commands();
    const bool known =
        argc > 1 && std::any_of(table.begin(), table.end(), [&](const auto& c) { return c.name == argv[1]; });
    if (argc > 1 && argv[1][0] != '-' && !known) {
      std::cerr << "modelperfobs: unknown subcommand '" << argv[1] << "'\n\n" << app.help();
      return 2;
    }
    const CLI::App* scope = &app;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->parsed()) scope = sub;
    }
    std::cerr << "modelperfobs: " << e.what() << "\n\n" << scope->help();
    return 2;
  }
  try {
    return handler ? handler() : 2;
  } catch (const std::exception& e) {
    std::cerr << "modelperfobs: fatal: " << e.what() << "\n";
    return 1;
  }
}
