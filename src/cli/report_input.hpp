// Loading ledgers into a ReportInput (shared by `report` and `demo`): each file read by as many
// threads as there are cores, its records kept as compact rows in file order; "-" is stdin.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"
#include "report/render.hpp"

namespace mpo::cli {

// Fills in.sources, in.read (counts) and in.table (rows; in.options.by must be set). Line
// problems are printed on stderr as warnings with the file's name (unless !warn: files read a
// second time). Error: a file cannot be read.
Status load_ledgers(const std::vector<std::string>& files, report::ReportInput& in, bool warn = true);

}  // namespace mpo::cli
