// `modelperfobs cache-state-bench`: proved cache-state transitions, hermetic (this project's
// in-process prefix cache) or against a vLLM-compatible engine; `--verify FILE` re-checks a report.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cachestate/engine_backend.hpp"
#include "cachestate/receipt.hpp"
#include "cachestate/render_html.hpp"
#include "cachestate/runner.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/files.hpp"
#include "core/clock.hpp"
#include "core/duration.hpp"
#include "scrape/fetch.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

struct CacheStateArgs {
  std::string output, html, verify, backend = "in-process", url, metrics_url, model, layer, api = "chat";
  std::vector<std::string> transitions;
  std::size_t prefix_tokens = 64, capacity = 4;
  std::string ttl = "60s";
};

int usage_error(const std::string& m) {
  std::cerr << "modelperfobs cache-state-bench: " << m << "\n";
  return 2;
}

std::string summary(const cachestate::Report& r) {
  int proved = 0, unsupported = 0;
  for (const auto& a : r.arms) {
    proved += a.receipt.result == "proved";
    unsupported += a.receipt.result == "unsupported";
  }
  return fmt::format("arms={} proved={} unsupported={} provenance={} scope={} verdict={}", r.arms.size(), proved,
                     unsupported, r.provenance.evidence_kind, r.provenance.scope, r.verdict);
}

int run_verify(const std::string& path) {
  const auto text = read_input_file(path, "cache-state-bench");
  if (!text) return 1;
  auto r = cachestate::parse_report(*text);
  if (!r) {
    std::cout << "STATE_TRANSITION_WITNESS_INVALID " << r.error().message << "\n";
    return 1;
  }
  const auto problems = cachestate::validate_report(*r);
  if (!problems.empty()) {
    std::cout << "STATE_TRANSITION_WITNESS_INVALID " << problems.front()
              << (problems.size() > 1 ? fmt::format(" (and {} more)", problems.size() - 1) : "") << "\n";
    return exit_code::kViolated;
  }
  if (r->verdict != "admitted") {
    std::string excluded;
    for (const auto& a : r->arms) {
      if (!a.measurement_included && a.receipt.result != "unsupported")
        excluded += " " + a.label + "=" + a.invalid_reason;
    }
    std::cout << "STATE_TRANSITION_WITNESS_EXCLUDED " << summary(*r) << excluded << "\n";
    return exit_code::kViolated;
  }
  std::cout << "STATE_TRANSITION_WITNESS_OK " << summary(*r) << "\n";
  if (r->schema == cachestate::kFakReportSchema) {
    std::cout << "  note: a fak report, verified under fak's rules (docs/CACHE_STATE.md)\n";
    for (const auto& n : cachestate::stricter_than_fak(*r)) std::cout << "  note: " << n << "\n";
  }
  return 0;
}

// The backend under test: the in-process prefix cache or a vLLM-compatible engine, with its default
// layer, its pinned prefix and what the provenance says of it.
struct BackendSetup {
  std::unique_ptr<cachestate::Backend> backend;
  std::string layer;
  std::vector<std::int64_t> pinned;
};

int backend_setup(const CacheStateArgs& a, cachestate::Provenance& prov, BackendSetup& b) {
  std::unique_ptr<cachestate::Backend>& backend = b.backend;
  std::string& layer = b.layer;
  std::vector<std::int64_t>& pinned = b.pinned;
  if (a.backend == "in-process") {
    auto ttl = parse_duration_s(a.ttl);
    if (!ttl || *ttl < 0) return usage_error("--ttl: give a duration such as 60s (0: no expiry)");
    if (a.capacity < 1) return usage_error("--capacity must be at least 1");
    backend = std::make_unique<cachestate::InProcessBackend>(
        cachestate::InProcessBackend::Options{a.capacity, static_cast<std::int64_t>(*ttl * 1e6)},
        SystemClock::instance());
    if (layer.empty()) layer = "fak_workflow_cache";
    pinned = cachestate::kPinnedPrefix;
    prov.scope = "in_process_prefix_cache";
    prov.external_backend_claims = false;
    prov.note =
        "Observed from this project's in-process token-prefix cache (LRU, TTL on an injected clock); it does "
        "not claim external KV or provider-cache behavior.";
  } else if (a.backend == "vllm") {
    if (a.url.empty() || a.model.empty())
      return usage_error("--backend vllm needs --url (the OpenAI base URL) and --model");
    auto api = net::parse_backend_url(a.url);
    if (!api) return usage_error("--url: " + api.error().message);
    auto metrics = scrape::parse_metrics_url(a.metrics_url.empty() ? api->origin : a.metrics_url);
    if (!metrics) return usage_error("--metrics-url: " + metrics.error().message);
    if (a.prefix_tokens < 32) return usage_error("--prefix-tokens must be at least 32 (engines cache whole blocks)");
    auto engine = std::make_unique<cachestate::EngineBackend>(
        cachestate::EngineBackendOptions{*api, *metrics, a.model, 60, *loadgen::parse_api(a.api)});
    if (auto st = engine->check(); !st) {
      std::cerr << "modelperfobs cache-state-bench: " << st.error().message << "\n";
      return 1;
    }
    backend = std::move(engine);
    if (layer.empty()) layer = "process_local_kv";
    pinned = cachestate::engine_prefix(a.prefix_tokens);
    prov.scope = "engine_process_local_kv";
    prov.external_backend_claims = true;
    prov.note = fmt::format(
        "Observed from {} through its /metrics and the usage of pinned-prefix probes; counters "
        "the engine does not publish are absent, not zero.",
        a.url);
  } else {
    return usage_error("--backend is in-process or vllm");
  }
  return 0;
}

