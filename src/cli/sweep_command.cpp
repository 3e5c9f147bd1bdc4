// `modelperfobs sweep` (run a serving sweep, or one shard of it), `sweep verify FILE`, `sweep gate --claim
// --artifact`, `sweep merge SHARD...`, `sweep compare A B`.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <set>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/files.hpp"
#include "cli/sweep_args.hpp"
#include "cli/sweep_workload.hpp"
#include "core/duration.hpp"
#include "core/go_json.hpp"
#include "core/time.hpp"
#include "ledger/reader.hpp"
#include "ledger/writer.hpp"
#include "net/backend_url.hpp"
#include "net/ca_rule.hpp"
#include "sweep/compare.hpp"
#include "sweep/merge.hpp"
#include "sweep/render.hpp"
#include "sweep/repeat.hpp"
#include "sweep/runner.hpp"
#include "sweep/verify.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

int usage_error(const std::string& message) {
  std::cerr << "modelperfobs sweep: " << message << "\n";
  return 2;
}

std::string stem_of(const std::string& output) {
  const auto slash = output.find_last_of('/');
  const auto dot = output.find_last_of('.');
  return dot != std::string::npos && (slash == std::string::npos || dot > slash) ? output.substr(0, dot) : output;
}

bool write_file(const std::string& path, const std::string& text) { return write_output(path, text, "sweep"); }

// Six letters and digits drawn for a run (2 billion choices): its prompts' own word.
std::string draw_prompt_salt() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kAlphabet - 2);
  std::string out(6, ' ');
  for (char& ch : out) ch = kAlphabet[pick(rd)];
  return out;
}

std::string hostname() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

// What sweeps and parity runs share: the target, the workload, requests, warm-up, SLO, machine.
// Returns 0 when every flag is usable, else the exit code (a message was printed).
int common_options(const SweepArgs& a, sweep::SweepOptions& o) {
  if (a.model.empty() || a.model == "unknown") return usage_error("serving sweep requires an exact --model identity");
  o.target.model = a.model;
  if (const char* key = std::getenv(a.api_key_env.c_str())) o.target.api_key = key;
  o.target.ca_file = a.ca;
  auto timeout = parse_duration_s(a.timeout);
  if (!timeout) return usage_error("--timeout: " + timeout.error().message);
  o.target.timeout_s = *timeout;
  o.target.ignore_eos = a.ignore_eos;
  o.target.api = *loadgen::parse_api(a.api);  // --api is checked by CLI11
  o.target.run_id = fmt::format("{}-{}", hostname(), getpid());
  o.target.chain_responses = a.chain_responses;
  if (const auto problem = workload_flag_problem(a)) return usage_error(*problem);
  std::string source;
  auto workload = build_workload(a, source);
  if (!workload) return usage_error(workload.error().message);
  o.workload = std::move(*workload);
  o.workload_source = source;
  // A replay, a trace and a set of conversations are sent whole unless --requests says otherwise.
  const bool whole = recorded_workload(a) || workload_kind(a) == "multi-turn";
  o.requests = whole && !a.requests_given ? o.workload.size() : a.requests;
  if (o.requests == 0) return usage_error("--requests must be at least 1");
  o.warmup = a.warmup;
  o.seed = a.seed;
  auto slo = parse_duration_s(a.slo);
  if (!slo) return usage_error("--slo: " + slo.error().message);
  o.slo_ms = *slo * 1000;
  o.machine_id = a.machine.empty() ? hostname() : a.machine;
  o.tool_version = MPO_VERSION;
  o.same_prompts_every_point = a.same_prompts;
  // Lengths are targets for synthetic and replayed prompts, not for a dataset's own texts.
  o.exact_prompt_tokens = a.dataset.empty() && !a.approximate_input_tokens;
  if (workload_kind(a) == "synthetic") o.shared_prefix_tokens = a.shared_prefix_tokens;
  if (workload_kind(a) == "multi-turn") {
    o.not_fitted_because =
        "a conversation's turns are not fitted (a fitted message would no longer be the next turn's prefix)";
    o.fit_each_message = o.exact_prompt_tokens;
  } else if (workload_kind(a) == "trace") {
    o.not_fitted_because =
        "a trace's prompts are its blocks of single-token words, not fitted (equal hash ids stay equal text)";
  }
  if (a.prompt_salt.empty()) {
    o.prompt_salt = draw_prompt_salt();
  } else if (a.prompt_salt != "none") {
    const bool word =
        std::all_of(a.prompt_salt.begin(), a.prompt_salt.end(), [](unsigned char ch) { return std::isalnum(ch) != 0; });
    if (!word || a.prompt_salt.size() > 32) {
      return usage_error("--prompt-salt: letters and digits only, at most 32 (or none)");
    }
    o.prompt_salt = a.prompt_salt;
  }
  o.reset_cache_between_points = a.reset_cache;
  return 0;
}

