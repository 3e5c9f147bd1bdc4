// `modelperfobs report`: its flags, the ledgers read, the engine evidence joined (scrapes, traces),
// SLOs and the baseline gate, and the exit code.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <thread>
#include <unordered_map>

#include "attribution/engine_trace.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/files.hpp"
#include "cli/report_input.hpp"
#include "core/clock.hpp"
#include "core/time.hpp"
#include "ledger/observation.hpp"
#include "ledger/reader.hpp"
#include "live/engine_evidence.hpp"
#include "otel/trace_file.hpp"
#include "report/analysis.hpp"
#include "report/compare.hpp"
#include "report/render.hpp"
#include "scrape/snapshot_reader.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> inputs;
  std::string by = "model";
  std::string since, until;
  std::string format = "md";
  std::string output;
  std::string slo;
  std::string scrapes;                // "" : beside the ledger when there; "none": never
  std::string traces;                 // engine spans (OTLP/JSON) to join by trace id; "" none
  std::vector<std::string> baseline;  // ledgers of the run to compare against
  bool reruns = false;                // each ledger a rerun of the same workload (both sides)
  std::string max_regression;
  int resamples = 2000;
  std::uint64_t seed = 1;
};

// The engine's own times of the ok lines its spans were joined to, by the report's group: the
// report splits TTFT at them where the lines carry no llama.cpp timings.
std::map<std::string, std::vector<report::EngineTimes>, std::less<>> traced_times(
    const std::vector<ledger::LedgerRecord>& records, const attribution::TraceJoin& join, report::GroupBy by) {
  std::unordered_map<std::string_view, const ledger::LedgerRecord*> by_id;
  for (const auto& r : records) by_id.emplace(r.observation_id, &r);
  std::map<std::string, std::vector<report::EngineTimes>, std::less<>> out;
  for (const auto& t : join.requests) {
    const auto it = by_id.find(t.observation_id);
    if (it == by_id.end() || !t.server_prefill_ms) continue;
    const ledger::LedgerRecord& r = *it->second;
    if (r.outcome != "ok") continue;
    report::EngineTimes e;
    e.prefill_ms = *t.server_prefill_ms;
    e.queue_ms = t.server_queue_ms;
    if (t.client_ttft_ms) {
      e.ttft_ms = *t.client_ttft_ms;
      e.ttfb_ms = r.ttfb_ms;
      e.outside_ms = t.outside_ttft_ms;
    } else if ((!r.stream || ledger::began_with_tool_call(r.first_output)) && r.e2e_ms && t.server_decode_ms) {
      // Not streamed, or a tool call first (its first event dates no first token): the first token
      // as the engine timed its decode, and outside the engine what the line's e2e holds beyond the
      // engine's (docs/REPORT.md "Requests not streamed", "Tool calls first").
      e.not_streamed = true;
      e.ttft_ms = *r.e2e_ms - *t.server_decode_ms;
      e.outside_ms = t.outside_e2e_ms;
      if (r.completion_tokens && *r.completion_tokens >= 2) {
        e.decode_per_token_ms = *t.server_decode_ms / static_cast<double>(*r.completion_tokens - 1);
      }
    } else {
      continue;
    }
    e.prefill_end_us = r.started_at_us + static_cast<std::int64_t>(e.ttft_ms * 1000);
    e.started_at_us = r.started_at_us;
    if (r.in_flight_at_start) e.in_flight = static_cast<double>(*r.in_flight_at_start);
    if (r.prompt_tokens) e.prompt_tokens = *r.prompt_tokens;
    out[std::string(report::group_key(ledger::view_of(r), by))].push_back(e);
  }
  return out;
}

