// The implementation of cli/report_input.hpp. Loading ledgers into a ReportInput (shared by
// `report` and `demo`): each file read by as many threads as there are cores, its records kept as
// compact rows in file order; "-" is stdin.
#include "cli/report_input.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>

#include "cli/files.hpp"
#include "core/json.hpp"

namespace mpo::cli {

namespace {

constexpr std::size_t kWarningsPerFile = 10;

// A whole JSON document where a ledger was expected (a sweep receipt, a report): named, with where
// its requests are, instead of a warning per line (issue 38). nullopt when `path` looks like a ledger.
std::optional<std::string> not_a_ledger(const std::string& path) {
  std::ifstream in(path);
  std::string first;
  if (!std::getline(in, first)) return std::nullopt;
  const auto start = first.find_first_not_of(" \t\r");
  if (start == std::string::npos || first[start] != '{') return std::nullopt;
  if (parse_json(first)) return std::nullopt;  // a whole object on the first line: a ledger line
  auto text = read_text_file(path);
  if (!text) return std::nullopt;
  const auto doc = parse_json(*text);
  if (!doc || !doc->is_object()) return std::nullopt;
  const std::string schema(json_string(doc->as_object(), "schema").value_or("(no schema)"));
  std::string where;
  if (schema == "fak.serving-sweep.v1" || schema == "fak.serving-parity.v1") {
    const std::string stem = path.size() > 5 && path.ends_with(".json") ? path.substr(0, path.size() - 5) : path;
    where = fmt::format(": its requests are in the sweep's ledger, {}.ledger.jsonl", stem);
  }
  return fmt::format("{} is one {} document, not a ledger (one JSON object per line){}", path, schema, where);
}

}  // namespace

Status load_ledgers(const std::vector<std::string>& files, report::ReportInput& in, bool warn) {
  // Each file is read by up to `threads` threads; each keeps its part's rows in its own table, and
  // the tables join in file order, so rows keep the ledger's order.
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  in.table = report::RowTable(in.options.by);
  for (const auto& f : files) {
    ledger::LedgerRead read;
    ledger::FileReadOptions opts{threads};
    std::vector<report::RowTable> parts;
    for (unsigned k = 0; k < threads * opts.parts_per_thread; ++k) parts.emplace_back(in.options.by);
    if (f == "-") {
      const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
      read = ledger::read_ledger(text);
      for (const auto& r : read.records) parts[0].add(r);
      read.records.clear();
    } else {
      if (auto why = not_a_ledger(f)) return make_error(errc::kReportInput, *why);
      opts.view_sink = [&parts](unsigned part, const ledger::LedgerRecordView& r) { parts[part].add(r); };
      auto r = ledger::read_ledger_file(f, opts);
      if (!r) return r.error();
      read = std::move(*r);
    }
    for (std::size_t i = 0; warn && i < read.problems.size() && i < kWarningsPerFile; ++i) {
      const auto& p = read.problems[i];
      std::cerr << "modelperfobs report: warning: " << f << ":" << p.line << ": " << p.reason << "\n";
    }
    if (warn && read.problems.size() > kWarningsPerFile) {
      std::cerr << "modelperfobs report: warning: " << f << ": and " << read.problems.size() - kWarningsPerFile
                << " more lines like these\n";
    }
    in.sources.push_back(f);
    read.problems.clear();  // printed above, with the file's name
    ledger::merge_into(in.read, std::move(read), 0);
    in.table.append(std::move(parts));
  }
  return Ok{};
}

}  // namespace mpo::cli