// The ledger of every request, and progress on stderr (a bar on a terminal, lines otherwise).
class RunOutput {
 public:
  RunOutput(const SweepArgs& a, std::string ledger_path)
      : a_(a), ledger_path_(std::move(ledger_path)), writer_({ledger_path_}), tty_(isatty(STDERR_FILENO) && !a.quiet) {}
  bool open() {
    if (auto st = writer_.open(); !st) {
      std::cerr << "modelperfobs sweep: " << st.error().message << "\n";
      return false;
    }
    return true;
  }
  sweep::SweepCallbacks callbacks() {
    sweep::SweepCallbacks cb;
    cb.on_observation = [this](const ledger::Observation& obs) { writer_.submit(ledger::render_observation(obs)); };
    cb.on_progress = [this](const std::string& label, const sweep::PointProgress& p) {
      if (!tty_ || p.total == 0) return;
      const int width = 24;
      const int filled = static_cast<int>(static_cast<double>(p.done) / static_cast<double>(p.total) * width);
      std::string line = fmt::format("\r{:<18} [{}{}] {}/{}  ok {}  failed {}", label, std::string(filled, '#'),
                                     std::string(width - filled, '.'), p.done, p.total, p.ok, p.failed);
      if (!p.latest_error.empty()) line += " (" + p.latest_error + ")";
      std::cerr << line << "\033[K" << std::flush;
    };
    cb.on_note = [this](const std::string& line) {
      if (a_.quiet && line.rfind("warning", 0) != 0) return;
      std::cerr << (tty_ ? "\r\033[K" : "") << line << "\n";
    };
    // The engine's snapshots beside the ledger, as `proxy --scrape` writes them: attribute and
    // report find them there. Opened at the first snapshot (a sweep without --metrics-url has none).
    cb.on_snapshot = [this](const scrape::Snapshot& s) {
      if (!snapshots_) {
        snapshots_ = std::make_unique<ledger::LedgerWriter>(
            ledger::LedgerWriter::Options{scrape::snapshots_path_for(ledger_path_)});
        if (auto st = snapshots_->open(); !st) {
          std::cerr << "modelperfobs sweep: warning: " << st.error().message << " (engine snapshots not kept)\n";
          snapshots_failed_ = true;
        }
      }
      if (!snapshots_failed_) snapshots_->submit(scrape::snapshot_json_line(s) + "\n");
    };
    return cb;
  }
  void close() {
    writer_.close();
    if (snapshots_ && !snapshots_failed_) snapshots_->close();
  }
  const std::string& ledger_path() const { return ledger_path_; }
  std::uint64_t lines() const { return writer_.lines_written(); }

 private:
  std::unique_ptr<ledger::LedgerWriter> snapshots_;  // <ledger>.scrape.jsonl, from the first snapshot
  bool snapshots_failed_ = false;
  const SweepArgs& a_;
  std::string ledger_path_;
  ledger::LedgerWriter writer_;
  bool tty_;
};

int run_parity_command(const SweepArgs& a) {
  sweep::SweepOptions o;
  if (int rc = common_options(a, o)) return rc;
  std::vector<sweep::ParityTrackUrl> tracks;
  std::set<std::string> seen;
  for (const auto& t : a.tracks) {
    const auto eq = t.find('=');
    if (eq == std::string::npos)
      return usage_error("parity runs take every --track as NAME=URL; '" + t + "' has no URL");
    auto name = sweep::canonical_track(t.substr(0, eq));
    if (!name) return usage_error(name.error().message);
    if (!seen.insert(*name).second) return usage_error("track " + *name + " is given twice");
    auto url = net::parse_backend_url(t.substr(eq + 1));
    if (!url) return usage_error("--track " + *name + ": " + url.error().message);
    tracks.push_back({*name, *url});
  }
  if (a.concurrency < 1) return usage_error("--concurrency must be at least 1");
  const std::string output = a.output == "sweep.json" ? "parity.json" : a.output;
  RunOutput out(a, a.ledger.empty() ? stem_of(output) + ".ledger.jsonl" : a.ledger);
  if (!out.open()) return 1;
  auto report = sweep::run_parity(o, tracks, a.concurrency, out.callbacks());
  out.close();
  if (!report) {
    std::cerr << "modelperfobs sweep: " << report.error().message << "\n";
    return 1;
  }
  report->artifact = output;
  if (!write_file(output, go_marshal_indent(sweep::parity_json(*report)))) return 1;
  if (!a.quiet) {
    std::cerr << fmt::format("parity receipt {}, ledger {} ({} lines)\n", output, out.ledger_path(), out.lines());
  }
  return 0;
}

// What a finished sweep's exit status says (docs/EXIT_CODES.md), with its reason on stderr.
int sweep_exit_code(const sweep::SweepReceipt& r) {
  if (r.interrupted_by != 0) {
    std::cerr << "modelperfobs sweep: interrupted; the receipt is marked so and is not valid for claims\n";
    return 128 + r.interrupted_by;
  }
  if (!r.stopped_because.empty()) {
    std::cerr << "modelperfobs sweep: stopped early: " << r.stopped_because << "\n";
    return exit_code::kFailed;
  }
  // Nothing measured: no point has a successful measured request (validity for claims is the
  // receipt's to say, and `sweep gate`'s to judge).
  const bool measured = std::any_of(r.points.begin(), r.points.end(), [](const sweep::Point& p) {
    return std::any_of(p.tracks.begin(), p.tracks.end(), [](const sweep::TrackPoint& t) {
      return std::any_of(t.samples.begin(), t.samples.end(),
                         [](const loadgen::Sample& s) { return s.ok && !s.warmup; });
    });
  });
  if (!measured) {
    std::cerr << "modelperfobs sweep: no request succeeded, so nothing was measured (exit 4)\n";
    return exit_code::kCannotJudge;
  }
  return exit_code::kOk;
}

