// `modelperfobs proxy`: its flags into ProxyOptions (with the OTEL_* variables), checked, then
// proxy::run_proxy.
#include <iostream>

#include "cli/commands.hpp"
#include "cli/number_checks.hpp"
#include "core/duration.hpp"
#include "core/host_port.hpp"
#include "ledger/writer.hpp"
#include "net/ca_rule.hpp"
#include "net/client.hpp"
#include "proxy/server.hpp"
#include "scrape/fetch.hpp"
#include "scrape/snapshot.hpp"

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
  std::string otlp_metrics_interval;
};

// What the --scrape URL answers at start-up, as a warning: a proxy may well start before its engine
// (a sidecar, a restart). The backend gets nothing of the proxy's own (the proxy's requests are
// the clients'): what its answers show is said as they come (proxy/backend_notes.hpp).
void startup_check(const proxy::ProxyOptions& o) {
  constexpr double kTimeoutS = 2;
  if (o.scrape_url.empty()) return;
  auto metrics = scrape::parse_metrics_url(o.scrape_url);
  if (!metrics) return;  // the recorder says why, and stops the proxy
  net::ExchangeOptions req;
  req.target = metrics->base_path;
  req.user_agent = "modelperfobs-proxy";
  const auto x = net::exchange_blocking(*metrics, {}, std::move(req), kTimeoutS);
  std::string problem;
  if (x.failure) {
    problem = x.failure->message;
  } else if (x.status < 200 || x.status >= 300) {
    problem = "answered HTTP " + std::to_string(x.status);
  } else {
    scrape::Snapshot s;
    scrape::absorb_body(s, x.body);
    if (s.status == scrape::ScrapeStatus::kParseError) problem = s.error;
  }
  if (!problem.empty()) {
    std::cerr << "modelperfobs proxy: warning: --scrape " << o.scrape_url << ": " << problem
              << " (expected the engine's Prometheus /metrics page; snapshots record each failure)\n";
  }
}

int run(ProxyArgs& a) {
  auto listen = parse_host_port(a.listen);
  if (!listen) {
    std::cerr << "modelperfobs proxy: --listen: " << listen.error().message << "\n";
    return 2;
  }
  a.opts.listen = *listen;
  if (a.opts.session_header == "off") a.opts.session_header.clear();
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
  if (!a.otlp_metrics_interval.empty()) {
    auto every = parse_duration_s(a.otlp_metrics_interval);
    if (!every || *every <= 0) {
      std::cerr << "modelperfobs proxy: --otlp-metrics-interval: "
                << (every ? std::string("must be above 0") : every.error().message) << "\n";
      return 2;
    }
    a.opts.otlp.metrics_interval_s = *every;
  }
  startup_check(a.opts);
  return proxy::run_proxy(a.opts);
}

}  // namespace