// `--traces FILE`: the engine's spans joined to the report's lines (inside --since/--until), the
// server's queue/prefill/decode against what the client saw (docs/OTEL.md "Engine spans").
bool engine_trace_split(const ReportArgs& a, const std::vector<std::string>& files, report::ReportInput& in) {
  const auto text = read_input_file(a.traces, "report --traces");
  if (!text) return false;
  const auto traces = otel::read_otlp_json_traces(*text);
  for (const auto& p : traces.problems) std::cerr << "modelperfobs report: warning: " << a.traces << ": " << p << "\n";
  std::vector<ledger::LedgerRecord> records;
  for (const auto& f : files) {
    const auto bytes = read_text_file(f);
    if (!bytes) continue;  // load_ledgers said so already
    for (auto& r : ledger::read_ledger(*bytes).records) {
      if (in.options.since_us && r.started_at_us < *in.options.since_us) continue;
      if (in.options.until_us && r.started_at_us >= *in.options.until_us) continue;
      records.push_back(std::move(r));
    }
  }
  const auto join = attribution::join_engine_traces(records, traces.spans);
  in.options.traced = traced_times(records, join, in.options.by);
  in.options.traced_source = "vLLM spans (gen_ai.latency.time_in_queue, time_in_model_prefill)";
  in.engine_trace_md = attribution::render_trace_join_md(join);
  in.engine_trace_json = attribution::render_trace_join_result_json(join);
  in.engine_trace_html = attribution::render_trace_join_html(join);
  return true;
}

// The span of the requests the report reads (inside --since/--until): the first one's start to
// the last one's end; nullopt without a request.
std::optional<std::pair<std::int64_t, std::int64_t>> requests_span(const report::RowTable& table) {
  std::optional<std::pair<std::int64_t, std::int64_t>> span;
  for (const auto* groups : {&table.groups(), &table.others()}) {
    for (const auto& [key, rows] : *groups) {
      for (const report::Row* r : rows) {
        const std::int64_t end = r->ended_at_us.value_or(r->started_at_us);
        if (!span) span = std::pair(r->started_at_us, end);
        span->first = std::min(span->first, r->started_at_us);
        span->second = std::max(span->second, end);
      }
    }
  }
  return span;
}

// The engine's own numbers over the report's window, from the scrape file the proxy wrote beside
// the ledger (`proxy --scrape`) or --scrapes: speculative-decoding acceptance, the queue and load
// gauges, the queue-time histogram and preemptions. The scrapes are those inside --since/--until,
// and of those, the ones that bracket the requests read (the last at or before the first request's
// start to the first at or after the last one's end): a proxy that scraped on for an hour after
// its traffic would otherwise dilute the gauges' time-weighted means and shares with the idle
// hour. Absent file, or nothing of these: nothing said.
std::optional<report::EngineEvidence> engine_evidence(const ReportArgs& a, const std::vector<std::string>& files,
                                                      const report::Options& opts, const report::RowTable& table) {
  if (a.scrapes == "none") return std::nullopt;
  std::string path = a.scrapes;
  if (path.empty()) {
    if (files.size() != 1 || files[0] == "-") return std::nullopt;
    path = scrape::snapshots_path_for(files[0]);
    if (!std::filesystem::exists(path)) return std::nullopt;
  }
  auto text = read_text_file(path);
  if (!text) {
    std::cerr << "modelperfobs report: cannot read the scrape file " << path << "; engine evidence left out\n";
    return std::nullopt;
  }
  auto read = scrape::read_snapshots(*text);
  std::vector<scrape::Snapshot> window;
  for (auto& s : read.snapshots) {
    if (opts.since_us && s.started_at_us < *opts.since_us) continue;
    if (opts.until_us && s.started_at_us >= *opts.until_us) continue;
    window.push_back(std::move(s));
  }
  if (const auto span = requests_span(table); span && !window.empty()) {
    std::size_t lo = 0, hi = window.size() - 1;
    for (std::size_t i = 0; i < window.size(); ++i) {
      if (window[i].started_at_us <= span->first) lo = i;
    }
    for (std::size_t i = window.size(); i-- > lo;) {
      if (window[i].started_at_us >= span->second) hi = i;
    }
    window.erase(window.begin() + static_cast<std::ptrdiff_t>(hi) + 1, window.end());
    window.erase(window.begin(), window.begin() + static_cast<std::ptrdiff_t>(lo));
  }
  auto engine = live::engine_window(window);
  if (!engine.evidence && !engine.no_window.empty()) {
    std::cerr << "modelperfobs report: the engine's scrapes form no window (" << engine.no_window
              << "); engine evidence left out\n";
  }
  if (!engine.caution.empty())
    std::cerr << "modelperfobs report: warning: the engine's scrapes: " << engine.caution << "\n";
  return std::move(engine.evidence);
}

