// Reading a whole (small) file for a command: a profile, a saved page, a CSV, a receipt. Ledgers
// are not read this way (ledger::read_ledger_file streams them).
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace mpo::cli {

inline std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

}  // namespace mpo::cli
