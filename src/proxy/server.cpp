// `modelperfobs proxy`: the loops' life (open, listen, accept, the admin listener, drain on
// SIGTERM) and each client connection (proxy/loop.hpp); `run_proxy` starts one loop per thread.
#include "proxy/server.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "core/uuid.hpp"
#include "ledger/from_tap.hpp"
#include "ledger/observation.hpp"
#include "net/backend_url.hpp"
#include "net/client.hpp"
#include "openai/chunk.hpp"
#include "openai/stream_tap.hpp"
#include "promtext/text_writer.hpp"
#include "proxy/backend_notes.hpp"
#include "proxy/correlation.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/loop.hpp"
#include "proxy/outcome.hpp"
#include "proxy/proxy_metrics.hpp"
#include "proxy/receive.hpp"
#include "proxy/shared_state.hpp"
#include "proxy/telemetry.hpp"
#include "proxy/timing.hpp"
#include "proxy/upstream_policy.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/usage_injection.hpp"
#include "scrape/recorder.hpp"

namespace mpo::proxy {

Status Proxy::open(std::uint16_t port) {
  auto client = net::Client::make(io_.get_executor(), backend_, opts_.backend_ca, "--backend-ca");
  if (!client) return make_error("proxy.tls", client.error().message);
  client_ = std::move(*client);
  pool_ = std::make_unique<UpstreamPool>(*client_, opts_.connect_timeout_s, opts_.pool_idle_s, opts_.kernel_timestamps);
  if (index_ == 0) {
    if (auto st = shared_.ledger.open(); !st) return st;
    auto telemetry = Telemetry::make(
        {opts_.otlp, {opts_.genai_provider, backend_.host, backend_.port, opts_.max_model_labels}, opts_.instance},
        [](std::string_view name) -> std::optional<std::string> {
          const char* v = std::getenv(std::string(name).c_str());
          return v ? std::optional<std::string>(v) : std::nullopt;
        });
    if (!telemetry) return make_error("proxy.otlp", telemetry.error().message);
    shared_.telemetry = std::move(*telemetry);
    if (scraper_) {
      if (auto st = scraper_->open(); !st) return st;
    }
  }
  HostPort where = opts_.listen;
  if (port != 0) where.port = port;
  if (auto st = listen(acceptor_, where, "--listen", opts_.threads > 1); !st) return st;
  // Accepted sockets inherit it: each request's arrival is the kernel's receive time.
  rx_timestamps_ = opts_.kernel_timestamps && enable_rx_timestamps(acceptor_.native_handle());
  if (index_ == 0 && opts_.admin_enabled) {
    if (auto st = listen(admin_acceptor_, opts_.admin_listen, "--admin-listen", false); !st) return st;
  }
  return Ok{};
}

std::string Proxy::address(const tcp::acceptor& a) const {
  const auto ep = a.local_endpoint();
  return ep.address().is_v6() ? fmt::format("http://[{}]:{}", ep.address().to_string(), ep.port())
                              : fmt::format("http://{}:{}", ep.address().to_string(), ep.port());
}

void Proxy::start() {
  asio::co_spawn(io_, accept_loop(acceptor_, false), asio::detached);
  if (index_ != 0) return;
  if (opts_.admin_enabled) asio::co_spawn(io_, accept_loop(admin_acceptor_, true), asio::detached);
  if (shared_.telemetry->exports_metrics()) asio::co_spawn(io_, export_metrics_loop(), asio::detached);
  if (scraper_) scraper_->start(io_);
}

std::string Proxy::outputs() const {
  std::string out = scraper_ ? fmt::format("ledger {}, engine snapshots {}", opts_.ledger_path, scraper_->output())
                             : fmt::format("ledger {}", opts_.ledger_path);
  if (const auto otlp = shared_.telemetry->describe(); !otlp.empty()) out += ", " + otlp;
  return out;
}

void Proxy::begin_shutdown() {
  if (stopping_) return;
  stopping_ = true;
  boost::system::error_code ec;
  acceptor_.close(ec);
  asio::co_spawn(io_, drain(), asio::detached);
}

void Proxy::reopen_ledger() {
  shared_.ledger.request_reopen();
  if (scraper_) scraper_->request_reopen();
}

Status Proxy::listen(tcp::acceptor& a, const HostPort& hp, std::string_view flag, bool reuse_port) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(hp.host, ec);
  if (ec) return make_error("proxy.listen", fmt::format("{}: invalid address '{}'", flag, hp.host));
  const tcp::endpoint ep(addr, hp.port);
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec && reuse_port) {
    // Several loops listen on one port; the kernel spreads new connections between them.
    const int on = 1;
    if (setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
      ec.assign(errno, boost::system::system_category());
  }
  if (!ec) a.set_option(tcp::no_delay(true), ec);  // inherited by accepted sockets
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return make_error("proxy.listen", fmt::format("{}: cannot listen on {}:{}: {} (use port 0 for any free port)", flag,
                                                  hp.host, hp.port, ec.message()));
  }
  return Ok{};
}

