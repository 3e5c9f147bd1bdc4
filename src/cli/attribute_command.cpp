// `modelperfobs attribute`: server counter deltas joined to the requests of a ledger, graded by
// what the evidence proves; `--probe` makes its own clean windows (scrape, one request, scrape).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <iostream>

#include "attribution/adapter.hpp"
#include "attribution/engine_trace.hpp"
#include "attribution/render.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/files.hpp"
#include "core/clock.hpp"
#include "core/duration.hpp"
#include "core/go_json.hpp"
#include "core/json.hpp"
#include "core/json_diff.hpp"
#include "core/time.hpp"
#include "ledger/reader.hpp"
#include "loadgen/api.hpp"
#include "loadgen/driver.hpp"
#include "loadgen/workload.hpp"
#include "net/backend_url.hpp"
#include "otel/trace_file.hpp"
#include "present/page.hpp"
#include "scrape/fetch.hpp"
#include "scrape/snapshot_reader.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

struct AttributeArgs {
  std::vector<std::string> ledgers;
  std::vector<std::string> scrapes;
  std::string window = "auto", max_scrape_age = "0s", format = "md", output;
  std::string probe, metrics_url, model = "", prompt, api = "chat", verify, traces;
  int repeat = 2;
  std::int64_t max_tokens = 16;
};

int usage_error(const std::string& m) {
  std::cerr << "modelperfobs attribute: " << m << "\n";
  return 2;
}

ledger::LedgerRecord record_of(const ledger::Observation& o) {
  ledger::LedgerRecord r;
  r.observation_id = o.observation_id;
  r.started_at_us = o.started_at_us;
  r.ended_at_us = o.ended_at_us;
  r.outcome = o.outcome;
  r.http_status = o.http_status;
  r.error_message = o.error_message;
  r.cached_prompt_tokens = o.cached_prompt_tokens;
  if (!o.server_timings.empty()) r.server_timings = o.server_timings;
  r.prompt_tokens = o.prompt_tokens;
  r.completion_tokens = o.completion_tokens;
  return r;
}