std::function<int()> setup_proxy(CLI::App& app) {
  auto a = std::make_shared<ProxyArgs>();
  app.footer(
      "Exit codes: 0 stopped by SIGTERM/SIGINT after draining; 1 a listen address or the ledger cannot be opened; "
      "2 usage error. A backend that refuses connections or answers 404 to clients' API paths, and a --scrape URL "
      "that is not a Prometheus page at start-up, are said in one line on stderr, not an exit: the proxy may start "
      "before its engine.");
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
  app.add_option("--pool-idle", a->opts.pool_idle_s,
                 "longest a backend connection waits between requests to be used again, seconds (at most N - 1 "
                 "where the backend states Keep-Alive: timeout=N). The default is under uvicorn's 5 s "
                 "(vLLM's and SGLang's server, which close idle connections without saying so); raise it for a "
                 "backend that keeps them longer; 0: a connection for every request (docs/PROXY.md)")
      ->capture_default_str()
      ->check(non_negative_number());
  app.add_option("--timestamps", a->timestamps,
                 "kernel: every time in the ledger is when the bytes reached the proxy's socket (the kernel's receive "
                 "timestamp, SO_TIMESTAMPNS), true however busy the proxy is; loop: when the proxy's event loop read "
                 "them (late by the proxy's own lag under load; for comparison). Lines say which they used "
                 "(timing_basis); docs/PROXY.md \"Timestamps\"")
      ->check(CLI::IsMember({"kernel", "loop"}))
      ->capture_default_str();
  app.add_option("--drain-timeout", a->opts.drain_timeout_s, "on SIGTERM, seconds to let in-flight requests finish")
      ->capture_default_str();
  app.add_option("--max-connections", a->opts.max_connections,
                 "client connections held at once; more are answered 503. Default: what the file descriptor limit "
                 "allows ((ulimit -n - 128) / 2, the soft limit raised to the hard one first)");
  app.add_option("--max-header-bytes", a->opts.max_header_bytes,
                 "largest request head (request line and header fields); larger gets 431")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{256}, std::size_t{1} << 24));
  app.add_option("--max-header-count", a->opts.max_header_count, "most header fields in a request; more gets 431")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}));
  app.add_option("--client-idle-timeout", a->opts.client_idle_timeout_s,
                 "seconds a client connection may wait for its next request (keep-alive)")
      ->capture_default_str()
      ->check(positive_number());
  app.add_option("--client-header-timeout", a->opts.client_header_timeout_s,
                 "seconds from a request's first byte to the end of its head; then the connection is closed")
      ->capture_default_str()
      ->check(positive_number());
  app.add_option("--client-body-timeout", a->opts.client_body_timeout_s,
                 "longest pause, in seconds, between reads of a request body; then 408")
      ->capture_default_str()
      ->check(positive_number());
  app.add_option("--defer-accept", a->opts.defer_accept_s,
                 "seconds the kernel holds a new connection until its first bytes come (TCP_DEFER_ACCEPT, as nginx's "
                 "`listen ... deferred`): one system call and one wake-up fewer per connection, but the accept and "
                 "the connection's set-up then come between a request's arrival and its read (later reads in a "
                 "burst of new connections); a connection that sends nothing is handed over after it. 0: at once")
      ->capture_default_str()
      ->check(CLI::Range(0, 600));
  app.add_flag("--reuse-port", a->opts.reuse_port,
               "let other processes listen on the same --listen port (SO_REUSEPORT; the kernel spreads connections "
               "between them). Without it a port something else listens on is refused at start-up");
  a->opts.threads = proxy::default_proxy_threads();
  app.add_option("--threads", a->opts.threads,
                 "event loops, each on its own thread with its own listener and upstream connections (the kernel "
                 "spreads new connections between them); one ledger, one /metrics. Default: the hardware threads, "
                 "at most 8")
      ->check(CLI::Range(1, 64))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  app.add_option("--id-header", a->opts.id_header, "correlation header name")->capture_default_str();
  app.add_option("--session-header", a->opts.session_header,
                 "request header that names a conversation: its lines get session_id and turn (docs/FORMATS.md "
                 "\"Sessions\"); off: sessions only from the body (previous_response_id, metadata.user_id, user, "
                 "safety_identifier)")
      ->capture_default_str();
  app.add_option("--instance", a->opts.instance, "proxy_instance written in every line (default HOST:PID)");
  app.add_option("--scrape", a->opts.scrape_url,
                 "engine metrics URL (e.g. http://127.0.0.1:8000/metrics) to snapshot beside the ledger");
  app.add_option("--scrape-interval", a->scrape_interval, "time between engine snapshots")->capture_default_str();
  app.add_option("--scrape-output", a->opts.scrape_output,
                 "snapshots file (modelperfobs.scrape.v1 JSONL; default: the ledger's name with .scrape.jsonl)");
  app.add_option("--otlp-endpoint", a->opts.otlp.endpoint,
                 "OTLP/HTTP base URL of a collector, e.g. http://127.0.0.1:4318: one span per request to "
                 "/v1/traces and the gen_ai.client.* metrics to /v1/metrics (default: $OTEL_EXPORTER_OTLP_ENDPOINT; "
                 "none: no export). The other OTEL_EXPORTER_OTLP_* and OTEL_* variables are honoured (docs/OTEL.md)");
  app.add_option("--otlp-protocol", a->opts.otlp.protocol,
                 "http/protobuf (the collector's default) or http/json (default: $OTEL_EXPORTER_OTLP_PROTOCOL, "
                 "else http/protobuf)")
      ->check(CLI::IsMember({"http/protobuf", "http/json"}));
  app.add_option("--otlp-metrics-interval", a->otlp_metrics_interval,
                 "time between OTLP metric exports (default: $OTEL_METRIC_EXPORT_INTERVAL in ms, else 60s)");
  app.add_option(
         "--otlp-ca", a->opts.otlp.ca_file,
         std::string(net::kCaFileHelp) + " (for an https OTLP endpoint; default: $OTEL_EXPORTER_OTLP_CERTIFICATE)")
      ->check(CLI::ExistingFile);
  app.add_option("--genai-provider", a->opts.genai_provider,
                 "gen_ai.provider.name on spans and metrics, e.g. openai, anthropic, aws.bedrock (default: anthropic "
                 "for the Messages API, openai for the rest)");
  app.add_option("--max-model-labels,--max-models", a->opts.max_model_labels,
                 "distinct model names kept as label values of /metrics (modelperfobs_requests_total, the latency "
                 "histograms and the gen_ai_* metrics); later ones are counted as _other")
      ->capture_default_str()
      ->check(positive_number());
  app.add_option("--max-label-bytes", a->opts.max_label_bytes,
                 "longest model name kept as a label value; longer ones are counted as _other")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1}, std::size_t{65536}));
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