// The load points: exactly one of --concurrencies, --rates, --replay-speeds, each positive (whole
// for concurrencies), sorted and distinct.
int load_points(const SweepArgs& a, std::vector<double>& coords) {
  const int modes = (a.concurrencies.empty() ? 0 : 1) + (a.rates.empty() ? 0 : 1) + (a.replay_speeds.empty() ? 0 : 1);
  if (modes != 1) return usage_error("give exactly one of --concurrencies, --rates or --replay-speeds");
  if (!a.replay_speeds.empty() && !recorded_workload(a))
    return usage_error("--replay-speeds needs --replay LEDGER or --workload trace FILE");
  coords = !a.concurrencies.empty() ? a.concurrencies : !a.rates.empty() ? a.rates : a.replay_speeds;
  std::set<double> distinct;
  for (double c : coords) {
    if (!(c > 0) || !std::isfinite(c)) return usage_error(fmt::format("{} is not a positive load point", c));
    if (!a.concurrencies.empty() && c != std::floor(c))
      return usage_error(fmt::format("concurrency {} is not a whole number", c));
    distinct.insert(c);
  }
  coords.assign(distinct.begin(), distinct.end());

  return 0;
}

// How the load arrives and when: arrivals, duration, budgets and --refine, lateness, shards and
// their start times.
int arrival_and_timing(const SweepArgs& a, sweep::SweepOptions& o) {
  if (!a.replay_speeds.empty()) {
    o.arrival = loadgen::Arrival::kRecorded;
  } else if (a.arrival == "poisson") {
    o.arrival = loadgen::Arrival::kPoisson;
  } else if (a.arrival == "gamma") {
    o.arrival = loadgen::Arrival::kGamma;
  } else if (a.arrival == "constant") {
    o.arrival = loadgen::Arrival::kConstant;
  } else {
    return usage_error("--arrival is poisson, gamma or constant");
  }
  if (!(a.burstiness > 0)) return usage_error("--burstiness must be > 0");
  o.burstiness = a.burstiness;
  if (!a.duration.empty()) {
    auto d = parse_duration_s(a.duration);
    if (!d || *d <= 0) return usage_error("--duration: give a positive duration such as 30s");
    o.duration_s = *d;
  }
  o.sla = sweep::SlaBudgets{a.ttft_budget, a.itl_budget, a.e2e_budget};
  o.refine = a.refine;
  if (a.refine && !o.sla.any())
    return usage_error(
        "--refine needs a p99 budget (--ttft-p99-budget-ms, --itl-p99-budget-ms or --e2e-p99-budget-ms)");
  o.lateness_bound_ms = a.lateness_bound_ms;
  if (!a.shard.empty()) {
    auto shard = loadgen::parse_shard(a.shard);
    if (!shard) return usage_error(shard.error().message);
    o.shard = *shard;
    if (a.refine)
      return usage_error(
          "--refine with --shard: each shard would bisect on its own share and the shards' points "
          "would no longer line up; refine an unsharded sweep");
    if (!a.replay_speeds.empty()) return usage_error("--shard does not split a --replay sweep");
  }
  if (!a.start_at.empty()) {
    auto at = parse_rfc3339(a.start_at);
    if (!at) return usage_error("--start-at: " + at.error().message + " (e.g. 2026-12-02T10:00:00Z)");
    o.start_at_us = *at;
  }
  if (!a.point_period.empty()) {
    auto period = parse_duration_s(a.point_period);
    if (!period || *period <= 0) return usage_error("--point-period: give a positive duration such as 90s");
    if (!o.start_at_us) return usage_error("--point-period needs --start-at");
    o.point_period_s = *period;
  }
  return 0;
}

// The evidence beside the load (engine metrics, power) and the track's contract.
int evidence_and_contract(const SweepArgs& a, sweep::SweepOptions& o) {
  o.metrics_url = a.metrics_url;
  auto interval = parse_duration_s(a.metrics_interval);
  if (!interval) return usage_error("--metrics-interval: " + interval.error().message);
  o.metrics_interval_s = *interval;
  if (a.power == "nvidia-smi")
    o.power = a.power;
  else if (a.power.rfind("http", 0) == 0)
    o.dcgm_url = a.power;
  else if (!a.power.empty())
    return usage_error("--power is nvidia-smi or a DCGM exporter URL (http://host:9400/metrics)");
  if (!a.tracks.empty()) {
    auto t = sweep::canonical_track(a.tracks[0]);
    if (!t) return usage_error(t.error().message);
    o.track = *t;
  }
  o.engine = a.engine;
  o.engine_receipt = a.engine_receipt;
  o.batch_capacity = a.batch_capacity;
  o.capacity_source = a.capacity_source;
  if (a.batch_capacity > 0 && a.capacity_source.empty()) o.capacity_source = "operator-declared";

  return 0;
}

