// A sweep receipt for people: a markdown summary (points, findings, validity) and a
// self-contained HTML page (throughput and p99 TTFT/ITL against the load axis, budgets drawn,
// knee marked). Pure.
#pragma once

#include <string>

#include "sweep/receipt.hpp"

namespace mpo::sweep {

std::string sweep_markdown(const SweepReceipt& r);
std::string sweep_html(const SweepReceipt& r);

}  // namespace mpo::sweep
