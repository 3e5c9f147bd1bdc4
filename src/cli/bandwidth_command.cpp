// `modelperfobs bandwidth collect | measure-host | verify`.
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "bandwidth/host_roofline.hpp"
#include "bandwidth/ncu_import.hpp"
#include "bandwidth/receipt.hpp"
#include "bandwidth/render_html.hpp"
#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "cli/files.hpp"
#include "core/clock.hpp"
#include "core/duration.hpp"
#include "core/time.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

struct CollectArgs {
  std::string ncu_csv, device, capture_start, capture_end, phase = "other", shape = "small", engine, output, html;
  double theoretical = 0, device_roofline = 0, measured = 0, seconds = 0;
  std::uint64_t bytes = 0;
  std::string bytes_evidence;
  std::string refused_value;  // every refused flag writes here; only whether it was given matters
};

struct MeasureArgs {
  std::uint64_t working_set_mib = 64;
  int trials = 5;
  std::string trial_time = "100ms";
  std::vector<int> threads;
  double knee = 0.90;
  std::string output, html;
};

int usage(const std::string& m) {
  std::cerr << "modelperfobs bandwidth: " << m << "\n";
  return 2;
}

// The receipt, and with --html its page beside it.
int write_receipt(const std::string& output, const std::string& json, const std::string& html) {
  if (!write_output(output, json + "\n", "bandwidth")) return 1;
  if (html.empty()) return 0;
  auto page = bandwidth::receipt_html(json);
  if (!page) {
    std::cerr << "modelperfobs bandwidth: " << page.error().message << "\n";
    return 1;
  }
  return write_output(html, *page, "bandwidth") ? 0 : 1;
}

std::string host_cpu() {
  const auto cpuinfo = read_text_file("/proc/cpuinfo");
  if (!cpuinfo) return "unknown";
  const std::string& text = *cpuinfo;
  const auto at = text.find("model name");
  if (at == std::string::npos) return "unknown";
  const auto colon = text.find(':', at);
  const auto nl = text.find('\n', colon);
  return text.substr(colon + 2, nl - colon - 2);
}

// Flags fak's collect had for host sampling, tokens, latency, software bytes and intervals: they
// exist here only to be refused with a reason, never silently ignored.
constexpr const char* kRefused[] = {"--count",
                                    "--interval",
                                    "--latency-ms",
                                    "--prompt-tokens",
                                    "--completion-tokens",
                                    "--logical-bytes",
                                    "--physical-read-bytes",
                                    "--physical-write-bytes",
                                    "--nvidia-device",
                                    "--amd-device",
                                    "--host-counter-import",
                                    "--measure-host-roofline"};

// The capture's window (--capture-start, --capture-end, RFC 3339): when the capture ran, not when
// it was imported.
int capture_window(const CollectArgs& a, std::int64_t& start, std::int64_t& end) {
  if (a.capture_start.empty() || a.capture_end.empty()) {
    return usage(
        "--capture-start and --capture-end are required (RFC 3339): the window the capture ran in, not "
        "the time of this import");
  }
  auto s = parse_rfc3339(a.capture_start);
  if (!s) return usage("--capture-start: " + s.error().message);
  auto e = parse_rfc3339(a.capture_end);
  if (!e) return usage("--capture-end: " + e.error().message);
  start = *s;
  end = *e;
  return 0;
}