// The receipt, its summary and its page; the summary on stdout and, unless --quiet, a line per track.
int write_sweep_outputs(const SweepArgs& a, const std::string& stem, sweep::SweepReceipt& report, RunOutput& out,
                        bool print_summary = true) {
  report.artifact = a.output;
  const std::string md = sweep::sweep_markdown(report);
  if (!write_file(a.output, sweep::receipt_text(report))) return 1;
  if (!write_file(a.markdown.empty() ? stem + ".md" : a.markdown, md)) return 1;
  if (!write_file(a.html.empty() ? stem + ".html" : a.html, sweep::sweep_html(report))) return 1;
  if (print_summary) std::cout << md;
  if (!a.quiet) {
    for (const auto& t : report.tracks) {
      std::cerr << fmt::format(
          "{} {} valid={} peak={} sla-knee={}\n", t.track, t.status, t.valid_points,
          t.peak ? fmt::format("{}/{:.1f} tok/s", t.peak->coordinate, t.peak->throughput_tok_s) : t.peak_status,
          t.sla_knee ? fmt::format("{}", t.sla_knee->coordinate) : t.sla_status);
    }
    std::cerr << fmt::format("receipt {} ({}), ledger {} ({} lines)\n", a.output,
                             report.valid ? "valid" : "not valid for claims", out.ledger_path(), out.lines());
  }
  return 0;
}

// One run of the sweep: its ledger, receipt, summary and page; its exit code. `kept`: where the
// receipt goes once written, for a repeated sweep's summary (whose stdout is that summary alone).
int run_once(const SweepArgs& a, const sweep::SweepOptions& o, std::size_t points,
             std::vector<sweep::SweepReceipt>* kept) {
  const std::string stem = stem_of(a.output);
  RunOutput out(a, a.ledger.empty() ? stem + ".ledger.jsonl" : a.ledger);
  if (!out.open()) return 1;
  if (!a.quiet) {
    std::cerr << fmt::format("sweep: {} points x {} requests against {} (model {}); ledger {}\n", points, o.requests,
                             a.url, a.model, out.ledger_path());
  }
  auto report = sweep::run_sweep(o, out.callbacks());
  out.close();
  if (!report) {
    std::cerr << "modelperfobs sweep: " << report.error().message << "\n";
    return 1;
  }
  if (int rc = write_sweep_outputs(a, stem, *report, out, kept == nullptr)) return rc;
  const int rc = sweep_exit_code(*report);
  if (kept) kept->push_back(std::move(*report));
  return rc;
}

// `--repeat N`: the sweep run N times, one after another, run k's files named <stem>.r<k>.*, each
// with prompts of its own (a drawn salt each, or the given salt with the run's number), then the
// runs' spread point by point (sweep/repeat.hpp) on stdout, in <stem>.repeat.md and on the page
// <stem>.repeat.html. Stops at the first run that is interrupted or stops early; its exit code is
// then the sweep's.
int run_repeated(const SweepArgs& a, const sweep::SweepOptions& o, std::size_t points) {
  const std::string stem = stem_of(a.output);
  const auto named = [](const std::string& path, std::int64_t k) {
    const std::string s = stem_of(path);
    return fmt::format("{}.r{}{}", s, k, path.substr(s.size()));
  };
  std::vector<sweep::SweepReceipt> runs;
  std::vector<std::string> files;
  int worst = 0;
  for (std::int64_t k = 1; k <= a.repeat; ++k) {
    SweepArgs ak = a;
    ak.output = named(a.output, k);  // the rest follow its stem unless named
    if (!a.ledger.empty()) ak.ledger = named(a.ledger, k);
    if (!a.markdown.empty()) ak.markdown = named(a.markdown, k);
    if (!a.html.empty()) ak.html = named(a.html, k);
    sweep::SweepOptions ok = o;
    if (a.prompt_salt.empty()) {
      ok.prompt_salt = k == 1 ? o.prompt_salt : draw_prompt_salt();
    } else if (a.prompt_salt != "none") {
      ok.prompt_salt = fmt::format("{}r{}", a.prompt_salt, k);
    }
    if (!a.quiet) std::cerr << fmt::format("sweep: run {} of {}\n", k, a.repeat);
    const int rc = run_once(ak, ok, points, &runs);
    if (runs.size() == static_cast<std::size_t>(k)) files.push_back(ak.output);
    worst = std::max(worst, rc);
    if (rc == exit_code::kFailed || rc > 128 || runs.size() != static_cast<std::size_t>(k)) return rc;
  }
  const std::string md = sweep::repeat_markdown(runs, files);
  if (!write_file(stem + ".repeat.md", md)) return 1;
  if (!write_file(stem + ".repeat.html", sweep::repeat_html(runs, files))) return 1;
  std::cout << md;
  if (!a.quiet) {
    std::cerr << fmt::format("sweep: {} runs; their spread in {}.repeat.md and {}.repeat.html\n", runs.size(), stem,
                             stem);
  }
  return worst;
}

