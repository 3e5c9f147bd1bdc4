// What `modelperfobs proxy` is told: every setting of the proxy, with its default (the flags in
// cli/proxy_command.cpp fill it; docs/PROXY.md explains each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/host_port.hpp"
#include "ledger/writer.hpp"
#include "otel/config.hpp"

namespace mpo::proxy {

enum class UsageMode { kPassthrough, kInject };

struct ProxyOptions {
  std::string backend;     // http(s)://host:port[/base]
  std::string backend_ca;  // PEM CA file for an https backend; "" = the system's
  HostPort listen{"127.0.0.1", 8091};
  HostPort admin_listen{"127.0.0.1", 9464};
  bool admin_enabled = true;
  std::string ledger_path = "model-perf.jsonl";
  ledger::FsyncPolicy fsync = ledger::FsyncPolicy::kInterval;
  std::uint64_t max_body = 32ull * 1024 * 1024;
  double connect_timeout_s = 5;
  double response_timeout_s = 300;     // request sent -> response head
  double stream_idle_timeout_s = 300;  // longest silence inside a response body
  double client_idle_timeout_s = 120;  // keep-alive wait for the next request
  // A request head must arrive within this of its first byte; a body may pause at most this long
  // between reads (nginx: client_header_timeout, client_body_timeout, both 60 s).
  double client_header_timeout_s = 60;
  double client_body_timeout_s = 60;
  // Request heads: bytes (request line, fields, blank line) and field lines (431 beyond either).
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_header_count = 100;
  double drain_timeout_s = 30;
  double pool_idle_s = 4;         // --pool-idle: shorter than uvicorn's 5 s keep-alive
  bool retry_stale = true;        // resend once on a fresh connection when a pooled one was closed
  bool kernel_timestamps = true;  // reads carry the kernel's receive time (docs/PROXY.md "Timestamps")
  // Client connections held at once; 0: derived from RLIMIT_NOFILE (proxy/limits.hpp).
  int max_connections = 0;
  // SO_REUSEPORT for other processes too: without it a second proxy on the same --listen is
  // refused at start-up (the loops of one proxy share their port either way).
  bool reuse_port = false;
  // Connections are handed over by the kernel once their first bytes came or this many seconds
  // passed (TCP_DEFER_ACCEPT); 0 (the default): at once. Deferring saves a failed read and a
  // wake-up per new connection but puts the accept and the connection's set-up between a request's
  // arrival and its read (docs/PROXY.md "Performance").
  int defer_accept_s = 0;
  UsageMode usage = UsageMode::kPassthrough;
  bool itl_full = false;
  std::string id_header = "X-Fak-Observation-ID";
  // The request header that names a conversation (proxy/sessions.hpp); "" (--session-header off):
  // sessions from the body's evidence only.
  std::string session_header = "X-Session-ID";
  std::string instance;    // proxy_instance; default host:pid
  std::string scrape_url;  // engine /metrics to snapshot beside the ledger; "" = off
  double scrape_interval_s = 1.0;
  std::string scrape_output;  // default: the ledger's path with .scrape.jsonl
  // OpenTelemetry (docs/OTEL.md): OTLP export (also from the OTEL_* environment variables), the
  // gen_ai.provider.name to report ("" = by API) and the cap on model label values.
  otel::ExportFlags otlp;
  std::string genai_provider;
  std::size_t max_model_labels = 50;
  // Label values taken from requests (model names) longer than this are counted as _other.
  std::size_t max_label_bytes = 256;
  // Event loops, each on its own thread with its own listener (SO_REUSEPORT: the kernel spreads
  // connections) and upstream pool; one ledger writer, one set of metrics, one exporter.
  int threads = 1;
};

}  // namespace mpo::proxy
