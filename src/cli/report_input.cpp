#include "cli/report_input.hpp"

#include <iostream>
#include <iterator>
#include <thread>

namespace mpo::cli {

Status load_ledgers(const std::vector<std::string>& files, report::ReportInput& in) {
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
      opts.view_sink = [&parts](unsigned part, const ledger::LedgerRecordView& r) { parts[part].add(r); };
      auto r = ledger::read_ledger_file(f, opts);
      if (!r) return r.error();
      read = std::move(*r);
    }
    for (const auto& p : read.problems) {
      std::cerr << "modelperfobs report: warning: " << f << ":" << p.line << ": " << p.reason << "\n";
    }
    in.sources.push_back(f);
    read.problems.clear();  // printed above, with the file's name
    ledger::merge_into(in.read, std::move(read), 0);
    in.table.append(std::move(parts));
  }
  return Ok{};
}

}  // namespace mpo::cli