int run_sweep_command(const SweepArgs& a) {
  for (const auto& t : a.tracks) {
    if (t.find('=') != std::string::npos) {
      if (a.repeat > 1) return usage_error("--repeat reruns a sweep; a parity run (NAME=URL tracks) is one point");
      return run_parity_command(a);
    }
  }
  if (a.tracks.size() > 1) return usage_error("a sweep has one track; give NAME=URL tracks for a parity run");
  if (a.url.empty()) return usage_error("--url is required (the OpenAI base URL, e.g. http://127.0.0.1:8000/v1)");
  std::vector<double> coords;
  if (int rc = load_points(a, coords)) return rc;
  sweep::SweepOptions o;
  auto url = net::parse_backend_url(a.url);
  if (!url) return usage_error(url.error().message);
  o.target.url = *url;
  if (int rc = common_options(a, o)) return rc;
  o.mode = a.concurrencies.empty() ? loadgen::LoadMode::kRate : loadgen::LoadMode::kConcurrency;
  o.coordinates = coords;
  if (int rc = arrival_and_timing(a, o)) return rc;
  if (int rc = evidence_and_contract(a, o)) return rc;

  // One socket per request in flight: hundreds of streams need more than the default 1024 files.
  if (rlimit lim{}; getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (a.repeat > 1) return run_repeated(a, o, coords.size());
  return run_once(a, o, coords.size(), nullptr);
}

int run_verify(const std::string& file) {
  const auto text = read_input_file(file, "sweep verify");
  if (!text) return 1;
  const auto v = sweep::verify_sweep(*text);
  std::cout << v.summary << "\n";
  for (const auto& p : v.problems) std::cout << "  " << p << "\n";
  for (const auto& n : v.notes) std::cout << "  note: " << n << "\n";
  return v.holds ? exit_code::kOk : exit_code::kViolated;
}

struct MergeArgs {
  std::vector<std::string> files;
  std::string output = "sweep.json", markdown, html;
  double max_skew_s = 1.0;
};

int run_merge(const MergeArgs& m) {
  std::vector<sweep::ShardInput> inputs;
  for (const auto& f : m.files) {
    auto text = read_input_file(f, "sweep merge");
    if (!text) return 1;
    inputs.push_back({f, std::move(*text)});
  }
  sweep::MergeOptions options;
  options.max_start_skew_s = m.max_skew_s;
  options.output_name = m.output;
  auto merged = sweep::merge_shards(inputs, options);
  if (!merged) {
    std::cerr << "modelperfobs sweep merge: " << merged.error().message << "\n";
    return 1;
  }
  const std::string stem = stem_of(m.output);
  const std::string md = sweep::sweep_markdown(*merged);
  if (!write_file(m.output, sweep::receipt_text(*merged))) return 1;
  if (!write_file(m.markdown.empty() ? stem + ".md" : m.markdown, md)) return 1;
  if (!write_file(m.html.empty() ? stem + ".html" : m.html, sweep::sweep_html(*merged))) return 1;
  std::cout << md;
  std::cerr << fmt::format("sweep merge: {} shards into {} ({})\n", inputs.size(), m.output,
                           merged->valid ? "valid" : "not valid for claims");
  return 0;
}

struct CompareArgs {
  std::string a, b, format = "md", output, html;
  int resamples = 2000;
  std::uint64_t seed = 1;
  bool allow_different_workload = false;
};

// `sweep compare A.json B.json` (or reruns of a side, comma-separated: A1.json,A2.json): point by
// point, with intervals (sweep/compare.hpp).
int run_compare(const CompareArgs& c) {
  std::vector<std::vector<sweep::SweepReceipt>> sides(2);
  for (int side = 0; side < 2; ++side) {
    const std::string& list = side == 0 ? c.a : c.b;
    std::size_t start = 0;
    while (start <= list.size()) {
      const std::size_t comma = list.find(',', start);
      const std::string f = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      if (f.empty()) continue;
      const auto text = read_input_file(f, "sweep compare");
      if (!text) return exit_code::kFailed;
      auto r = sweep::parse_sweep_receipt(*text);
      if (!r) {
        std::cerr << "modelperfobs sweep compare: " << f << ": " << r.error().message << "\n";
        return exit_code::kFailed;
      }
      sides[side].push_back(std::move(*r));
    }
    if (sides[side].empty()) return usage_error("sweep compare: give a receipt for each side");
  }
  auto pointers = [](const std::vector<sweep::SweepReceipt>& v) {
    std::vector<const sweep::SweepReceipt*> out;
    for (const auto& r : v) out.push_back(&r);
    return out;
  };
  if (c.resamples < 200) return usage_error("--resamples must be at least 200");
  sweep::SweepCompareOptions o;
  o.resamples = c.resamples;
  o.seed = c.seed;
  o.allow_different_workload = c.allow_different_workload;
  const auto cmp = sweep::compare_sweep_runs(pointers(sides[0]), pointers(sides[1]), o);
  if (!cmp) {
    std::cerr << "modelperfobs sweep compare: " << cmp.error().message << "\n";
    return 1;
  }
  const std::string text = c.format == "json" ? sweep::sweep_comparison_json(*cmp) : sweep::sweep_comparison_md(*cmp);
  if (!write_output(c.output, text, "sweep compare")) return 1;
  if (!c.html.empty() && !write_output(c.html, sweep::sweep_comparison_html(*cmp), "sweep compare")) return 1;
  return 0;
}

int run_gate(const std::string& claim, const std::string& claim_file, const std::string& artifact) {
  std::string text = claim;
  if (!claim_file.empty()) {
    const auto t = read_text_file(claim_file);
    if (!t) return usage_error("cannot read " + claim_file);
    text = *t;
  }
  if (text.empty()) return usage_error("gate: give --claim TEXT or --claim-file FILE");
  const auto art = read_input_file(artifact, "sweep gate");
  if (!art) return 1;
  const auto g = sweep::gate_claim(text, *art);
  std::cerr << g.message << "\n";
  if (!g.judged) return exit_code::kCannotJudge;
  return g.allowed ? exit_code::kOk : exit_code::kViolated;
}

}  // namespace

