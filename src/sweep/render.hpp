// A sweep receipt for people: a markdown summary (points, findings, validity) and a
// self-contained HTML page (throughput and p99 TTFT/ITL against the load axis, budgets drawn,
// knee marked). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "sweep/receipt.hpp"

namespace mpo::sweep {

std::string sweep_markdown(const SweepReceipt& r);
std::string sweep_html(const SweepReceipt& r);

// Pieces the other sweep pages (sweep/repeat.cpp) share: a number to `digits` places or "n/a", the
// load axis's name ("concurrency", "offered rate (req/s)"), a Markdown table.
std::string fixed(std::optional<double> v, int digits = 1);
std::string axis_title(loadgen::LoadMode m);
std::string markdown_table(const std::vector<std::string>& headers, const std::vector<std::vector<std::string>>& rows);

}  // namespace mpo::sweep
