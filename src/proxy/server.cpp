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
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// What a finished exchange left behind, for the ledger line.
struct Exchange {
  ledger::Observation obs;
  std::int64_t t0_us = 0;  // the request's arrival on the steady clock
  LineTiming timing;
  RxStamp last_rx;  // the latest read of this exchange (request, response head, body)
  otel::RequestTrace trace;
  std::string trace_state;  // the client's tracestate, forwarded when its traceparent was valid
};

class Proxy {
 public:
  // `index` 0 is the primary loop: the admin listener, the scraper, signals and the drain.
  Proxy(asio::io_context& io, ProxyOptions opts, net::BackendUrl backend, Shared& shared, int index)
      : io_(io),
        opts_(std::move(opts)),
        backend_(std::move(backend)),
        acceptor_(io),
        admin_acceptor_(io),
        shared_(shared),
        index_(index) {
    if (index_ == 0 && !opts_.scrape_url.empty()) {
      if (opts_.scrape_output.empty()) opts_.scrape_output = scrape::snapshots_path_for(opts_.ledger_path);
      scraper_ = std::make_unique<scrape::Recorder>(scrape::Recorder::Options{
          opts_.scrape_url, opts_.scrape_interval_s, std::min(5.0, std::max(0.5, opts_.scrape_interval_s)),
          opts_.scrape_output, opts_.fsync});
    }
    if (opts_.instance.empty()) {
      char host[256] = {};
      gethostname(host, sizeof host - 1);
      opts_.instance = fmt::format("{}:{}", host, getpid());
    }
  }

  // The primary opens what is shared (ledger, exporter, scraper) and the admin listener; every
  // loop its own connection pool and listener (on the primary's port when there are several).
  Status open(std::uint16_t port) {
    auto client = net::Client::make(io_.get_executor(), backend_, opts_.backend_ca, "--backend-ca");
    if (!client) return make_error("proxy.tls", client.error().message);
    client_ = std::move(*client);
    pool_ =
        std::make_unique<UpstreamPool>(*client_, opts_.connect_timeout_s, opts_.pool_idle_s, opts_.kernel_timestamps);
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

  std::uint16_t listen_port() const { return acceptor_.local_endpoint().port(); }

  std::string address(const tcp::acceptor& a) const {
    const auto ep = a.local_endpoint();
    return ep.address().is_v6() ? fmt::format("http://[{}]:{}", ep.address().to_string(), ep.port())
                                : fmt::format("http://{}:{}", ep.address().to_string(), ep.port());
  }
  std::string listen_address() const { return address(acceptor_); }
  std::string admin_address() const { return opts_.admin_enabled ? address(admin_acceptor_) : "disabled"; }

  void start() {
    asio::co_spawn(io_, accept_loop(acceptor_, false), asio::detached);
    if (index_ != 0) return;
    if (opts_.admin_enabled) asio::co_spawn(io_, accept_loop(admin_acceptor_, true), asio::detached);
    if (shared_.telemetry->exports_metrics()) asio::co_spawn(io_, export_metrics_loop(), asio::detached);
    if (scraper_) scraper_->start(io_);
  }

  // "ledger L" or "ledger L, engine snapshots S": what the startup line names.
  std::string outputs() const {
    std::string out = scraper_ ? fmt::format("ledger {}, engine snapshots {}", opts_.ledger_path, scraper_->output())
                               : fmt::format("ledger {}", opts_.ledger_path);
    if (const auto otlp = shared_.telemetry->describe(); !otlp.empty()) out += ", " + otlp;
    return out;
  }

  // On its own loop: no new connections, then drain (see drain()).
  void begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    asio::co_spawn(io_, drain(), asio::detached);
  }

  void reopen_ledger() {
    shared_.ledger.request_reopen();
    if (scraper_) scraper_->request_reopen();
  }