// An Nsight Compute profile's import: its context checked, the CSV read, the receipt written.
int collect_ncu(CLI::App& app, const CollectArgs& a, bandwidth::Phase phase, bandwidth::Shape shape, std::int64_t now) {
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  for (const char* flag : {"--measured-gb-s", "--bytes", "--seconds", "--bytes-evidence"}) {
    if (given(flag)) {
      return usage(
          fmt::format("{} cannot be combined with --nvidia-ncu-csv: a host-memory figure must never become "
                      "an HBM utilisation denominator",
                      flag));
    }
  }
  bandwidth::CaptureContext c;
  c.file = a.ncu_csv;
  c.device = a.device;
  if (int rc = capture_window(a, c.capture_start_us, c.capture_end_us)) return rc;
  c.phase = phase;
  c.shape = shape;
  if (given("--engine")) c.engine = a.engine;
  if (given("--theoretical-gb-s")) c.theoretical_gb_s = a.theoretical;
  if (given("--device-roofline-gb-s")) c.device_roofline_gb_s = a.device_roofline;
  if (auto st = bandwidth::check_context(c); !st) return usage(st.error().message);
  const auto im = read_parsed_file(a.ncu_csv, "bandwidth", bandwidth::import_ncu_csv);
  if (!im) return 1;
  const auto rates = bandwidth::compute_rates(im->read_bytes, im->write_bytes, im->duration_ns, c.theoretical_gb_s,
                                              c.device_roofline_gb_s);
  std::cerr << fmt::format("modelperfobs bandwidth: {} ({} layout): {} launch(es) of {}; total {}\n", a.ncu_csv,
                           bandwidth::to_string(im->layout), im->launch_count, im->process_name,
                           rates.total_gb_s ? fmt::format("{:.1f} GB/s over profiled kernel time", *rates.total_gb_s)
                                            : std::string("unavailable (see result.unavailable)"));
  return write_receipt(a.output, bandwidth::ncu_receipt_json(*im, c, now, MPO_VERSION), a.html);
}

int run_collect(CLI::App& app, const CollectArgs& a) {
  auto given = [&](const char* flag) { return app.count(flag) > 0; };
  for (const char* flag : kRefused) {
    if (given(flag)) {
      return usage(
          fmt::format("{} is not accepted by `bandwidth collect`: this command records one profile import or "
                      "one host-memory sample; host sampling, token, latency, software-byte and interval "
                      "figures are not bandwidth evidence here",
                      flag));
    }
  }
  auto phase = bandwidth::parse_phase(a.phase);
  if (!phase) return usage(phase.error().message);
  auto shape = bandwidth::parse_shape(a.shape);
  if (!shape) return usage(shape.error().message);
  const auto now = document_time_us();

  if (!a.ncu_csv.empty()) return collect_ncu(app, a, *phase, *shape, now);

  // Host mode.
  for (const char* flag : {"--device", "--theoretical-gb-s", "--device-roofline-gb-s", "--engine"}) {
    if (given(flag)) return usage(fmt::format("{} requires --nvidia-ncu-csv (it describes an HBM profile)", flag));
  }
  if (!given("--measured-gb-s")) {
    return usage(
        "give --nvidia-ncu-csv FILE (an Nsight Compute profile), or --measured-gb-s with --bytes, --seconds "
        "and --bytes-evidence (a host-memory sample); see docs/BANDWIDTH.md");
  }
  bandwidth::HostSample s;
  s.measured_roofline_gb_s = a.measured;
  s.bytes = a.bytes;
  s.seconds = a.seconds;
  s.bytes_evidence = a.bytes_evidence;
  s.phase = *phase;
  s.shape = *shape;
  if (int rc = capture_window(a, s.capture_start_us, s.capture_end_us)) return rc;
  if (!given("--bytes")) return usage("--bytes is required with --measured-gb-s: the bytes the workload moved");
  if (auto st = bandwidth::check_host_sample(s); !st) return usage(st.error().message);
  return write_receipt(a.output, bandwidth::host_sample_receipt_json(s, now, MPO_VERSION), a.html);
}

int run_measure(const MeasureArgs& a) {
  bandwidth::RooflineOptions o;
  o.working_set_bytes = a.working_set_mib << 20;
  o.trials = a.trials;
  auto t = parse_duration_s(a.trial_time);
  if (!t) return usage("--trial-time: " + t.error().message);
  o.target_trial_s = *t;
  o.threads = a.threads;
  o.knee_threshold = a.knee;
  if (auto st = bandwidth::check_roofline_options(o); !st) return usage(st.error().message);
  const auto points = bandwidth::measure_host_roofline(
      o, [](const std::string& line) { std::cerr << "modelperfobs bandwidth measure-host: " << line << "\n"; });
  const auto analysis = bandwidth::analyse_roofline(points, o.knee_threshold);
  if (analysis.sustainable_gb_s) {
    std::cerr << fmt::format("modelperfobs bandwidth measure-host: sustainable {:.2f} GB/s, knee at {} thread(s)\n",
                             *analysis.sustainable_gb_s, analysis.knee_threads.value_or(0));
  }
  return write_receipt(
      a.output, bandwidth::host_roofline_receipt_json(o, points, analysis, host_cpu(), document_time_us(), MPO_VERSION),
      a.html);
}