void Proxy::report_ledger_losses() const {
  if (const auto lost = shared_.ledger.lines_lost(); lost > 0) {
    std::cerr << fmt::format(
        "modelperfobs proxy: {} ledger line(s) could not be written to '{}' before exit ({}); "
        "the lines before them are whole\n",
        lost, opts_.ledger_path, std::strerror(shared_.ledger.last_write_errno()));
  }
  if (const auto dropped = shared_.ledger.lines_dropped(); dropped > 0) {
    std::cerr << fmt::format(
        "modelperfobs proxy: {} ledger line(s) were dropped (the disk was slower than the "
        "requests, or they came while stopping); the ledger's gap lines count those it could record\n",
        dropped);
  }
}

awaitable<void> Proxy::drain() {
  asio::steady_timer t(io_);
  const auto deadline = std::chrono::steady_clock::now() + seconds(opts_.drain_timeout_s);
  auto wait_while = [&](auto busy) -> awaitable<void> {
    while (busy() && std::chrono::steady_clock::now() < deadline) {
      t.expires_after(std::chrono::milliseconds(10));
      co_await t.async_wait(kNoThrow);
    }
  };
  co_await wait_while([&] { return in_flight_here_ > 0; });
  if (index_ != 0) {
    --shared_.loops_running;
    io_.stop();
    co_return;
  }
  co_await wait_while([&] { return shared_.loops_running > 1; });
  for (auto* loop : shared_.loops) {
    if (loop != &io_) loop->stop();  // those past the deadline
  }
  shared_.ledger.close();
  report_ledger_losses();
  if (scraper_) scraper_->stop();
  // A dead collector delays the exit this long at most.
  shared_.telemetry->stop(std::min(5.0, opts_.drain_timeout_s));
  io_.stop();
}

awaitable<void> Proxy::export_metrics_loop() {
  asio::steady_timer t(io_);
  while (!stopping_) {
    t.expires_after(seconds(shared_.telemetry->metrics_interval_s()));
    co_await t.async_wait(kNoThrow);
    if (!stopping_) shared_.with_telemetry([](Telemetry& telemetry) { telemetry.export_metrics_now(); });
  }
}

awaitable<void> Proxy::accept_loop(tcp::acceptor& acceptor, bool admin) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping_) co_return;
      continue;
    }
    if (!admin && shared_.connections >= opts_.max_connections) {
      // Over the connection limit: answer 503 (and record it) instead of serving.
      asio::co_spawn(io_, refuse_connection(beast::tcp_stream(std::move(socket))), asio::detached);
      continue;
    }
    // Linux copies TCP_NODELAY from the listening socket to accepted ones; checked once, so
    // the common case costs no setsockopt per connection.
    if (!nodelay_inherited_) {
      tcp::no_delay nd;
      socket.get_option(nd, ec);
      nodelay_inherited_ = !ec && nd.value();
      if (!nodelay_inherited_) socket.set_option(tcp::no_delay(true), ec);
    }
    if (!admin) shared_.accepted_by_loop[static_cast<std::size_t>(index_)].fetch_add(1, std::memory_order_relaxed);
    if (admin) {
      asio::co_spawn(io_, admin_session(beast::tcp_stream(std::move(socket))), asio::detached);
    } else {
      asio::co_spawn(io_, session(beast::tcp_stream(std::move(socket))), asio::detached);
    }
  }
}