 private:
  Status listen(tcp::acceptor& a, const HostPort& hp, std::string_view flag, bool reuse_port) {
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
      return make_error("proxy.listen", fmt::format("{}: cannot listen on {}:{}: {} (use port 0 for any free port)",
                                                    flag, hp.host, hp.port, ec.message()));
    }
    return Ok{};
  }

  // Said once at exit, so that lines the ledger could not keep are never lost silently.
  void report_ledger_losses() const {
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

  // Each loop drains its own requests and stops itself: the check and the stop run on the loop's
  // own thread, so no request of it can begin in between. The primary then waits for the others
  // (to the same deadline) before it closes the ledger, so no line comes after it.
  awaitable<void> drain() {
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

  // Every --otlp-metrics-interval, the GenAI metrics' cumulative snapshot to the exporter.
  awaitable<void> export_metrics_loop() {
    asio::steady_timer t(io_);
    while (!stopping_) {
      t.expires_after(seconds(shared_.telemetry->metrics_interval_s()));
      co_await t.async_wait(kNoThrow);
      if (!stopping_) shared_.with_telemetry([](Telemetry& telemetry) { telemetry.export_metrics_now(); });
    }
  }

  awaitable<void> accept_loop(tcp::acceptor& acceptor, bool admin) {
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

  awaitable<void> admin_session(beast::tcp_stream stream) {
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

  // --- the client connection -------------------------------------------------------------

  awaitable<void> session(beast::tcp_stream client) {
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

  Exchange begin(const http::request<http::string_body>& req, const std::optional<RxStamp>& arrival = std::nullopt) {
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

  // A read's stamp joins the exchange: the line's timing basis, its largest lag, the histogram.
  void note(Exchange& x, const RxStamp& s) {
    x.timing.note(s);
    x.last_rx = s;
    if (s.kernel) shared_.with_metrics([&](ProxyMetrics& m) { m.observe_lag(s.lag_us / 1e6); });
  }

  // A read without a kernel timestamp: the loop's clock now stands in, and the line says loop.
  static void note_loop_read(Exchange& x) {
    x.timing.note_loop();
    x.last_rx = loop_stamp(SystemClock::instance().wall_us(), SystemClock::instance().steady_us());
  }

  // Writes the line and hands it on: consumes x.obs (the callers return right after).
  void finish(Exchange& x) {
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

  double since_ms(const Exchange& x) const {
    return static_cast<double>(SystemClock::instance().steady_us() - x.t0_us) / 1000.0;
  }

  // Answers the client ourselves (limits, unreachable backend, timeouts) and records the line.
  awaitable<bool> answer_error(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
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

  // The backend failed before a response head: 504 upstream_timeout on a timeout, else 502 with
  // `otherwise_type`. Arguments are built before co_await (see refuse()).
  awaitable<bool> answer_upstream_failure(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
                                          boost::system::error_code ec, std::string_view otherwise_type,
                                          std::string_view timed_out_what, std::string_view otherwise_what) {
    const bool timed_out = ec == beast::error::timeout;
    const auto status = timed_out ? http::status::gateway_timeout : http::status::bad_gateway;
    const std::string_view type = timed_out ? std::string_view("upstream_timeout") : otherwise_type;
    std::string message = fmt::format("modelperfobs proxy: backend {} {}: {}", backend_.origin,
                                      timed_out ? timed_out_what : otherwise_what, ec.message());
    co_return co_await answer_error(client, x, version, keep_alive, status, type, std::move(message));
  }

  awaitable<void> refuse(beast::tcp_stream& client, const http::request<http::string_body>& partial,
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

  awaitable<void> refuse_connection(beast::tcp_stream client) {
    beast::flat_buffer buffer;
    http::request_parser<http::string_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(opts_.max_body);
    client.expires_after(std::chrono::seconds(5));
    auto [ec, n] = co_await http::async_read(client, buffer, parser, kNoThrow);
    if (ec) co_return;
    co_await refuse(client, parser.get(), http::status::service_unavailable);
  }

  // --- one exchange ------------------------------------------------------------------------

  http::request<http::string_body> upstream_request(const http::request<http::string_body>& req, const Exchange& x,
                                                    std::string body) const {
    http::request<http::string_body> up(req.method(), backend_.target_for(req.target()), 11);
    const std::string tokens = connection_tokens(req);
    bool client_request_id = false;
    for (const auto& f : req) {
      const auto name = f.name_string();
      if (is_hop_by_hop(name, tokens) || f.name() == http::field::host || f.name() == http::field::content_length ||
          f.name() == http::field::accept_encoding || beast::iequals(name, opts_.id_header) ||
          beast::iequals(name, "traceparent") || beast::iequals(name, "tracestate")) {
        continue;  // Accept-Encoding dropped: bodies must stay readable for the tap; trace context below
      }
      if (beast::iequals(name, "X-Request-Id")) client_request_id = true;
      up.insert(name, f.value());
    }
    up.set(http::field::host, backend_.host_header);
    up.set(opts_.id_header, x.obs.observation_id);
    if (!client_request_id) up.set("X-Request-Id", x.obs.observation_id);
    // The engine's spans become children of the proxy's span.
    up.set("traceparent", x.trace.traceparent());
    if (!x.trace_state.empty()) up.set("tracestate", x.trace_state);
    up.keep_alive(true);
    up.body() = std::move(body);
    up.prepare_payload();
    return up;
  }

  awaitable<bool> handle(beast::tcp_stream& client, http::request<http::string_body> req,
                         std::optional<RxStamp> arrival) {
    Exchange x = begin(req, arrival);
    auto& o = x.obs;
    const bool client_keep = req.keep_alive();

    std::string body = req.body();
    bool strip_usage = false;
    if (opts_.usage == UsageMode::kInject && o.stream && !o.usage_requested &&
        (o.operation == "chat" || o.operation == "text_completion")) {
      if (auto rewritten = inject_include_usage(body)) {
        body = std::move(*rewritten);
        o.usage_injected = true;
        strip_usage = true;
      }
    }
    auto up_req = upstream_request(req, x, std::move(body));

    // The client may leave while we wait: watch its socket, and close the upstream if it does.
    auto watch = std::make_shared<ClientWatch>();
    arm_client_watch(client, watch);

    http::response_parser<http::buffer_body> parser;
    parser.header_limit(64 * 1024);
    parser.body_limit(boost::none);
    parser.skip(req.method() == http::verb::head);  // a HEAD response has no body, whatever its length says

    // Send the request and read the response head. A pooled connection that the backend closed
    // while the request was on its way (EOF or reset before any response byte) is replaced by a
    // fresh one, once (upstream_policy.hpp: should_retry).
    std::shared_ptr<Upstream> up = pool_->take();
    bool pooled = up != nullptr;
    boost::system::error_code ec;
    for (;;) {
      if (!up) {
        pooled = false;
        auto [fresh, cec] = co_await pool_->connect();
        if (cec) {
          shared_.with_metrics([](ProxyMetrics& m) { m.count_connect_error(); });
          disarm_client_watch(client, watch);
          co_return co_await answer_upstream_failure(client, x, req.version(), client_keep, cec, "upstream_unreachable",
                                                     "did not accept the connection in time", "is unreachable");
        }
        up = fresh;
      }
      watch->upstream = up;
      up->tcp().expires_after(seconds(opts_.response_timeout_s));
      auto [wec, written] = co_await up->conn->write(up_req);
      ec = wec;
      std::optional<RxStamp> head_rx;
      if (!ec && up->wait) {
        // The head's first bytes with their kernel receive time; the parser takes them below.
        auto first =
            co_await receive_some(up->tcp().socket(), up->buffer(), *up->wait, seconds(opts_.response_timeout_s));
        ec = first.ec == asio::error::eof ? boost::system::error_code(http::error::end_of_stream) : first.ec;
        if (!ec) head_rx = first.stamp;
      }
      if (!ec) {
        up->tcp().expires_after(seconds(opts_.response_timeout_s));
        auto [hec, hn] = co_await up->conn->read_header(parser);
        ec = hec;
      }
      if (!ec) {
        if (head_rx) {
          note(x, *head_rx);
        } else {
          note_loop_read(x);
        }
      }
      if (!ec) {
        if (pooled) pool_->learner().reused(up->after_stream);
        break;
      }
      RetryContext retry;
      retry.retry_stale = opts_.retry_stale;
      retry.pooled_connection = pooled;
      retry.retries_so_far = o.upstream_retries.value_or(0);
      retry.failure = failure_of(ec);
      retry.response_bytes_seen = parser.got_some() || up->buffer().size() > 0;
      retry.client_gone = watch->client_gone;
      if (pooled && closed_by_server(retry.failure) && !retry.response_bytes_seen) {
        pool_->learner().closed_before_reuse(up->after_stream);
      }
      if (!should_retry(retry)) break;
      shared_.with_metrics([&](ProxyMetrics& m) { m.count_retry(to_string(retry.failure)); });
      o.upstream_retries = retry.retries_so_far + 1;
      watch->upstream = nullptr;
      up.reset();
    }
    if (ec) {
      disarm_client_watch(client, watch);
      if (watch->client_gone) {
        o.outcome = "client_disconnected";
        finish(x);
        co_return false;
      }
      co_return co_await answer_upstream_failure(client, x, req.version(), false, ec, "upstream_reset",
                                                 "sent no response in time", "closed the connection before responding");
    }
    o.ttfb_ms = static_cast<double>(x.last_rx.steady_us - x.t0_us) / 1000.0;
    co_return co_await relay(client, req, x, up, parser, watch, strip_usage);
  }

  struct ClientWatch {
    bool client_gone = false;
    bool done = false;
    std::shared_ptr<Upstream> upstream;
  };

  static void arm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch) {
    client.socket().async_wait(tcp::socket::wait_read, [&client, watch](boost::system::error_code ec) {
      if (ec || watch->done) return;
      boost::system::error_code aec;
      if (client.socket().available(aec) == 0 || aec) {  // readable with nothing to read: EOF
        watch->client_gone = true;
        if (watch->upstream) {
          boost::system::error_code cec;
          watch->upstream->tcp().socket().close(cec);  // the engine sees the disconnect at once
        }
      }
    });
  }

  static void disarm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch) {
    watch->done = true;
    boost::system::error_code ec;
    client.socket().cancel(ec);
  }

  awaitable<bool> relay(beast::tcp_stream& client, const http::request<http::string_body>& req, Exchange& x,
                        std::shared_ptr<Upstream> up, http::response_parser<http::buffer_body>& parser,
                        std::shared_ptr<ClientWatch> watch, bool strip_usage) {
    auto& o = x.obs;
    auto& head = parser.get();
    o.http_status = static_cast<int>(head.result_int());
    if (auto it = head.find("X-Request-Id"); it != head.end()) o.upstream_request_id = std::string(it->value());
    const auto ctype = head.find(http::field::content_type);
    const bool sse = ctype != head.end() && ctype->value().find("text/event-stream") != std::string_view::npos;
    const bool encoded = head.find(http::field::content_encoding) != head.end();
    const auto keep_alive_field = head.find(http::field::keep_alive);
    const KeepAliveHint keep_alive_hint =
        keep_alive_field == head.end() ? KeepAliveHint{} : parse_keep_alive(keep_alive_field->value());
    openai::StreamTap tap(sse);
    UsageStripper stripper;
    strip_usage = strip_usage && sse;

    http::response<http::buffer_body> res;
    res.result(head.result_int());
    res.version(req.version());
    const std::string tokens = connection_tokens(head);
    for (const auto& f : head) {
      if (is_hop_by_hop(f.name_string(), tokens) || f.name() == http::field::content_length) continue;
      res.insert(f.name_string(), f.value());
    }
    res.set(opts_.id_header, o.observation_id);
    if (sse) res.set("X-Accel-Buffering", "no");
    if (head.has_content_length() && !strip_usage) {
      res.content_length(parser.content_length());
    } else if (!(head.result() == http::status::no_content || head.result() == http::status::not_modified ||
                 req.method() == http::verb::head)) {
      res.chunked(true);
    }
    res.keep_alive(req.keep_alive());
    res.body().data = nullptr;
    res.body().more = true;
    http::response_serializer<http::buffer_body> sr(res);
    client.expires_after(std::chrono::seconds(60));
    // The head goes out at once when no body byte came with it (the client learns the status
    // while the engine works); when body bytes came in the same read, head and body leave in one
    // write. Likewise the last body bytes carry the final chunk when they came together.
    bool head_written = false, final_written = false, client_failed = false;
    // The stream's terminal event ([DONE], response.completed, message_stop) reached the client.
    bool terminal_forwarded = false;
    if (up->buffer().size() == 0 && !parser.is_done()) {
      auto [hec, hn] = co_await http::async_write_header(client, sr, kNoThrow);
      client_failed = static_cast<bool>(hec);
      head_written = true;
    }

    // Not zeroed: every byte used is first written by the parser (16 KiB of memset per request
    // showed in profiles).
    constexpr std::size_t kBufSize = 16 * 1024;
    const auto buf = std::make_unique_for_overwrite<char[]>(kBufSize);
    // Parses what the upstream buffer holds, never waiting on the socket, so that one read leaves
    // in one write (and the final chunk rides with the last data); waiting here would coalesce
    // events. Stops when more bytes are needed, the body buffer is full or the message is done.
    bool consumed = false;
    auto parse_buffered = [&]() -> boost::system::error_code {
      consumed = false;
      while (!parser.is_done() && up->buffer().size() > 0 && parser.get().body().size > 0) {
        boost::system::error_code pec;
        const std::size_t used = parser.put(up->buffer().data(), pec);
        up->buffer().consume(used);
        consumed = consumed || used > 0;
        if (pec == http::error::need_more || pec == http::error::need_buffer) break;
        if (pec) return pec;
        if (used == 0) break;
      }
      return {};
    };
    boost::system::error_code upstream_ec;
    while (!client_failed && !parser.is_done()) {
      parser.get().body().data = buf.get();
      parser.get().body().size = kBufSize;
      boost::system::error_code rec = parse_buffered();
      if (!rec && !parser.is_done() && !consumed) {
        // Nothing buffered to parse: one read, with its kernel receive time on plain connections.
        if (up->wait) {
          auto r =
              co_await receive_some(up->tcp().socket(), up->buffer(), *up->wait, seconds(opts_.stream_idle_timeout_s));
          if (r.ec == asio::error::eof) {
            parser.put_eof(rec);  // ends a body read to the close; else partial_message
          } else if (r.ec) {
            rec = r.ec;
          } else {
            note(x, r.stamp);
            rec = parse_buffered();
          }
        } else {
          up->tcp().expires_after(seconds(opts_.stream_idle_timeout_s));
          auto [tec, tn] = co_await up->conn->read_some(parser);
          rec = tec == http::error::need_buffer ? boost::system::error_code() : tec;
          note_loop_read(x);
          if (!rec) rec = parse_buffered();
        }
      }
      const std::size_t got = kBufSize - parser.get().body().size;
      const std::int64_t now = x.last_rx.steady_us;  // when these bytes reached the socket
      const bool last = parser.is_done() && !rec;
      const std::string_view piece(buf.get(), got);
      std::string_view out = piece;
      std::string filtered;
      if (got > 0 && strip_usage) {
        filtered = stripper.filter(piece, parser.is_done());
        out = filtered;
      }
      if (!out.empty()) {
        res.body().data = const_cast<char*>(out.data());
        res.body().size = out.size();
        res.body().more = !last;
        client.expires_after(std::chrono::seconds(60));
        auto [wec, wn] = co_await http::async_write(client, sr, kNoThrow);
        if (wec && wec != http::error::need_buffer) client_failed = true;
        head_written = true;
        final_written = last;
      } else if (!head_written && !last && !rec) {
        // Only framing came (a chunk size line): the client still gets the head now.
        auto [hec, hn] = co_await http::async_write_header(client, sr, kNoThrow);
        client_failed = static_cast<bool>(hec);
        head_written = true;
      }
      if (got > 0) {
        o.response_bytes += got;
        if (!encoded) tap.feed(piece, now);  // after forwarding: parsing never delays the client
        if (!client_failed && tap.saw_terminal()) terminal_forwarded = true;
      }
      if (rec) {
        upstream_ec = rec;
        break;
      }
    }
    disarm_client_watch(client, watch);
    bool complete = parser.is_done() && !client_failed;
    if ((complete && !final_written) || (!complete && !head_written && !client_failed)) {
      // The end of the body (or a body-less response) when no data carried it; or, when the
      // backend failed right after its head, that head, so the client's response ends as the
      // backend's did.
      res.body().data = nullptr;
      res.body().size = 0;
      res.body().more = !complete;
      boost::system::error_code wec;
      if (complete) {  // no co_await inside a conditional expression (GCC 12, see refuse())
        auto [ec, n] = co_await http::async_write(client, sr, kNoThrow);
        wec = ec;
      } else {
        auto [ec, n] = co_await http::async_write_header(client, sr, kNoThrow);
        wec = ec;
      }
      if (wec && wec != http::error::need_buffer) {
        client_failed = true;
        complete = false;
      }
    }
    // To the last response byte received, on the line's own basis.
    o.e2e_ms =
        x.timing.basis() == kKernelRx ? static_cast<double>(x.last_rx.steady_us - x.t0_us) / 1000.0 : since_ms(x);
    tap.finish(parser.is_done());
    ledger::fill_from_tap(o, tap, x.t0_us, opts_.itl_full);

    RelayEnd end;
    end.client_left = client_failed || watch->client_gone;
    end.terminal_forwarded = terminal_forwarded;
    end.upstream = !upstream_ec                                   ? UpstreamEnd::kComplete
                   : upstream_ec == beast::error::timeout         ? UpstreamEnd::kTimeout
                   : upstream_ec == asio::error::connection_reset ? UpstreamEnd::kReset
                                                                  : UpstreamEnd::kTruncated;
    end.http_status = *o.http_status;
    end.sse = sse;
    end.malformed = tap.malformed();
    end.terminal_required = tap.requires_terminal_event();
    end.terminal_seen = tap.saw_terminal();
    end.error_event = tap.error_event();
    o.outcome = std::string(relay_outcome(end));
    if (is_upstream_failure(o.outcome)) {
      o.error_type = o.outcome;
      o.error_message = upstream_ec ? fmt::format("backend ended the response early: {}", upstream_ec.message())
                                    : std::string(openai::kMissingTerminalEvent);
    }
    if (tap.unknown_events() > 0)
      shared_.with_metrics([&](ProxyMetrics& m) { m.count_unknown_events(o.operation, tap.unknown_events()); });
    const bool reusable = complete && parser.keep_alive() && !upstream_ec;
    if (reusable) pool_->give_back(std::move(up), keep_alive_hint, sse);
    finish(x);
    co_return complete&& req.keep_alive();
  }

  asio::io_context& io_;
  ProxyOptions opts_;
  net::BackendUrl backend_;
  tcp::acceptor acceptor_;
  tcp::acceptor admin_acceptor_;
  Shared& shared_;
  int index_ = 0;
  std::unique_ptr<scrape::Recorder> scraper_;  // the primary's
  std::unique_ptr<net::Client> client_;
  std::unique_ptr<UpstreamPool> pool_;
  Uuid7Generator ids_;
  std::int64_t in_flight_here_ = 0;  // this loop's requests (shared_.in_flight counts every loop's)
  bool stopping_ = false;
  bool nodelay_inherited_ = false;
  bool rx_timestamps_ = false;  // the listener's sockets carry kernel receive timestamps
};

}  // namespace

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
