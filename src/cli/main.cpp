// modelperfobs: one binary, one table of subcommands (cli/commands.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <csignal>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif
#ifndef MPO_BUILD_NOTE
#define MPO_BUILD_NOTE "an unknown compiler"
#endif

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// What to say after a usage error, instead of the whole help: the flag the user probably meant
// (a typo within two edits, or a longer flag that begins with a shorter one given a list), the
// refused flag's own description, the usage line, and where the rest is.
std::string usage_hint(const CLI::App& scope, const std::string& what) {
  std::vector<std::pair<std::string, const CLI::Option*>> flags;
  for (const CLI::Option* o : scope.get_options()) {
    for (const auto& name : o->get_lnames()) flags.emplace_back("--" + name, o);
  }
  std::string out;
  std::size_t at = 0;
  while ((at = what.find("--", at)) != std::string::npos) {
    const std::size_t end = what.find_first_of(" =:,", at);
    const std::string given = what.substr(at, end == std::string::npos ? std::string::npos : end - at);
    at += given.size();
    const auto known = std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == given; });
    std::string best;
    std::size_t best_distance = 3;
    for (const auto& [name, option] : flags) {
      if (name == given) continue;
      // A flag that takes one value given a list (--concurrency 1,2,4): a near name that takes many.
      if (known != flags.end() && option->get_items_expected_max() > 1 && edit_distance(given, name) <= 3) {
        best = name;
        break;
      }
      if (const std::size_t d = edit_distance(given, name); known == flags.end() && d < best_distance) {
        best = name;
        best_distance = d;
      }
    }
    if (known != flags.end() && !known->second->get_description().empty()) {
      out += given + ": " + known->second->get_description() + "\n";
    }
    if (!best.empty()) out += "did you mean " + best + "?\n";
  }
  std::string path = scope.get_name();
  for (const CLI::App* p = scope.get_parent(); p != nullptr; p = p->get_parent()) path = p->get_name() + " " + path;
  const std::string help = scope.help();
  if (const auto u = help.find("Usage: "); u != std::string::npos) {
    std::string usage = help.substr(u, help.find('\n', u) - u);
    usage.replace(7, scope.get_name().size(), path);
    out += usage + "\n";
  }
  out += "Run '" + path + " --help' for every flag.\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) must fail a write (EFBIG), which every writer handles as it
  // handles a full disk, not kill the process and the requests it carries.
  std::signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"modelperfobs: request-level, queryable evidence from any OpenAI-compatible model server",
               "modelperfobs"};
  app.set_version_flag("--version", std::string("modelperfobs ") + MPO_VERSION + "\nbuilt by " + MPO_BUILD_NOTE);
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
    const CLI::App* scope = &app;  // the deepest subcommand given (sweep gate, not sweep)
    for (bool deeper = true; deeper;) {
      deeper = false;
      for (const CLI::App* sub : scope->get_subcommands({})) {
        if (sub->parsed()) {
          scope = sub;
          deeper = true;
          break;
        }
      }
    }
    std::cerr << "modelperfobs: " << e.what() << "\n" << usage_hint(*scope, e.what());
    return 2;
  }
  try {
    return handler ? handler() : 2;
  } catch (const std::exception& e) {
    std::cerr << "modelperfobs: fatal: " << e.what() << "\n";
    return 1;
  }
}