awaitable<void> Proxy::admin_session(beast::tcp_stream stream) {
  beast::flat_buffer buffer;
  http::request<http::string_body> req;
  stream.expires_after(std::chrono::seconds(30));
  auto [ec, n] = co_await http::async_read(stream, buffer, req, kNoThrow);
  if (ec) co_return;
  http::response<http::string_body> res(http::status::ok, req.version());
  if (req.target() == "/metrics") {
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = shared_.render_metrics();
  } else if (req.target() == "/healthz") {
    res.set(http::field::content_type, "text/plain");
    res.body() = "ok\n";
  } else {
    res.result(http::status::not_found);
    res.body() = "not found: try /metrics or /healthz\n";
  }
  res.keep_alive(false);
  res.prepare_payload();
  co_await http::async_write(stream, res, kNoThrow);
}

awaitable<void> Proxy::session(beast::tcp_stream client) {
  ++shared_.connections;
  beast::flat_buffer buffer;
  ReadableWait client_wait(io_.get_executor());
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(opts_.max_body);
    // The request's first bytes, read with their kernel receive time (its arrival); bytes
    // already buffered (a pipelined request) have none.
    std::optional<RxStamp> arrival;
    if (buffer.size() == 0 && rx_timestamps_) {
      auto first = co_await receive_some(client.socket(), buffer, client_wait, seconds(opts_.client_idle_timeout_s));
      if (first.ec) break;  // closed by the client or idle: nothing to answer
      arrival = first.stamp;
    }
    client.expires_after(seconds(opts_.client_idle_timeout_s));
    auto [hec, hn] = co_await http::async_read_header(client, buffer, parser, kNoThrow);
    boost::system::error_code ec = hec;
    if (!ec) {
      // Expect: 100-continue (curl sends it for bodies over 1 KiB): say continue, or the client
      // waits a second before sending the body. The backend gets the body without the header.
      auto expect = parser.get().find(http::field::expect);
      if (expect != parser.get().end() && beast::iequals(expect->value(), "100-continue")) {
        parser.get().erase(http::field::expect);
        http::response<http::empty_body> cont(http::status::continue_, parser.get().version());
        auto [cec, cn] = co_await http::async_write(client, cont, kNoThrow);
        ec = cec;
      }
    }
    if (!ec) {
      auto [bec, bn] = co_await http::async_read(client, buffer, parser, kNoThrow);
      ec = bec;
    }
    if (ec == http::error::body_limit || ec == http::error::header_limit) {
      const auto status = ec == http::error::body_limit ? http::status::payload_too_large
                                                        : http::status::request_header_fields_too_large;
      co_await refuse(client, parser.get(), status);
      break;
    }
    if (ec) break;  // closed by the client, idle timeout, or not HTTP: nothing to answer
    bool keep = false;
    std::string failure;
    try {
      keep = co_await handle(client, parser.release(), arrival);
    } catch (const std::exception& e) {
      failure = e.what();  // the per-request handler: one of the two places exceptions are caught
    }
    if (!failure.empty()) {
      std::cerr << "modelperfobs proxy: request failed: " << failure << "\n";
      keep = false;
    }
    if (!keep || stopping_) break;
  }
  --shared_.connections;  // the socket closes (FIN) as `client` goes out of scope
}