// Files named, globs expanded, "-" for stdin. Missing files are an error, with their names.
bool expand_inputs(const std::vector<std::string>& given, std::vector<std::string>& out) {
  for (const auto& g : given) {
    if (g == "-") {
      out.push_back(g);
      continue;
    }
    glob_t gl{};
    const int rc = ::glob(g.c_str(), GLOB_NOCHECK, nullptr, &gl);
    for (std::size_t i = 0; rc == 0 && i < gl.gl_pathc; ++i) out.emplace_back(gl.gl_pathv[i]);
    globfree(&gl);
  }
  return !out.empty();
}

// `--baseline OLD...`: each group's change against the baseline run, with intervals and verdicts;
// whether a --max-regression bound is crossed by a significant change, and whether one could not be
// judged (not enough data).
struct Gate {
  bool regressed = false, not_judged = false;
};
Result<Gate> compare_with_baseline(const ReportArgs& a, report::ReportInput& in,
                                   const std::vector<std::string>& new_files) {
  auto bounds = report::parse_regression_bounds(a.max_regression);
  if (!bounds) return bounds.error();
  std::vector<std::string> files;
  if (!expand_inputs(a.baseline, files)) return make_error(errc::kReportBaseline, "--baseline: no such file");
  report::Options all;  // the baseline is compared whole: --since/--until choose the new run's window
  all.by = in.options.by;
  // One table a run: all the baseline's files make one run, or with --reruns each file is one (and
  // each of the new side's files too, read again apart).
  std::vector<report::ReportInput> base(a.reruns ? files.size() : 1), next(a.reruns ? new_files.size() : 0);
  for (std::size_t i = 0; i < base.size(); ++i) {
    base[i].options.by = in.options.by;
    const auto these = a.reruns ? std::vector<std::string>{files[i]} : files;
    if (auto st = load_ledgers(these, base[i]); !st) return st.error();
    if (base[i].table.size() == 0) {
      return make_error(errc::kReportBaseline,
                        fmt::format("--baseline: no observations in {}", fmt::join(these, ", ")));
    }
  }
  for (std::size_t i = 0; i < next.size(); ++i) {
    next[i].options = in.options;
    if (auto st = load_ledgers({new_files[i]}, next[i], false); !st) return st.error();
  }
  std::vector<report::GroupRows> base_rows, next_rows;
  for (auto& b : base) base_rows.push_back(report::rows_by_group(b.table, all));
  if (next.empty()) next_rows.push_back(report::rows_by_group(in.table, in.options));
  for (auto& n : next) next_rows.push_back(report::rows_by_group(n.table, in.options));
  std::vector<const report::GroupRows*> base_runs, next_runs;
  for (const auto& r : base_rows) base_runs.push_back(&r);
  for (const auto& r : next_rows) next_runs.push_back(&r);
  const auto comparison = report::compare_reruns(base_runs, next_runs, {a.resamples, a.seed, 0.05}, *bounds);
  in.comparison_md = report::render_comparison_md(comparison);
  in.comparison_json = report::render_comparison_json(comparison);
  in.comparison_html = report::render_comparison_html(comparison);
  return Gate{!comparison.gate_failures.empty(), !comparison.ungated.empty()};
}

