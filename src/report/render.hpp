// Report renderers: Markdown for people, JSON (`modelperfobs.report.v1`) for machines, CSV for
// spreadsheets. Pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ledger/reader.hpp"
#include "report/analysis.hpp"

namespace mpo::report {

struct ReportInput {
  std::vector<std::string> sources;  // file names as given
  ledger::LedgerRead read;           // counts of lines read (its records are not kept)
  RowTable table;                    // what the report keeps of every record (charts plot it)
  Options options;
  std::vector<GroupStats> groups;
  std::vector<OtherStats> others;  // requests that generate nothing, by operation
  std::vector<SloResult> slos;
  std::int64_t created_at_us = 0;
  std::string tool_version;
  // `report --traces`: the engine spans joined to the lines (attribution/engine_trace.hpp),
  // rendered by the caller; "" when not asked for.
  std::string engine_trace_md, engine_trace_json, engine_trace_html;
  // `report --baseline`: the before/after comparison (report/compare.hpp), rendered by the caller.
  std::string comparison_md, comparison_json, comparison_html;
};

// What a group's times rest on and how late the proxy itself was to read, with a warning when
// that lateness reached kProxyLagWarnMs; "" when its lines do not say (sweep, fak, older ledgers).
std::string timing_summary(const GroupStats& g);

// What the ranking's medians do not weigh and the group's section says below its verdict: "first
// tokens held behind longer prompts", ...; each with the name of its section (md and HTML).
std::vector<std::pair<std::string, std::string>> findings_beside_the_verdict(const GroupStats& g);
// The group's requests that queued part of the time (report/queued.hpp) where the ranking does not
// call the group's queueing a bottleneck, and the sentence that says so; "" where there is none.
std::string queue_at_times_sentence(const GroupStats& g);
// The requests whose decode was slow at times (report/slow_decode.hpp), where the decode candidate
// does not cross its threshold; "" otherwise.
std::string slow_decode_at_times_sentence(const GroupStats& g);

// Under the percentile table, where its rows' tails rest on their slowest requests alone: with n
// values, quantile_cont's p99 lies between the two largest up to n = 101 (h = 0.99 (n - 1) >= n - 2),
// its p95 up to n = 21. "" where a row has more.
std::string tail_sample_note(const GroupStats& g);

// A candidate with no score and no evidence says nothing: the md and HTML rankings leave it out
// (JSON keeps every candidate).
inline bool shown_in_ranking(const Candidate& c) { return c.score > 0 || !c.evidence.empty(); }

std::string render_markdown(const ReportInput& in);
std::string render_json(const ReportInput& in);
std::string render_csv(const ReportInput& in);
// One self-contained HTML file with inline SVG charts (no scripts, no network).
std::string render_html(const ReportInput& in);

}  // namespace mpo::report