Exchange Proxy::begin(const http::request<http::string_body>& req, const std::optional<RxStamp>& arrival) {
  Exchange x;
  auto& o = x.obs;
  if (arrival) {
    x.t0_us = arrival->steady_us;
    o.started_at_us = arrival->wall_us;
    note(x, *arrival);
  } else {
    x.t0_us = SystemClock::instance().steady_us();
    o.started_at_us = SystemClock::instance().wall_us();
    x.timing.note_loop();
  }
  o.proxy_instance = opts_.instance;
  o.backend = backend_.origin;
  o.method = std::string(req.method_string());
  o.path = std::string(req.target());
  auto id_it = req.find(opts_.id_header);
  const std::string_view client_id = id_it == req.end() ? std::string_view() : std::string_view(id_it->value());
  o.observation_id = adopt_or_new_id(client_id, ids_, o.started_at_us / 1000);
  // W3C trace context: one traceparent continues the client's trace (two make it invalid).
  std::optional<std::string_view> traceparent;
  if (auto tp = req.find("traceparent"); tp != req.end() && req.count("traceparent") == 1) traceparent = tp->value();
  x.trace = shared_.with_telemetry([&](Telemetry& t) { return t.begin(traceparent); });
  if (x.trace.continued) {
    for (auto [it, end] = req.equal_range("tracestate"); it != end; ++it) {
      if (!x.trace_state.empty()) x.trace_state += ',';
      x.trace_state += it->value();
    }
  }
  o.trace_id = otel::to_hex(x.trace.trace_id);
  o.span_id = otel::to_hex(x.trace.span_id);
  const auto info = openai::inspect_request(req.target(), req.body());
  o.operation = std::string(openai::to_string(info.operation));
  o.model = info.model;
  o.stream = info.stream;
  o.usage_requested = info.usage_requested;
  o.request_bytes = req.body().size();
  o.in_flight_at_start = shared_.in_flight++;
  ++in_flight_here_;
  o.upstream_retries = 0;
  return x;
}

void Proxy::note(Exchange& x, const RxStamp& s) {
  x.timing.note(s);
  x.last_rx = s;
  if (s.kernel) shared_.with_metrics([&](ProxyMetrics& m) { m.observe_lag(s.lag_us / 1e6); });
}

void Proxy::note_loop_read(Exchange& x) {
  x.timing.note_loop();
  x.last_rx = loop_stamp(SystemClock::instance().wall_us(), SystemClock::instance().steady_us());
}

void Proxy::finish(Exchange& x) {
  auto& o = x.obs;
  o.ended_at_us = SystemClock::instance().wall_us();
  if (!o.e2e_ms) {
    x.timing.note_loop();
    o.e2e_ms = since_ms(x);
  }
  o.timing_basis = std::string(x.timing.basis());
  o.proxy_lag_ms = x.timing.max_lag_ms();
  const auto note = shared_.with_metrics([&](ProxyMetrics& m) {
    m.record(o);
    return shared_.notes.observe(o);
  });
  if (note) std::cerr << *note << "\n";
  shared_.ledger.submit(ledger::render_observation(o));
  --shared_.in_flight;
  --in_flight_here_;
  // Last: the line moves to the exporter (x.obs is not read after finish()).
  shared_.with_telemetry([&](Telemetry& t) { t.finish(std::move(o), x.trace, std::move(x.trace_state)); });
}

double Proxy::since_ms(const Exchange& x) const {
  return static_cast<double>(SystemClock::instance().steady_us() - x.t0_us) / 1000.0;
}

awaitable<bool> Proxy::answer_error(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
                                    http::status status, std::string_view type, std::string message) {
  http::response<http::string_body> res(status, version);
  res.set(http::field::content_type, "application/json");
  res.set(opts_.id_header, x.obs.observation_id);
  res.body() = fmt::format(R"({{"error":{{"message":{},"type":{},"param":null,"code":{}}}}})", json_quote(message),
                           json_quote(type), static_cast<int>(status));
  res.keep_alive(keep_alive);
  res.prepare_payload();
  x.obs.http_status = static_cast<int>(status);
  x.obs.outcome = std::string(type);
  x.obs.error_type = std::string(type);
  x.obs.error_message = message;
  x.obs.response_bytes = res.body().size();
  client.expires_after(std::chrono::seconds(30));
  auto [ec, n] = co_await http::async_write(client, res, kNoThrow);
  finish(x);
  co_return !ec && keep_alive;
}

