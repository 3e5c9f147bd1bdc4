// Attribution output: ours (`modelperfobs.attribution.v1`, one document), fak's
// (`fak-model-perf-attribution/1`, one document per window, as JSON lines), and markdown. Pure.
#pragma once

#include <string>
#include <vector>

#include "attribution/adapter.hpp"

namespace mpo::attribution {

inline constexpr const char* kSchema = "modelperfobs.attribution.v1";
inline constexpr const char* kFakSchema = "fak-model-perf-attribution/1";

struct RunInputs {
  std::string ledger, scrapes, window = "auto";
  // "sha256:..." of each ledger and snapshots file as read, in the order of `ledger` and `scrapes`
  // (comma-separated paths), so `attribute --verify` can show the files are the ones graded.
  std::vector<std::string> ledger_sha256, scrapes_sha256;
  double max_scrape_age_s = 0;
  std::string probe;  // the probed URL, for `attribute --probe`
  std::string tool_version;
  std::int64_t created_at_us = 0;
};

std::string attribution_json(const AttributionRun& run, const RunInputs& inputs);  // pretty, one newline
std::string fak_json_lines(const AttributionRun& run);                             // one line per window
std::string attribution_markdown(const AttributionRun& run, const RunInputs& inputs);
// One self-contained page (src/present): the windows with their grades, a chart of them, the
// causes that reach a request.
std::string attribution_html(const AttributionRun& run, const RunInputs& inputs);

}  // namespace mpo::attribution