int run_verify(const std::string& file) {
  const auto text = read_input_file(file, "bandwidth verify");
  if (!text) return 1;
  auto v = bandwidth::verify_receipt(*text);
  if (!v) {
    std::cout << fmt::format("INVALID {}: {}\n", file, v.error().message);
    // Not JSON: it could not be judged; anything else was judged and does not hold.
    return v.error().code == errc::kJsonParse.name() ? 1 : exit_code::kViolated;
  }
  std::cout << fmt::format("OK {} ({}): {}\n", file, v->kind, v->summary);
  return 0;
}

}  // namespace

std::function<int()> setup_bandwidth(CLI::App& app) {
  app.require_subcommand(1);
  auto* collect =
      app.add_subcommand("collect", "an HBM bandwidth receipt from an Nsight Compute CSV, or a host-memory sample");
  auto c = std::make_shared<CollectArgs>();
  collect->add_option("--nvidia-ncu-csv", c->ncu_csv, "Nsight Compute CSV (--page raw or details; --print-units base)")
      ->check(CLI::ExistingFile);
  collect->add_option("--device", c->device,
                      "the device the capture ran on, as you name it (kept apart from the CSV's device ID)");
  collect->add_option("--capture-start", c->capture_start, "RFC 3339 start of the capture window");
  collect->add_option("--capture-end", c->capture_end, "RFC 3339 end of the capture window");
  collect->add_option("--phase", c->phase, "prefill, decode, transfer or other")->capture_default_str();
  collect->add_option("--shape", c->shape, "small, medium or large")->capture_default_str();
  collect->add_option("--engine", c->engine, "the serving engine profiled (recorded as your assertion)");
  collect->add_option("--theoretical-gb-s", c->theoretical, "the card's datasheet memory bandwidth, GB/s");
  collect->add_option("--device-roofline-gb-s", c->device_roofline,
                      "a measured roofline of the same device and envelope, GB/s");
  collect->add_option("--measured-gb-s", c->measured,
                      "host mode: the host roofline from `bandwidth measure-host`, GB/s");
  collect->add_option("--bytes", c->bytes, "host mode: bytes the workload moved");
  collect->add_option("--seconds", c->seconds, "host mode: the wall time those bytes were moved in");
  collect->add_option("--bytes-evidence", c->bytes_evidence, "host mode: what the --bytes figure rests on");
  collect->add_option("--output", c->output, "receipt file (default: stdout)");
  collect->add_option("--html", c->html, "also write the receipt as one self-contained page here");
  for (const char* flag : kRefused) {
    collect->add_option(flag, c->refused_value, "refused here (fak compatibility): says why")->group("Refused");
  }
  auto* measure =
      app.add_subcommand("measure-host", "measure this machine's host-memory copy roofline (under a minute)");
  auto m = std::make_shared<MeasureArgs>();
  measure->add_option("--working-set-mib", m->working_set_mib, "MiB copied per iteration")->capture_default_str();
  measure->add_option("--trials", m->trials, "trials per thread count (median kept)")->capture_default_str();
  measure->add_option("--trial-time", m->trial_time, "target time of one trial")->capture_default_str();
  measure->add_option("--threads", m->threads, "thread counts to sweep (default 1,2,4,... up to the cores)")
      ->delimiter(',');
  measure->add_option("--knee-threshold", m->knee, "the knee: first point from which all are >= this x sustainable")
      ->capture_default_str();
  measure->add_option("--output", m->output, "receipt file (default: stdout)");
  measure->add_option("--html", m->html, "also write the receipt as one self-contained page here");
  auto* verify = app.add_subcommand(
      "verify", "re-check a bandwidth or host-roofline receipt; exit 3 when it does not hold, 1 when it is not JSON");
  auto file = std::make_shared<std::string>();
  verify->add_option("FILE", *file, "the receipt")->required();
  return [collect, measure, c, m, file] {
    if (collect->parsed()) return run_collect(*collect, *c);
    if (measure->parsed()) return run_measure(*m);
    return run_verify(*file);
  };
}

}  // namespace mpo::cli