awaitable<bool> Proxy::answer_upstream_failure(beast::tcp_stream& client, Exchange& x, unsigned version,
                                               bool keep_alive, boost::system::error_code ec,
                                               std::string_view otherwise_type, std::string_view timed_out_what,
                                               std::string_view otherwise_what) {
  const bool timed_out = ec == beast::error::timeout;
  const auto status = timed_out ? http::status::gateway_timeout : http::status::bad_gateway;
  const std::string_view type = timed_out ? std::string_view("upstream_timeout") : otherwise_type;
  std::string message = fmt::format("modelperfobs proxy: backend {} {}: {}", backend_.origin,
                                    timed_out ? timed_out_what : otherwise_what, ec.message());
  co_return co_await answer_error(client, x, version, keep_alive, status, type, std::move(message));
}

awaitable<void> Proxy::refuse(beast::tcp_stream& client, const http::request<http::string_body>& partial,
                              http::status status) {
  Exchange x = begin(partial);
  // Arguments are built before co_await: GCC 12 destroys temporaries of a co_await expression
  // twice when they come from a conditional (a double free seen here).
  std::string message;
  if (status == http::status::payload_too_large) {
    message = fmt::format("request body over --max-body ({} bytes)", opts_.max_body);
  } else if (status == http::status::service_unavailable) {
    message = fmt::format("over --max-connections ({}); try again later", opts_.max_connections);
  } else {
    message = "request headers over 64 KiB";
  }
  co_await answer_error(client, x, partial.version(), false, status, "proxy_error", std::move(message));
}

awaitable<void> Proxy::refuse_connection(beast::tcp_stream client) {
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  parser.header_limit(64 * 1024);
  parser.body_limit(opts_.max_body);
  client.expires_after(std::chrono::seconds(5));
  auto [ec, n] = co_await http::async_read(client, buffer, parser, kNoThrow);
  if (ec) co_return;
  co_await refuse(client, parser.get(), http::status::service_unavailable);
}

int default_proxy_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n == 0 ? 1u : n, 1u, 8u));
}

int run_proxy(const ProxyOptions& options) {
  auto backend = net::parse_backend_url(options.backend);
  if (!backend) {
    std::cerr << "modelperfobs proxy: " << backend.error().message << "\n";
    return 2;
  }
  const int n = std::max(1, options.threads);
  Shared shared(options);
  std::vector<std::unique_ptr<asio::io_context>> loops;
  std::vector<std::unique_ptr<Proxy>> proxies;
  for (int i = 0; i < n; ++i) {
    loops.push_back(std::make_unique<asio::io_context>(1));
    shared.loops.push_back(loops.back().get());
    shared.accepted_by_loop.emplace_back(0);
    ++shared.loops_running;
    proxies.push_back(std::make_unique<Proxy>(*loops.back(), options, *backend, shared, i));
    if (auto st = proxies.back()->open(i == 0 ? 0 : proxies.front()->listen_port()); !st) {
      std::cerr << "modelperfobs proxy: " << st.error().message << "\n";
      return 1;
    }
  }
  Proxy& primary = *proxies.front();
  asio::io_context& io = *loops.front();
  asio::signal_set stop(io, SIGINT, SIGTERM);
  stop.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    for (std::size_t i = 1; i < proxies.size(); ++i) {
      asio::post(*loops[i], [p = proxies[i].get()] { p->begin_shutdown(); });
    }
    primary.begin_shutdown();
  });
  asio::signal_set hup(io, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> on_hup = [&](const boost::system::error_code& ec, int) {
    if (ec) return;
    primary.reopen_ledger();
    hup.async_wait(on_hup);
  };
  hup.async_wait(on_hup);
  for (auto& p : proxies) p->start();
  // The admin address stays last before ")": scripts and tests read it there.
  std::cout << fmt::format("modelperfobs proxy: listening on {} -> {} ({}{}, admin {})", primary.listen_address(),
                           backend->origin + backend->base_path, primary.outputs(),
                           n > 1 ? fmt::format(", {} threads", n) : std::string(), primary.admin_address())
            << std::endl;
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back([&loop = *loops[static_cast<std::size_t>(i)]] { loop.run(); });
  io.run();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace mpo::proxy