// Each arm's result on stderr, with the reasons no rerun can fix said in words.
void print_arms(const cachestate::Report& report) {
  for (const auto& arm : report.arms) {
    std::string why = arm.receipt.reason.empty() ? "" : " (" + arm.receipt.reason + ")";
    // A mechanism that failed says why here, not only in the report (issue 37: a 404 from
    // /reset_prefix_cache was only in the JSON).
    if (arm.receipt.result == "mechanism_failed" && !arm.receipt.mechanism.detail.empty()) {
      why = fmt::format(" ({}: {})", arm.receipt.mechanism.name, arm.receipt.mechanism.detail);
    }
    // The engine-side reasons an arm cannot be proved, said in words: no run can fix them.
    const auto& pre = arm.receipt.pre_metrics;
    if (arm.receipt.reason == "metrics_missing" && pre && !pre->requests) {
      why =
          " (metrics_missing: the engine's /metrics publishes no request counter, so requests from others "
          "cannot be excluded; llama.cpp has none)";
    } else if (arm.receipt.reason == "counter_reset" && pre && pre->counter_epoch.empty()) {
      why =
          " (counter_reset: the engine publishes no process start time, so a restart between the snapshots "
          "cannot be ruled out)";
    }
    std::cerr << fmt::format("  {:<20} {}{}\n", arm.label, arm.receipt.result, why);
  }
}

int run(const CacheStateArgs& a) {
  if (!a.verify.empty()) return run_verify(a.verify);
  std::vector<std::string> transitions = a.transitions;
  if (transitions.empty())
    transitions = {"cold_start", "warm_admit", "explicit_invalidate", "pressure_evict", "natural_expiry"};
  for (const auto& t : transitions) {
    if (std::find(std::begin(cachestate::kTransitions), std::end(cachestate::kTransitions), t) ==
        std::end(cachestate::kTransitions)) {
      return usage_error("unknown transition '" + t +
                         "': cold_start, warm_admit, explicit_invalidate, natural_expiry, pressure_evict");
    }
  }
  cachestate::Provenance prov;
  prov.evidence_kind = "observed";
  prov.tool_version = MPO_VERSION;
  std::ostringstream cmd;
  cmd << "modelperfobs cache-state-bench --backend " << a.backend;
  if (!a.url.empty()) cmd << " --url " << a.url;
  prov.command = cmd.str();
  BackendSetup b{nullptr, a.layer, {}};
  if (int rc = backend_setup(a, prov, b)) return rc;
  if (std::find(std::begin(cachestate::kLayers), std::end(cachestate::kLayers), b.layer) ==
      std::end(cachestate::kLayers)) {
    return usage_error("unknown layer '" + b.layer +
                       "': process_local_kv, external_shared_kv, provider_prompt_cache, fak_workflow_cache");
  }
  const auto report =
      cachestate::run_campaign(*b.backend, b.layer, b.pinned, transitions, prov, SystemClock::instance());
  const auto problems = cachestate::validate_report(report);
  if (!problems.empty()) {
    std::cerr << "modelperfobs cache-state-bench: the report does not validate: " << problems.front() << "\n";
    return 1;
  }
  const std::string text = cachestate::report_text(report);
  if (!write_output(a.output, text, "cache-state-bench")) return 1;
  if (!a.html.empty() && !write_output(a.html, cachestate::report_html(report), "cache-state-bench")) return 1;
  if (!a.output.empty() && a.output != "-") {
    std::cerr << "STATE_TRANSITION_WITNESS_WRITTEN path=" << a.output << " " << summary(report) << "\n";
  }
  print_arms(report);
  return report.verdict == "admitted" ? 0 : 1;
}

}  // namespace

std::function<int()> setup_cache_state(CLI::App& app) {
  auto a = std::make_shared<CacheStateArgs>();
  app.footer(
      "Exit codes (docs/EXIT_CODES.md): 0 the report was written and admitted (with --verify: holds); 3 --verify: "
      "it does not hold (a rule broken, or arms excluded); 1 the run's arms were not all proved, the file cannot be "
      "read or parsed, or --backend vllm's "
      "--url does not answer as an OpenAI API base URL (GET <url>/models) or its --metrics-url is not a Prometheus "
      "page (one line on stderr says what came back); 2 usage error.");
  app.add_option("--output", a->output, "report file (modelperfobs.cache-state.v1; default stdout)");
  app.add_option("--html", a->html, "also write the report as one self-contained page here");
  app.add_option(
         "--verify", a->verify,
         "re-check a report strictly; one line; exit 3 when it does not hold, 1 when it cannot be read or parsed")
      ->check(CLI::ExistingFile);
  app.add_option("--backend", a->backend, "in-process (hermetic: no model, network or GPU) or vllm")
      ->capture_default_str();
  app.add_option("--url", a->url, "vllm: the OpenAI base URL (http://host:port/v1)");
  app.add_option("--metrics-url", a->metrics_url, "vllm: its metrics (default: the URL's origin /metrics)");
  app.add_option("--model", a->model, "vllm: the model to probe");
  app.add_option("--api", a->api, std::string("vllm: ") + loadgen::kApiHelp)
      ->check(CLI::IsMember(loadgen::kApiNames))
      ->capture_default_str();
  app.add_option("--layer", a->layer,
                 "cache layer (default: fak_workflow_cache in process, process_local_kv for vllm)");
  app.add_option("--transitions", a->transitions, "transitions to prove (default: all five)")->delimiter(',');
  app.add_option("--prefix-tokens", a->prefix_tokens, "vllm: pinned prefix length in words")->capture_default_str();
  app.add_option("--capacity", a->capacity, "in-process: cache capacity in entries")->capture_default_str();
  app.add_option("--ttl", a->ttl, "in-process: entry time-to-live (0: none; natural_expiry is then unsupported)")
      ->capture_default_str();
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