// The options that need parsing: --by, --since/--until, --slo (usage errors exit 2).
int parse_report_options(const ReportArgs& a, report::ReportInput& in, std::vector<report::Slo>& slos) {
  auto by = report::parse_group_by(a.by);
  if (!by) {
    std::cerr << "modelperfobs report: " << by.error().message << "\n";
    return 2;
  }
  in.options.by = *by;
  for (const auto& [flag, text, field] :
       {std::tuple{"--since", a.since, &in.options.since_us}, std::tuple{"--until", a.until, &in.options.until_us}}) {
    if (text.empty()) continue;
    auto t = parse_rfc3339(text);
    if (!t) {
      std::cerr << "modelperfobs report: " << flag << ": " << t.error().message << "\n";
      return 2;
    }
    *field = *t;
  }
  if (!a.slo.empty()) {
    auto parsed = report::parse_slos(a.slo);
    if (!parsed) {
      std::cerr << "modelperfobs report: " << parsed.error().message << "\n";
      return 2;
    }
    slos = *parsed;
  }
  return 0;
}

std::string render(const ReportArgs& a, const report::ReportInput& in) {
  if (a.format == "md") return report::render_markdown(in);
  if (a.format == "json") return report::render_json(in);
  if (a.format == "csv") return report::render_csv(in);
  return report::render_html(in);
}

// The exit code from the SLOs and the baseline gate (docs/EXIT_CODES.md): 3 violated or regressed,
// 4 when something could not be judged, 0 otherwise; said on stderr.
int report_exit_code(const report::ReportInput& in, bool regressed, bool ungated) {
  bool violated = false, unmeasured = false;
  for (const auto& s : in.slos) {
    violated = violated || (s.violated && s.value);
    unmeasured = unmeasured || !s.value;
  }
  if (violated) std::cerr << "modelperfobs report: SLO violated (exit 3)\n";
  if (regressed) std::cerr << "modelperfobs report: a significant regression beyond --max-regression (exit 3)\n";
  if (violated || regressed) return exit_code::kViolated;
  if (unmeasured || ungated) {
    std::cerr << "modelperfobs report: could not judge "
              << (unmeasured ? "an SLO (not measurable from these lines)"
                             : "a --max-regression bound (not enough data)")
              << " (exit 4)\n";
    return exit_code::kCannotJudge;
  }
  return exit_code::kOk;
}

int run(const ReportArgs& a) {
  report::ReportInput in;
  std::vector<report::Slo> slos;
  if (int rc = parse_report_options(a, in, slos)) return rc;
  std::vector<std::string> files;
  if (!expand_inputs(a.inputs, files)) {
    std::cerr << "modelperfobs report: no input: pass --input FILE (globs and - for stdin accepted)\n";
    return 2;
  }
  if (auto st = load_ledgers(files, in); !st) {
    std::cerr << "modelperfobs report: " << st.error().message << "\n";
    return 1;
  }
  in.options.engine = engine_evidence(a, files, in.options, in.table);
  if (!a.traces.empty()) {
    if (std::find(files.begin(), files.end(), "-") != files.end()) {
      std::cerr << "modelperfobs report: --traces reads the ledger files again; give them by name, not -\n";
      return 2;
    }
    if (!engine_trace_split(a, files, in)) return 1;
  }
  if (in.table.size() == 0) {
    std::cerr << "modelperfobs report: no observations in " << files.size() << " input(s)\n";
    return 1;
  }
  in.groups = report::analyse(in.table, in.options);
  in.others = report::analyse_others(in.table, in.options);
  if (in.groups.empty()) {
    if (in.others.empty()) {
      std::cerr << "modelperfobs report: no observations inside --since/--until\n";
      return 1;
    }
    // Read, but nothing that generates output (an idle engine's health checks, model lists,
    // tokenizer calls): nothing to rank, which is not a verdict.
    std::size_t calls = 0;
    std::string kinds;
    for (const auto& o : in.others) {
      calls += o.requests;
      kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", o.operation, o.requests);
    }
    std::cerr << fmt::format(
        "modelperfobs report: none of the {} observations{} is a request that generates output ({}): nothing "
        "to rank, could not judge (exit 4); the report ranks chat, completions, Responses and Messages requests\n",
        calls, in.options.since_us || in.options.until_us ? " inside --since/--until" : "", kinds);
    return exit_code::kCannotJudge;
  }
  in.slos = report::evaluate_slos(in.groups, slos);
  bool regressed = false, ungated = false;
  if (!a.baseline.empty()) {
    auto r = compare_with_baseline(a, in, files);
    if (!r) {
      std::cerr << "modelperfobs report: " << r.error().message << "\n";
      return exit_code_of(r.error());  // a malformed --max-regression is a usage error (docs/ERRORS.md)
    }
    regressed = r->regressed;
    ungated = r->not_judged;
  } else if (!a.max_regression.empty()) {
    std::cerr << "modelperfobs report: --max-regression needs --baseline OLD\n";
    return 2;
  } else if (a.reruns) {
    std::cerr << "modelperfobs report: --reruns needs --baseline OLD (each side's ledgers, one a run)\n";
    return 2;
  }
  in.created_at_us = document_time_us();
  in.tool_version = MPO_VERSION;
  const std::string text = render(a, in);
  if (!write_output(a.output, text, "report")) return exit_code::kFailed;
  return report_exit_code(in, regressed, ungated);
}

}  // namespace

