#include <iostream>

#include "cli/commands.hpp"
#include "core/duration.hpp"
#include "core/host_port.hpp"
#include "ledger/writer.hpp"
#include "net/ca_rule.hpp"
#include "proxy/server.hpp"

namespace mpo::cli {
namespace {

struct ProxyArgs {
  proxy::ProxyOptions opts;
  std::string listen = "127.0.0.1:8091";
  std::string admin_listen = "127.0.0.1:9464";
  std::string fsync = "interval";
  std::string usage = "passthrough";
  std::string itl = "summary";
  std::string max_body = "33554432";
  std::string scrape_interval = "1s";
  std::string retry_stale = "on";
  std::string timestamps = "kernel";
};

int run(ProxyArgs& a) {
  auto listen = parse_host_port(a.listen);
  if (!listen) {
    std::cerr << "modelperfobs proxy: --listen: " << listen.error().message << "\n";
    return 2;
  }
  a.opts.listen = *listen;
  if (a.admin_listen == "off") {
    a.opts.admin_enabled = false;
  } else {
    auto admin = parse_host_port(a.admin_listen);
    if (!admin) {
      std::cerr << "modelperfobs proxy: --admin-listen: " << admin.error().message << "\n";
      return 2;
    }
    a.opts.admin_listen = *admin;
  }
  auto fsync = ledger::parse_fsync_policy(a.fsync);
  if (!fsync) {
    std::cerr << "modelperfobs proxy: --fsync: " << fsync.error().message << "\n";
    return 2;
  }
  a.opts.fsync = *fsync;
  a.opts.usage = a.usage == "inject" ? proxy::UsageMode::kInject : proxy::UsageMode::kPassthrough;
  a.opts.itl_full = a.itl == "full";
  a.opts.retry_stale = a.retry_stale == "on";
  a.opts.kernel_timestamps = a.timestamps == "kernel";
  auto interval = parse_duration_s(a.scrape_interval);
  if (!interval || *interval <= 0) {
    std::cerr << "modelperfobs proxy: --scrape-interval: "
              << (interval ? std::string("must be above 0") : interval.error().message) << "\n";
    return 2;
  }
  a.opts.scrape_interval_s = *interval;
  return proxy::run_proxy(a.opts);
}

}  // namespace

std::function<int()> setup_proxy(CLI::App& app) {
  auto a = std::make_shared<ProxyArgs>();
  app.add_option("--backend", a->opts.backend, "backend base URL, e.g. http://127.0.0.1:8000 (a base path is kept)")
      ->required();
  app.add_option("--backend-ca", a->opts.backend_ca, net::kCaFileHelp)->check(CLI::ExistingFile);
  app.add_option("--listen", a->listen, "HOST:PORT for clients; port 0 picks a free port (printed)")
      ->capture_default_str();
  app.add_option("--ledger", a->opts.ledger_path,
                 "JSONL ledger to append one line per request to (folders are created)")
      ->capture_default_str();
  app.add_option("--admin-listen", a->admin_listen, "HOST:PORT for GET /metrics and /healthz, or 'off'")
      ->capture_default_str();
  app.add_option("--fsync", a->fsync, "ledger durability: interval (every 1 s), always, never")
      ->check(CLI::IsMember({"interval", "always", "never"}))
      ->capture_default_str();
  app.add_option("--usage", a->usage,
                 "inject: ask streamed chat/completions for usage and hide it from clients that did not")
      ->check(CLI::IsMember({"passthrough", "inject"}))
      ->capture_default_str();
  app.add_option("--itl", a->itl, "summary: ITL p50/p95/max per line; full: also the whole itl_ms list")
      ->check(CLI::IsMember({"summary", "full"}))
      ->capture_default_str();
  app.add_option("--max-body", a->opts.max_body, "largest request body in bytes; larger gets 413")
      ->capture_default_str();
  app.add_option("--connect-timeout", a->opts.connect_timeout_s, "seconds to connect to the backend (then 504)")
      ->capture_default_str();
  app.add_option("--response-timeout", a->opts.response_timeout_s,
                 "seconds from request sent to response head (then 504)")
      ->capture_default_str();
  app.add_option("--stream-idle-timeout", a->opts.stream_idle_timeout_s,
                 "longest silence inside a response body, seconds")
      ->capture_default_str();
  app.add_option("--retry-stale", a->retry_stale,
                 "on: a request whose pooled backend connection turns out closed (EOF or reset before any response "
                 "byte) is sent once more on a fresh connection (docs/PROXY.md); off: answer 502 instead, for "
                 "backends where a replayed POST could do harm")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--timestamps", a->timestamps,
                 "kernel: every time in the ledger is when the bytes reached the proxy's socket (the kernel's receive "
                 "timestamp, SO_TIMESTAMPNS), true however busy the proxy is; loop: when the proxy's event loop read "
                 "them (late by the proxy's own lag under load; for comparison). Lines say which they used "
                 "(timing_basis); docs/PROXY.md \"Timestamps\"")
      ->check(CLI::IsMember({"kernel", "loop"}))
      ->capture_default_str();
  app.add_option("--drain-timeout", a->opts.drain_timeout_s, "on SIGTERM, seconds to let in-flight requests finish")
      ->capture_default_str();
  app.add_option("--max-connections", a->opts.max_connections, "client connections held at once; more are refused")
      ->capture_default_str();
  app.add_option("--id-header", a->opts.id_header, "correlation header name")->capture_default_str();
  app.add_option("--instance", a->opts.instance, "proxy_instance written in every line (default HOST:PID)");
  app.add_option("--scrape", a->opts.scrape_url,
                 "engine metrics URL (e.g. http://127.0.0.1:8000/metrics) to snapshot beside the ledger");
  app.add_option("--scrape-interval", a->scrape_interval, "time between engine snapshots")->capture_default_str();
  app.add_option("--scrape-output", a->opts.scrape_output,
                 "snapshots file (modelperfobs.scrape.v1 JSONL; default: the ledger's name with .scrape.jsonl)");
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
