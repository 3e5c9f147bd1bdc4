// `modelperfobs scrape`: snapshots of an engine's /metrics (a URL, or saved pages with --file) and
// the facts they state, as md or json.
#include <fmt/format.h>
#include <sys/stat.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/files.hpp"
#include "core/clock.hpp"
#include "core/duration.hpp"
#include "ledger/writer.hpp"
#include "net/ca_rule.hpp"
#include "scrape/facts_report.hpp"
#include "scrape/fetch.hpp"
#include "scrape/snapshot_reader.hpp"

#ifndef MPO_VERSION
#define MPO_VERSION "0.0.0"
#endif

namespace mpo::cli {
namespace {

// "vllm v1", or "llama.cpp" where the engine has no generation (no stray space before the comma).
std::string engine_label(engines::Engine e) {
  const std::string_view gen = engines::engine_generation(e);
  return gen.empty() ? std::string(engines::engine_name(e)) : fmt::format("{} {}", engines::engine_name(e), gen);
}

struct ScrapeArgs {
  std::string url;
  std::vector<std::string> files;
  std::vector<std::string> snapshots;
  std::string interval = "1s";
  std::uint64_t count = 0;
  std::string duration;
  std::string timeout = "5s";
  std::string ca;
  std::string output;
  std::string format = "md";
  bool quiet = false;
};

int usage_error(const std::string& message) {
  std::cerr << "modelperfobs scrape: " << message << "\n";
  return 2;
}

// A saved exposition as a snapshot; its modification time stands for the scrape time.
scrape::Snapshot snapshot_of_file(const std::string& path, std::uint64_t seq) {
  scrape::Snapshot s;
  s.seq = seq;
  s.source = "file:" + path;
  struct stat st {};
  const std::int64_t now = SystemClock::instance().wall_us();
  s.started_at_us = ::stat(path.c_str(), &st) == 0
                        ? static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000 + st.st_mtim.tv_nsec / 1000
                        : now;
  s.scheduled_at_us = s.ended_at_us = s.started_at_us;
  const auto body = read_text_file(path);
  if (!body) {
    s.status = scrape::ScrapeStatus::kUnreachable;
    s.error = fmt::format("cannot read {}", path);
    return s;
  }
  scrape::absorb_body(s, *body);
  return s;
}

int run(const ScrapeArgs& a) {
  if (!a.url.empty() + !a.files.empty() + !a.snapshots.empty() != 1) {
    return usage_error("give one of --url URL, --file FILE (saved pages) or --snapshots FILE (recorded snapshots)");
  }
  auto interval = parse_duration_s(a.interval);
  if (!interval) return usage_error("--interval: " + interval.error().message);
  if (*interval <= 0) return usage_error("--interval must be above 0");
  auto timeout = parse_duration_s(a.timeout);
  if (!timeout) return usage_error("--timeout: " + timeout.error().message);
  double duration = 0;
  if (!a.duration.empty()) {
    auto d = parse_duration_s(a.duration);
    if (!d) return usage_error("--duration: " + d.error().message);
    duration = *d;
  }

  std::unique_ptr<ledger::LedgerWriter> out;
  if (!a.output.empty()) {
    out =
        std::make_unique<ledger::LedgerWriter>(ledger::LedgerWriter::Options{a.output, ledger::FsyncPolicy::kInterval});
    if (auto st = out->open(); !st) {
      std::cerr << "modelperfobs scrape: --output: " << st.error().message << "\n";
      return 1;
    }
  }
  std::vector<scrape::Snapshot> snaps;
  auto keep = [&](scrape::Snapshot&& s) {
    if (out) out->submit(scrape::snapshot_json_line(s) + "\n");
    if (!a.quiet) {
      std::cerr << fmt::format("scrape {}: {} {}{}\n", s.seq, scrape::to_string(s.status),
                               scrape::has_signals(s.status)
                                   ? fmt::format("{}, {} bytes, {:.1f} ms", engine_label(s.signals.engine), s.bytes,
                                                 static_cast<double>(s.ended_at_us - s.started_at_us) / 1e3)
                                   : s.error,
                               s.problems.empty() ? "" : fmt::format(" ({} histogram problem(s))", s.problems.size()));
    }
    snaps.push_back(std::move(s));
  };

  if (!a.snapshots.empty()) {
    for (const std::string& f : a.snapshots) {
      const auto text = read_input_file(f, "scrape");
      if (!text) return 1;
      scrape::SnapshotsRead read = scrape::read_snapshots(*text);
      for (const std::string& p : read.problems)
        std::cerr << "modelperfobs scrape: warning: " << f << ": " << p << "\n";
      for (auto& snap : read.snapshots) snaps.push_back(std::move(snap));
    }
  } else if (!a.files.empty()) {
    for (std::size_t i = 0; i < a.files.size(); ++i) keep(snapshot_of_file(a.files[i], i + 1));
  } else {
    auto url = scrape::parse_metrics_url(a.url);
    if (!url) return usage_error("--url: " + url.error().message);
    scrape::Fetcher fetcher(*url, scrape::FetchOptions{*timeout, a.ca});
    scrape::ScheduleOptions schedule{*interval, a.count, duration};
    if (schedule.count == 0 && schedule.duration_s == 0) schedule.count = 1;
    scrape::run_scrapes(fetcher, schedule, keep);
  }
  if (out) out->close();

  const scrape::FactsReport report = scrape::build_facts_report(snaps);
  if (a.format == "md")
    std::cout << scrape::facts_markdown(report);
  else if (a.format == "json")
    std::cout << scrape::facts_json(report, MPO_VERSION) << "\n";
  if (!report.last) {
    std::cerr << "modelperfobs scrape: no successful scrape; check the URL (a bare origin gets /metrics) and that the "
                 "engine serves metrics\n";
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> setup_scrape(CLI::App& app) {
  auto a = std::make_shared<ScrapeArgs>();
  app.footer(
      "Exit codes: 0 at least one scrape succeeded; 1 none did (each failure says what came back: an HTTP status, a "
      "refused connection, a page that is HTML or JSON instead of Prometheus text) or a file cannot be used; 2 usage "
      "error.");
  app.add_option("--url,url", a->url,
                 "the engine's metrics URL, e.g. http://127.0.0.1:8000/metrics (a bare origin gets /metrics)");
  app.add_option("--file", a->files, "a saved exposition instead of --url; give two for an interval (before, after)")
      ->check(CLI::ExistingFile);
  app.add_option("--snapshots", a->snapshots,
                 "recorded modelperfobs.scrape.v1 lines (proxy --scrape, scrape --output): facts over that run")
      ->check(CLI::ExistingFile);
  app.add_option("--interval", a->interval, "time between scrapes (500ms, 1s, 1m)")->capture_default_str();
  app.add_option("--count", a->count, "number of scrapes (default 1 unless --duration is given)");
  app.add_option("--duration", a->duration, "keep scraping this long (10s, 5m)");
  app.add_option("--timeout", a->timeout, "deadline for one scrape")->capture_default_str();
  app.add_option("--ca", a->ca, net::kCaFileHelp)->check(CLI::ExistingFile);
  app.add_option("--output", a->output, "append modelperfobs.scrape.v1 snapshots (JSONL) to this file");
  app.add_option("--format", a->format, "print the engine's facts: md, json, or none")
      ->check(CLI::IsMember({"md", "json", "none"}))
      ->capture_default_str();
  app.add_flag("--quiet", a->quiet, "no progress lines on stderr");
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