// Scrape, send one request, scrape; `repeat` times with the same prompt, one after another.
int run_probe(const AttributeArgs& a, std::vector<scrape::Snapshot>& snaps,
              std::vector<ledger::LedgerRecord>& records) {
  auto base = net::parse_backend_url(a.probe);
  if (!base) return usage_error("--probe: " + base.error().message);
  if (a.model.empty()) return usage_error("--probe needs --model (the model to request)");
  std::string metrics = a.metrics_url.empty() ? base->origin + "/metrics" : a.metrics_url;
  auto murl = scrape::parse_metrics_url(metrics);
  if (!murl) return usage_error("--metrics-url: " + murl.error().message);
  scrape::Fetcher fetcher(*murl, scrape::FetchOptions{});
  loadgen::Target target;
  target.url = *base;
  target.model = a.model;
  target.run_id = "attribute-probe";
  target.ignore_eos = true;
  target.api = *loadgen::parse_api(a.api);  // checked by CLI11
  loadgen::Driver driver(
      target, [&](const ledger::Observation& o) { records.push_back(record_of(o)); }, nullptr);
  loadgen::ServingRequest req;
  req.id = "probe";
  req.messages = {{"user", a.prompt.empty() ? loadgen::synthetic_words(64, 7) : a.prompt}};
  req.max_output_tokens = a.max_tokens;
  boost::asio::io_context io;
  std::exception_ptr failure;
  std::string probe_failed;  // a window is never graded from a failed probe
  boost::asio::co_spawn(
      io,
      [&]() -> boost::asio::awaitable<void> {
        std::uint64_t seq = 0;
        for (int i = 0; i < a.repeat; ++i) {
          if (i == 0) snaps.push_back(co_await fetcher.scrape(++seq, SystemClock::instance().wall_us()));
          loadgen::PointPlan plan;
          plan.coordinate = 1;
          plan.requests = {req};
          plan.label = fmt::format("probe {}", i + 1);
          co_await driver.run_point(plan);
          if (records.empty() || records.back().outcome != "ok") {
            const auto* r = records.empty() ? nullptr : &records.back();
            probe_failed = fmt::format(
                "probe request {} to {}{} {}{}{}", i + 1, base->origin, base->target_for(loadgen::api_path(target.api)),
                r && r->http_status ? fmt::format("answered HTTP {}", *r->http_status) : std::string("got no answer"),
                r ? fmt::format(" ({}{})", r->outcome, r->error_message ? ": " + *r->error_message : "") : "",
                net::openai_base_hint(*base));
            co_return;
          }
          snaps.push_back(co_await fetcher.scrape(++seq, SystemClock::instance().wall_us()));
        }
      },
      [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
  if (!probe_failed.empty()) {
    std::cerr << "modelperfobs attribute: " << probe_failed << "; no window is graded from a failed probe\n";
    return 1;
  }
  return 0;
}

// Reads the ledgers and snapshots files (default: each ledger's <ledger>.scrape.jsonl) into
// `records` and `snaps`, and names them with their digests in `inputs`. 0, or the exit code.
int read_inputs(const std::vector<std::string>& ledgers, std::vector<std::string> scrape_files,
                std::vector<ledger::LedgerRecord>& records, std::vector<scrape::Snapshot>& snaps,
                attribution::RunInputs& inputs, bool quiet) {
  for (const auto& path : ledgers) {
    // Read once: the digest is of the very bytes graded.
    const auto bytes = read_input_file(path, "attribute");
    if (!bytes) return 1;
    auto read = ledger::read_ledger(*bytes);
    if (read.invalid_lines && !quiet)
      std::cerr << fmt::format("modelperfobs attribute: warning: {}: {} invalid line(s) skipped\n", path,
                               read.invalid_lines);
    for (auto& r : read.records) records.push_back(std::move(r));
    inputs.ledger_sha256.push_back(sha256_digest(*bytes));
  }
  if (scrape_files.empty()) {
    for (const auto& l : ledgers) scrape_files.push_back(scrape::snapshots_path_for(l));
  }
  for (const auto& f : scrape_files) {
    const auto text = read_text_file(f);
    if (!text) {
      std::cerr << "modelperfobs attribute: cannot read snapshots " << f
                << " (record them with `proxy --scrape URL` or `sweep --metrics-url URL`, which write "
                   "<ledger>.scrape.jsonl, or give --scrapes FILE)\n";
      return 1;
    }
    auto read = scrape::read_snapshots(*text);
    if (!quiet)
      for (const auto& p : read.problems) std::cerr << "modelperfobs attribute: warning: " << f << ": " << p << "\n";
    for (auto& s : read.snapshots) snaps.push_back(std::move(s));
    inputs.scrapes_sha256.push_back(sha256_digest(*text));
  }
  inputs.ledger = fmt::format("{}", fmt::join(ledgers, ","));
  inputs.scrapes = fmt::format("{}", fmt::join(scrape_files, ","));
  return 0;
}

std::vector<std::string> split_paths(std::string_view s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto c = s.find(',', pos);
    if (c == std::string_view::npos) c = s.size();
    out.emplace_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  return out;
}

// `attribute --verify FILE`: grades again from the files the JSON names (their digests must
// match) with its window and scrape age, and compares every field; created_at and the tool's
// version are when and by what it was written, taken as written.
int run_verify(const std::string& path) {
  const auto text = read_input_file(path, "attribute");
  if (!text) return 1;
  auto doc = parse_exact_json(*text);
  const boost::json::object* root = doc && doc->is_object() ? &doc->as_object() : nullptr;
  const boost::json::object* in = root ? json_object(*root, "inputs") : nullptr;
  auto refuse = [](const std::string& why) {
    std::cout << "attribute verify: FAILED: " << why << "\n";
    return 1;
  };
  if (!root || json_string(*root, "schema").value_or("") != attribution::kSchema || !in) {
    return refuse(fmt::format("not a {} document with inputs", attribution::kSchema));
  }
  if (in->contains("probe")) {
    return refuse(
        "a --probe run keeps no ledger or snapshots to grade again; record them (proxy --scrape) and grade the "
        "files instead");
  }
  auto choice = attribution::parse_window(json_string(*in, "window").value_or("auto"));
  if (!choice) return refuse("inputs.window: " + choice.error().message);
  const double age = json_double(*in, "max_scrape_age_s").value_or(0);
  std::vector<ledger::LedgerRecord> records;
  std::vector<scrape::Snapshot> snaps;
  attribution::RunInputs again;
  if (int rc = read_inputs(split_paths(json_string(*in, "ledger").value_or("")),
                           split_paths(json_string(*in, "scrapes").value_or("")), records, snaps, again, true)) {
    return rc;
  }
  again.window = std::string(json_string(*in, "window").value_or("auto"));
  again.max_scrape_age_s = age;
  again.created_at_us = parse_rfc3339(json_string(*root, "created_at").value_or("")).value_or(0);
  if (const auto* tool = json_object(*root, "tool")) again.tool_version = json_string(*tool, "version").value_or("");
  // A document without inputs.calls_left_out was graded from every line (before 2026-12-06).
  const bool every_line = !in->contains("calls_left_out");
  const auto run =
      attribution::attribute_run(std::move(snaps), records, *choice, static_cast<std::int64_t>(age * 1e6), every_line);
  auto derived = parse_exact_json(attribution::attribution_json(run, again));
  const auto diffs = json_differences(*doc, *derived);
  if (!diffs.empty()) {
    std::cout << "attribute verify: FAILED: " << describe(diffs.front())
              << (diffs.size() > 1 ? fmt::format(" (and {} more)", diffs.size() - 1) : "") << "\n";
    for (const auto& d : diffs) std::cout << "  " << describe(d) << "\n";
    return exit_code::kViolated;
  }
  std::cout << fmt::format("attribute verify: OK: {} windows graded again from {} requests and {} snapshots\n",
                           run.windows.size(), run.requests.size(), run.snapshots.size());
  return 0;
}

// `attribute --ledger L --traces FILE`: engine spans (OTLP/JSON, the collector's file exporter)
// joined to the ledger's lines by trace context (docs/OTEL.md "Engine spans").
int run_traces(const AttributeArgs& a) {
  if (a.ledgers.empty()) return usage_error("--traces needs --ledger FILE: the lines to join the engine spans to");
  if (a.format == "fak") return usage_error("--traces: fak has no format for engine spans; use md or json");
  std::vector<ledger::LedgerRecord> records;
  std::string inputs = "{\"ledgers\":[";
  for (std::size_t i = 0; i < a.ledgers.size(); ++i) {
    const auto bytes = read_input_file(a.ledgers[i], "attribute");
    if (!bytes) return 1;
    auto read = ledger::read_ledger(*bytes);
    for (auto& r : read.records) records.push_back(std::move(r));
    inputs += fmt::format("{}{{\"path\":{},\"sha256\":{}}}", i > 0 ? "," : "", json_quote(a.ledgers[i]),
                          json_quote(sha256_digest(*bytes)));
  }
  const auto text = read_input_file(a.traces, "attribute");
  if (!text) return 1;
  const auto traces = otel::read_otlp_json_traces(*text);
  for (const auto& p : traces.problems)
    std::cerr << "modelperfobs attribute: warning: " << a.traces << ": " << p << "\n";
  if (traces.lines > 0 && traces.bad_lines == traces.lines) {
    std::cerr << "modelperfobs attribute: " << a.traces
              << " holds no OTLP/JSON traces (expected the collector's file exporter output: one "
                 "{\"resourceSpans\":[...]} per line)\n";
    return 1;
  }
  inputs += fmt::format("],\"traces\":{{\"path\":{},\"sha256\":{}}},\"tool_version\":{}}}", json_quote(a.traces),
                        json_quote(sha256_digest(*text)), json_quote(MPO_VERSION));
  const auto join = attribution::join_engine_traces(records, traces.spans);
  std::string out;
  if (a.format == "json") {
    out = attribution::render_trace_join_json(join, inputs, document_time_us(), MPO_VERSION);
  } else if (a.format == "html") {
    present::Header h;
    h.title = "Engine spans joined to requests";
    h.measured =
        "The engine's own spans (OTLP/JSON) joined to the proxy's ledger lines by trace context: where each "
        "request's time went inside the engine.";
    h.facts = {{"ledger", fmt::format("{}", fmt::join(a.ledgers, ", "))}, {"traces", a.traces}};
    present::Page page(std::move(h));
    page.section("Engine spans joined to requests", attribution::render_trace_join_html(join));
    out = page.html();
  } else {
    out = attribution::render_trace_join_md(join);
  }
  if (!write_output(a.output, out, "attribute")) return 1;
  return join.requests.empty() ? 1 : 0;
}

int run(const AttributeArgs& a) {
  if (!a.verify.empty()) return run_verify(a.verify);
  if (!a.traces.empty()) return run_traces(a);
  if (a.probe.empty() == a.ledgers.empty())
    return usage_error("give --ledger FILE (with its snapshots), --probe URL, or --verify FILE");
  auto choice = attribution::parse_window(a.window);
  if (!choice) return usage_error(choice.error().message);
  auto age = parse_duration_s(a.max_scrape_age);
  if (!age || *age < 0) return usage_error("--max-scrape-age: give a duration such as 30s");
  if (a.repeat < 1) return usage_error("--repeat must be at least 1");
  std::vector<scrape::Snapshot> snaps;
  std::vector<ledger::LedgerRecord> records;
  attribution::RunInputs inputs;
  if (!a.probe.empty()) {
    if (int rc = run_probe(a, snaps, records)) return rc;
    inputs.probe = a.probe;
  } else if (int rc = read_inputs(a.ledgers, a.scrapes, records, snaps, inputs, false)) {
    return rc;
  }
  inputs.window = a.window;
  inputs.max_scrape_age_s = *age;
  inputs.tool_version = MPO_VERSION;
  inputs.created_at_us = document_time_us();
  const auto run =
      attribution::attribute_run(std::move(snaps), records, *choice, static_cast<std::int64_t>(*age * 1e6));
  std::string text;
  if (a.format == "json")
    text = attribution::attribution_json(run, inputs);
  else if (a.format == "fak")
    text = attribution::fak_json_lines(run);
  else if (a.format == "html")
    text = attribution::attribution_html(run, inputs);
  else
    text = attribution::attribution_markdown(run, inputs);
  if (!write_output(a.output, text, "attribute")) return 1;
  if (run.windows.empty()) {
    std::cerr << "modelperfobs attribute: no window to grade: fewer than two snapshots around the requests\n";
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> setup_attribute(CLI::App& app) {
  auto a = std::make_shared<AttributeArgs>();
  app.add_option("--ledger,ledger", a->ledgers,
                 "ledger(s) of the requests (proxy --ledger, sweep); the files alone or after --ledger")
      ->check(CLI::ExistingFile);
  app.add_option("--scrapes", a->scrapes,
                 "modelperfobs.scrape.v1 snapshots (default: <ledger>.scrape.jsonl from proxy --scrape)")
      ->check(CLI::ExistingFile);
  app.add_option("--window", a->window,
                 "auto (consecutive snapshots), per-request (each request's enclosing snapshots), or FROM,TO")
      ->capture_default_str();
  app.add_option("--max-scrape-age", a->max_scrape_age,
                 "a window whose requests were observed longer than this after its last scrape is stale (0: no check)")
      ->capture_default_str();
  app.add_option("--format", a->format,
                 "md, json (modelperfobs.attribution.v1), fak (fak-model-perf-attribution/1, one line per window) "
                 "or html (one self-contained page)")
      ->check(CLI::IsMember({"md", "json", "fak", "html"}))
      ->capture_default_str();
  app.add_option("--output", a->output, "write here instead of stdout");
  app.add_option("--probe", a->probe,
                 "make clean windows: scrape, one request to this OpenAI base URL, scrape (http://host:port/v1); "
                 "a probe request that fails stops the run with its status and URL, exit 1");
  app.add_option("--metrics-url", a->metrics_url,
                 "--probe: the engine's metrics (default: the probe origin's /metrics)");
  app.add_option("--model", a->model, "--probe: the model to request");
  app.add_option("--api", a->api, std::string("--probe: ") + loadgen::kApiHelp)
      ->check(CLI::IsMember(loadgen::kApiNames))
      ->capture_default_str();
  app.add_option("--prompt", a->prompt, "--probe: the prompt (default: 64 fixed words)");
  app.add_option("--repeat", a->repeat,
                 "--probe: requests, one after another, each in its own window (the same prompt: the second shows a "
                 "prefix-cache hit)")
      ->capture_default_str();
  app.add_option("--max-tokens", a->max_tokens, "--probe: output tokens per request")->capture_default_str();
  app.add_option("--traces", a->traces,
                 "engine spans as OTLP/JSON (the collector's file exporter; vLLM --otlp-traces-endpoint, simulate "
                 "--otlp-traces-endpoint) joined to the --ledger lines by trace id: per request the server's queue, "
                 "prefill and decode against the TTFT and e2e seen through the proxy (request-correlated, source "
                 "engine-trace); md or json")
      ->check(CLI::ExistingFile);
  app.add_option("--verify", a->verify,
                 "grade again from the files a --format json result names (their sha256 must match) and compare "
                 "every field; exit 1 on the first difference, named")
      ->check(CLI::ExistingFile);
  app.footer(
      "Exit codes (docs/EXIT_CODES.md): 0 graded (or verified, or engine spans joined); 1 no window to grade, no "
      "engine span joined, a file cannot be read, or a probe request failed; 2 usage error; 3 --verify found a "
      "difference (each one listed).");
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