std::function<int()> setup_sweep(CLI::App& app) {
  auto a = std::make_shared<SweepArgs>();
  app.require_subcommand(0, 1);
  app.footer(
      "Exit codes (docs/EXIT_CODES.md): 0 the sweep ran and at least one point is valid for claims; 1 --url does not "
      "answer as an OpenAI API base URL (GET <url>/models), --metrics-url is not a Prometheus page, a cache reset is "
      "not offered, a file cannot be written, or the sweep stopped early (the server answers as another model, or "
      "its first 8 requests all failed); one line on stderr says what; 2 usage error; 4 no request succeeded, so "
      "nothing was measured (whether points are valid for claims is the receipt's to say, `sweep gate`'s to judge); "
      "130 (143) interrupted by SIGINT (SIGTERM): the receipt is written, marked interrupted.");
  app.add_option("--url", a->url, "OpenAI base URL of the server under test (http://host:port/v1)");
  app.add_option("--model", a->model, "the exact model to request (required)");
  app.add_option("--concurrencies", a->concurrencies, "closed loop: in-flight requests per point, e.g. 1,2,4,8,16")
      ->delimiter(',')
      ->type_name("N,N");
  app.add_option("--rates", a->rates, "open loop: offered requests/s per point, e.g. 2,4,8")
      ->delimiter(',')
      ->type_name("R,R");
  app.add_option("--arrival", a->arrival, "open loop arrivals: poisson, gamma (with --burstiness) or constant")
      ->capture_default_str();
  app.add_option("--burstiness", a->burstiness, "gamma shape: < 1 burstier than Poisson, > 1 smoother")
      ->capture_default_str();
  app.add_option("--requests", a->requests, "measured requests per point (warm-up excluded)")
      ->capture_default_str()
      ->each([a](const std::string&) { a->requests_given = true; });
  app.add_option("--workload", a->workload,
                 "synthetic (default: --input-tokens, --output-tokens), multi-turn (conversations: --sessions, "
                 "--turns, --user-tokens, --output-tokens per answer, --think-time-ms, --tool-turns, "
                 "--shared-prefix-tokens as a system prompt every session shares), or trace FILE (a Mooncake-style "
                 "JSONL trace: timestamp, input_length, output_length, hash_ids; with --replay-speeds its arrival "
                 "times are kept)")
      ->expected(1, 2)
      ->type_name("KIND [FILE]");
  app.add_option("--sessions", a->sessions, "multi-turn: conversations per point")->capture_default_str();
  app.add_option("--turns", a->turns, "multi-turn: turns per conversation: N, uniform:A,B, normal:MEAN,SD or exp:MEAN")
      ->capture_default_str();
  app.add_option("--user-tokens", a->user_tokens,
                 "multi-turn: each new user message's length in tokens as the server counts it (where it offers a "
                 "tokenizer), same forms")
      ->capture_default_str();
  app.add_option("--think-time-ms", a->think_time_ms,
                 "multi-turn: the client's own time between a turn's end and the next turn, ms, same forms; 0: none")
      ->capture_default_str();
  app.add_option("--tool-turns", a->tool_turns,
                 "multi-turn: the share of turns after the first that send a tool's result (the answer before "
                 "them a tool call), 0 to 1")
      ->capture_default_str();
  app.add_option("--tool-result-tokens", a->tool_result_tokens,
                 "multi-turn: a tool result's length in tokens, same forms")
      ->capture_default_str();
  app.add_flag("--require-tool-calls", a->require_tool_calls,
               "multi-turn with --tool-turns: every turn declares the tool and the turn before each tool turn "
               "asks for a call of it (tool_choice \"required\"; messages {\"type\":\"any\"}), so the engine "
               "answers it with a call as the next turn says (an engine that holds a call back until its name, as "
               "llama.cpp does, then delays that turn's first event: the point's TTFT leaves such answers out and "
               "stats.tool_call_first counts them)");
  app.add_flag("--chain-responses", a->chain_responses,
               "multi-turn with --api responses: each turn after the first sends only its new message with the "
               "previous turn's previous_response_id, and the server holds the conversation (OpenAI; vLLM with "
               "VLLM_ENABLE_RESPONSES_API_STORE=1; llama.cpp b10309 refuses it)");
  app.add_option("--trace-block-tokens", a->trace_block_tokens, "trace: tokens per hash id block (Mooncake: 512)")
      ->capture_default_str();
  app.add_option("--duration", a->duration, "run each point this long instead (e.g. 60s; the workload cycles)");
  app.add_option(
      "--warmup", a->warmup,
      "warm-up requests per point, excluded from statistics (default: one per worker, or one second of arrivals)");
  app.add_option("--dataset", a->dataset, "JSONL or JSON dataset: ShareGPT conversations or fak web tasks")
      ->check(CLI::ExistingFile);
  app.add_option("--dataset-format", a->dataset_format, "auto, sharegpt or web-tasks")->capture_default_str();
  app.add_option("--replay", a->replay, "replay a ledger: its arrival times and token lengths (prompts synthesised)")
      ->check(CLI::ExistingFile);
  app.add_option("--replay-speeds", a->replay_speeds, "with --replay: points played this many times faster, e.g. 1,2,4")
      ->delimiter(',')
      ->type_name("S,S");
  app.add_option("--max-output-tokens", a->max_output_tokens,
                 "web tasks: max_tokens per request (ShareGPT: the reply's length unless set)")
      ->capture_default_str();
  app.add_option("--input-tokens", a->input_tokens,
                 "synthetic prompt length: N, uniform:A,B, normal:MEAN,SD or exp:MEAN; as the server's tokenizer "
                 "counts it, chat template included, where it offers one (vLLM, llama.cpp; docs/SWEEP.md)")
      ->capture_default_str();
  app.add_flag("--approximate-input-tokens", a->approximate_input_tokens,
               "do not ask the server's tokenizer: prompts of about one token per word");
  app.add_option("--output-tokens", a->output_tokens, "synthetic output length (max_tokens), same forms")
      ->capture_default_str();
  app.add_option("--shared-prefix-tokens", a->shared_prefix_tokens,
                 "synthetic: the same leading tokens in every prompt (cache-aware runs), as the server counts them "
                 "where it offers a tokenizer; multi-turn: a system prompt that long every session shares");
  app.add_option("--seed", a->seed, "seed of the workload and arrivals")->capture_default_str();
  app.add_option("--prompt-salt", a->prompt_salt,
                 "a word every prompt of this run carries, so a rerun of the same workload never meets the prefix "
                 "cache an earlier run filled (the workload digest stays the same; recorded as load.prompt_salt); "
                 "default: drawn for each run; none: repeat earlier runs' prompts exactly");
  app.add_flag("--same-prompts-every-point", a->same_prompts,
               "send the same prompts at every point (by default each point marks its own, so no point is served "
               "from the prefix cache an earlier one filled); later points then fail as cache_carryover");
  app.add_flag("--reset-cache-between-points", a->reset_cache,
               "empty the server's prefix cache before each point: vLLM POST /reset_prefix_cache (needs "
               "VLLM_SERVER_DEV_MODE=1), SGLang POST /flush_cache, llama.cpp slot erase (needs --slot-save-path, and "
               "--cache-ram 0: "
               "its host-memory prompt cache survives an erase); the sweep stops at start-up (exit 1) when none "
               "works, and a point still served from a cache is cache_carryover");
  app.add_flag("--ignore-eos", a->ignore_eos, "ask the server to generate exactly max_tokens (vLLM/SGLang extension)");
  app.add_option("--api", a->api, loadgen::kApiHelp)->check(CLI::IsMember(loadgen::kApiNames))->capture_default_str();
  app.add_option("--api-key-env", a->api_key_env, "environment variable holding the API key")->capture_default_str();
  app.add_option("--ca", a->ca, net::kCaFileHelp)->check(CLI::ExistingFile);
  app.add_option("--timeout", a->timeout, "per-request timeout")->capture_default_str();
  app.add_option("--slo", a->slo, "goodput: requests finished within this end-to-end time")->capture_default_str();
  app.add_option("--ttft-p99-budget-ms", a->ttft_budget, "p99 TTFT budget (ms) for the SLA knee and boundary");
  app.add_option("--itl-p99-budget-ms", a->itl_budget, "p99 inter-token latency budget (ms)");
  app.add_option("--e2e-p99-budget-ms", a->e2e_budget, "p99 end-to-end budget (ms)");
  app.add_flag("--refine", a->refine, "bisect between the last point inside the budgets and the first outside");
  app.add_option("--lateness-bound-ms", a->lateness_bound_ms,
                 "a point whose p99 send lateness exceeds this is client_saturated")
      ->capture_default_str();
  app.add_option("--metrics-url", a->metrics_url, "the engine's /metrics: scraped before, during and after each point");
  app.add_option("--metrics-interval", a->metrics_interval, "sampling interval during a point")->capture_default_str();
  app.add_option("--power", a->power, "energy source: nvidia-smi, or a DCGM exporter URL");
  app.add_option("--track", a->tracks,
                 "track name of a sweep (ours, vllm, sglang, fak-fronts-fleet; default ours), or NAME=URL, repeated: "
                 "a single-point parity run against each (fak.serving-parity.v1)");
  app.add_option("--concurrency", a->concurrency, "parity runs: requests in flight (capped at --requests)")
      ->capture_default_str();
  app.add_option("--engine", a->engine, "engine name for the contract (default: detected from /metrics or /models)");
  app.add_option("--engine-receipt", a->engine_receipt,
                 "sha256:<64 hex> engine receipt (default: digest of the identity observed)");
  app.add_option(
      "--batch-capacity", a->batch_capacity,
      "the engine's declared batch capacity (e.g. vLLM --max-num-seqs; default: what llama.cpp's GET /props or "
      "SGLang's GET /server_info states, else unknown)");
  app.add_option("--capacity-source", a->capacity_source,
                 "where that capacity comes from (e.g. 'vllm --max-num-seqs 8')");
  app.add_option("--machine", a->machine, "machine id in the receipt (default: hostname)");
  app.add_option("--output", a->output, "receipt (fak.serving-sweep.v1)")->capture_default_str();
  app.add_option("--ledger", a->ledger, "ledger of every request (default: <output stem>.ledger.jsonl)");
  app.add_option("--markdown", a->markdown, "summary (default: <output stem>.md; also printed)");
  app.add_option("--html", a->html, "page with charts (default: <output stem>.html)");
  app.add_flag("--quiet", a->quiet, "no progress on stderr");
  app.add_option("--repeat", a->repeat,
                 "run the whole sweep N times, one after another, each with prompts of its own: run k's files are "
                 "<output stem>.r<k>.*, and <output stem>.repeat.md says how much each point moved from run to run "
                 "(pool the receipts in `sweep compare`)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{100}));
  app.add_option("--shard", a->shard,
                 "I/N: run the I-th of N shares of every point (I from 0, e.g. $JOB_COMPLETION_INDEX/4): closed loop "
                 "splits the concurrency, open loop thins the arrivals; join the N receipts with `sweep merge`");
  app.add_option("--start-at", a->start_at,
                 "RFC 3339 wall time at which the first point starts (shards on several machines start together; "
                 "their clocks must be synchronised)");
  app.add_option("--point-period", a->point_period,
                 "with --start-at: point k starts at start-at + k x this (e.g. 90s), so every shard runs each point "
                 "in the same window");

  auto* verify =
      app.add_subcommand("verify", "re-derive a sweep receipt from its own samples; exit 3 if it does not hold");
  verify->footer(
      "Exit codes (docs/EXIT_CODES.md): 0 the receipt holds; 1 it cannot be read; 3 it does not hold "
      "(each difference is listed).");
  auto file = std::make_shared<std::string>();
  verify->add_option("FILE", *file, "the receipt")->required();
  auto* gate = app.add_subcommand(
      "gate", "refuse a claim the receipt cannot carry (peak, capacity-valid peak, SLA knee, parity)");
  auto claim = std::make_shared<std::string>(), claim_file = std::make_shared<std::string>(),
       artifact = std::make_shared<std::string>();
  gate->footer(
      "Exit codes (docs/EXIT_CODES.md): 0 the claim is allowed; 1 a file cannot be read; 2 usage; 3 the "
      "claim is refused (the reason on stderr); 4 the text makes no claim the gate knows, so nothing was "
      "judged.");
  gate->add_option("--claim", *claim, "the claim text");
  gate->add_option("--claim-file", *claim_file, "a file holding the claim text")->check(CLI::ExistingFile);
  gate->add_option("--artifact", *artifact, "the receipt")->required();
  auto merge_args = std::make_shared<MergeArgs>();
  auto* merge = app.add_subcommand(
      "merge",
      "join the receipts of `sweep --shard I/N` runs (all N shards) into one receipt whose every figure is re-derived "
      "from the union of their samples; refuses shards whose workload, points, settings or windows differ");
  merge->footer(
      "Exit codes (docs/EXIT_CODES.md): 0 merged and written; 1 a shard cannot be read, the shards do not "
      "belong together (the reason on stderr), or a file cannot be written; 2 usage.");
  merge->add_option("SHARD", merge_args->files, "the shards' receipts")->required()->check(CLI::ExistingFile);
  merge->add_option("--output", merge_args->output, "the merged receipt")->capture_default_str();
  merge->add_option("--markdown", merge_args->markdown, "summary (default: <output stem>.md; also printed)");
  merge->add_option("--html", merge_args->html, "page with charts (default: <output stem>.html)");
  merge
      ->add_option("--max-start-skew", merge_args->max_skew_s,
                   "seconds: a point's shards must have started within this of each other")
      ->capture_default_str();
  auto compare_args = std::make_shared<CompareArgs>();
  auto* compare = app.add_subcommand(
      "compare",
      "two receipts of the same workload point by point: throughput and p50/p99 changes with bootstrap intervals, "
      "and whether the knee, the peak and the p99 SLA boundary moved");
  compare->footer(
      "Exit codes (docs/EXIT_CODES.md): 0 compared (the verdicts are in the output; to fail a pipeline "
      "on a claim use `sweep gate`, on a regression `report --baseline --max-regression`); 1 a receipt "
      "cannot be read, or the workloads differ without --allow-different-workload; 2 usage.");
  compare
      ->add_option("A", compare_args->a,
                   "the receipt to compare against (before); reruns of the same settings comma-separated "
                   "(A1.json,A2.json): the intervals then carry how much reruns differ")
      ->required();
  compare->add_option("B", compare_args->b, "the receipt to compare (after); reruns comma-separated likewise")
      ->required();
  compare->add_flag("--allow-different-workload", compare_args->allow_different_workload,
                    "compare receipts whose workload digests differ (refused by default)");
  compare->add_option("--resamples", compare_args->resamples, "bootstrap resamples")->capture_default_str();
  compare->add_option("--seed", compare_args->seed, "bootstrap seed")->capture_default_str();
  compare->add_option("--format", compare_args->format, "md or json (modelperfobs.sweep-comparison.v1)")
      ->check(CLI::IsMember({"md", "json"}))
      ->capture_default_str();
  compare->add_option("--output", compare_args->output, "write here instead of stdout");
  compare->add_option("--html", compare_args->html, "also write one self-contained page here");
  return [a, verify, gate, merge, merge_args, compare, compare_args, file, claim, claim_file, artifact] {
    if (verify->parsed()) return run_verify(*file);
    if (compare->parsed()) return run_compare(*compare_args);
    if (merge->parsed()) return run_merge(*merge_args);
    if (gate->parsed()) return run_gate(*claim, *claim_file, *artifact);
    return run_sweep_command(*a);
  };
}

}  // namespace mpo::cli
