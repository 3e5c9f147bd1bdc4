// Reading a whole (small) file for a command: a profile, a saved page, a CSV, a receipt. Ledgers
// are not read this way (ledger::read_ledger_file streams them).
#pragma once

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace mpo::cli {

inline std::optional<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

// read_text_file, saying on stderr why a file cannot be read, as `modelperfobs <command>: cannot
// read <path>: <why>`.
std::optional<std::string> read_input_file(const std::string& path, std::string_view command);

// A file read and parsed by `parse` (a `Result<T>(std::string_view)`), or nullopt after saying why on
// stderr (`modelperfobs <command>: cannot read <path>: <why>`, `modelperfobs <command>: <path>: <why>`).
template <class Parse>
auto read_parsed_file(const std::string& path, std::string_view command, Parse parse)
    -> std::optional<std::decay_t<decltype(*parse(std::string_view{}))>> {
  const auto text = read_input_file(path, command);
  if (!text) return std::nullopt;
  auto parsed = parse(*text);
  if (!parsed) {
    std::cerr << "modelperfobs " << command << ": " << path << ": " << parsed.error().message << "\n";
    return std::nullopt;
  }
  return std::move(*parsed);
}

// Writes `text` to `path`, or to stdout when `path` is empty or "-". The file is written beside
// `path` under a temporary name, flushed to disk and renamed over it: a reader never sees half a
// file, and a failed write (a full disk) leaves an existing `path` as it was. On failure says why
// on stderr, as `modelperfobs <command>: ...`, and returns false.
// A path that is not a regular file is written in place, never renamed over: a pipe or a device
// (`--html /dev/stdout`, `/dev/fd/1`, a FIFO) is opened and appended to, as a shell's `>>` would;
// a symbolic link to a file stays a link, the file it names replaced atomically.
bool write_output(const std::string& path, const std::string& text, std::string_view command);

}  // namespace mpo::cli