std::function<int()> setup_report(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  // Not ->required(): CLI11 would mark the positional and the flag REQUIRED both; run() says what is missing.
  app.add_option("--input,input", a->inputs, "ledger files or globs (ours or fak's lines); - for stdin (required)")
      ->type_name("FILE");
  app.add_option("--by", a->by,
                 "group by model, backend, operation, path or sweep_point (sweep ledgers: one group per load point)")
      ->check(CLI::IsMember({"model", "backend", "operation", "path", "sweep_point"}))
      ->capture_default_str();
  app.add_option("--since", a->since, "only requests started at or after this RFC 3339 time");
  app.add_option("--until", a->until, "only requests started before this RFC 3339 time");
  app.add_option("--format", a->format, "md, json (modelperfobs.report.v1), csv, or html (self-contained, SVG charts)")
      ->check(CLI::IsMember({"md", "json", "csv", "html"}))
      ->capture_default_str();
  app.add_option("--output", a->output, "write here instead of stdout");
  app.add_option("--scrapes", a->scrapes,
                 "the engine's /metrics snapshots over the same run (default: <ledger>.scrape.jsonl beside a single "
                 "ledger, as `proxy --scrape` writes it; none: do not read); speculative-decoding acceptance joins "
                 "the decode evidence");
  app.add_option("--traces", a->traces,
                 "engine spans as OTLP/JSON (the collector's file exporter; vLLM or simulate "
                 "--otlp-traces-endpoint): adds each request's server queue/prefill/decode against its TTFT and e2e, "
                 "joined by trace id")
      ->check(CLI::ExistingFile);
  app.add_option("--baseline", a->baseline,
                 "ledger(s) of an earlier run: per group, the change of TTFT/TPOT/ITL/e2e p50/p90/p95/p99 and of the "
                 "error rate, each with a bootstrap interval and a verdict (better, worse, no significant change)")
      ->check(CLI::ExistingFile);
  app.add_flag("--reruns", a->reruns,
               "with --baseline: each ledger file on either side is one rerun of the same workload (sweep --repeat "
               "writes them); each interval then resamples the runs and then the requests within them, so it "
               "carries how much reruns differ");
  app.add_option("--max-regression", a->max_regression,
                 "with --baseline, e.g. ttft_p95_ms=10%,e2e_p99_ms=200,error_rate=0.5pp: exit 3 when a change is "
                 "significant and beyond its bound (a CI gate for an engine or config upgrade)");
  app.add_option("--resamples", a->resamples, "bootstrap resamples for --baseline")
      ->capture_default_str()
      ->check(CLI::Range(100, 100000));
  app.add_option("--seed", a->seed, "bootstrap seed for --baseline (same seed, same intervals)")->capture_default_str();
  app.add_option("--slo", a->slo, "e.g. ttft_p95_ms=1000,tpot_p95_ms=100,error_rate=0.01; exit 3 when violated");
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
