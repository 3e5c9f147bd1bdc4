// `modelperfobs proxy`: the loops' life (open, listen, accept, the admin listener, drain on
// SIGTERM) and each client connection (proxy/proxy.hpp), which hands each request to its exchange
// (exchange.cpp); `run_proxy` starts one loop per thread.
#include "proxy/server.hpp"

#include <fmt/format.h>
#include <sys/resource.h>
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
#include "proxy/limits.hpp"
#include "proxy/outcome.hpp"
#include "proxy/proxy.hpp"
#include "proxy/proxy_metrics.hpp"
#include "proxy/request_head.hpp"
#include "proxy/shared_state.hpp"
#include "proxy/socket_io.hpp"
#include "proxy/telemetry.hpp"
#include "proxy/timing.hpp"
#include "proxy/upstream_policy.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/usage_injection.hpp"
#include "scrape/recorder.hpp"

namespace mpo::proxy {

Status Proxy::open(std::uint16_t port) {
  auto client = net::Client::make(io_.get_executor(), backend_, opts_.backend_ca, "--backend-ca");
  if (!client) return make_error(errc::kProxyTls, client.error().message);
  client_ = std::move(*client);
  pool_ = std::make_unique<UpstreamPool>(*client_, io_.get_executor(), opts_.connect_timeout_s, opts_.pool_idle_s,
                                         opts_.kernel_timestamps);
  if (index_ == 0) {
    if (auto st = shared_.ledger.open(); !st) return st;
    // Filled field by field: GCC 12 takes the nested braced form for a read of uninitialised strings.
    TelemetryOptions telemetry_opts;
    telemetry_opts.otlp = opts_.otlp;
    telemetry_opts.genai.provider = opts_.genai_provider;
    telemetry_opts.genai.server_address = backend_.host;
    telemetry_opts.genai.server_port = backend_.port;
    telemetry_opts.genai.max_models = opts_.max_model_labels;
    telemetry_opts.genai.max_model_bytes = opts_.max_label_bytes;
    telemetry_opts.instance = opts_.instance;
    auto telemetry =
        Telemetry::make(std::move(telemetry_opts), [](std::string_view name) -> std::optional<std::string> {
          const char* v = std::getenv(std::string(name).c_str());
          return v ? std::optional<std::string>(v) : std::nullopt;
        });
    if (!telemetry) return make_error(errc::kProxyOtlp, telemetry.error().message);
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
  // And each read says whether more is queued behind it (a drained socket waits without a read).
  enable_queue_hints(acceptor_.native_handle());
  // With --defer-accept, handed over once its request began to come (a client connects, then writes).
  if (opts_.defer_accept_s > 0) defer_accept(acceptor_.native_handle(), opts_.defer_accept_s);
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
  if (ec) return make_error(errc::kProxyListen, fmt::format("{}: invalid address '{}'", flag, hp.host));
  const tcp::endpoint ep(addr, hp.port);
  auto fail = [&](std::string_view why) {
    return make_error(errc::kProxyListen, fmt::format("{}: cannot listen on {}:{}: {}", flag, hp.host, hp.port, why));
  };
  // The loops of one proxy share their port through SO_REUSEPORT, which any other process of the
  // same user could join unnoticed, taking a share of the traffic into its own ledger. Unless
  // --reuse-port asks for that, the first loop first binds the address without it: a port some
  // other socket listens on (with or without SO_REUSEPORT) refuses that bind, as nginx's would.
  if (reuse_port && !opts_.reuse_port && hp.port != 0 && index_ == 0) {
    tcp::acceptor probe(io_);
    probe.open(ep.protocol(), ec);
    if (!ec) probe.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) probe.bind(ep, ec);
    if (ec == asio::error::address_in_use) {
      return fail(
          "address already in use (another process listens there; --reuse-port shares the port with "
          "it on purpose)");
    }
    if (ec) return fail(ec.message());
  }
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec && (reuse_port || opts_.reuse_port)) {
    // Several loops listen on one port; the kernel spreads new connections between them.
    const int on = 1;
    if (setsockopt(a.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
      ec.assign(errno, boost::system::system_category());
  }
  if (!ec) a.set_option(tcp::no_delay(true), ec);  // inherited by accepted sockets
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec == asio::error::address_in_use) {
    return fail(opts_.reuse_port ? "address already in use by a socket without SO_REUSEPORT"
                                 : "address already in use (another process listens there; use another port, or 0 "
                                   "for any free one)");
  }
  if (ec) return fail(fmt::format("{} (use port 0 for any free port)", ec.message()));
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
  asio::steady_timer pause(io_);
  AcceptBackoff backoff;
  ClientKits::Lease kit;  // the next client connection's, accepted into
  for (;;) {
    if (!admin && !kit) kit = kits_.take(io_);
    std::optional<tcp::socket> admin_socket;
    if (admin) admin_socket.emplace(io_);
    tcp::socket& socket = admin ? *admin_socket : kit->stream.socket();
    boost::system::error_code ec;
    // A connection closed at once (over the limit, too many refusals waiting) is still in the kit:
    // accepting into an open socket fails at once, every time.
    if (socket.is_open()) socket.close(ec);
    std::tie(ec) = co_await acceptor.async_accept(socket, kNoThrow);
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping_) co_return;
      // Out of descriptors or memory: the pending connection stays in the backlog and accept()
      // would fail again at once (a spin at 100% CPU). Pause with a growing backoff, say so once
      // per episode, keep serving the connections held; those in the backlog wait their turn.
      const auto why = resource_shortage(ec);
      if (!why.empty()) {
        const auto delay_ms = backoff.next_ms();
        if (backoff.first_of_episode()) {
          std::cerr << fmt::format(
              "modelperfobs proxy: accept() failed: {} ({}); pausing new connections (backoff from {} ms), "
              "serving the {} held; raise the limit (ulimit -n) or lower --max-connections ({})\n",
              ec.message(), why, delay_ms, shared_.connections.load(), opts_.max_connections);
        }
        shared_.with_metrics([&](ProxyMetrics& m) { m.count_accept_pause(why); });
        pause.expires_after(std::chrono::milliseconds(delay_ms));
        co_await pause.async_wait(kNoThrow);
        if (stopping_) co_return;
      }
      continue;  // ECONNABORTED and the like: the next connection
    }
    backoff.reset();
    own_descriptor(socket);  // its close needs no EPOLL_CTL_DEL
    if (!admin && shared_.connections >= opts_.max_connections) {
      // Over the connection limit: answer 503 (and record it) instead of serving; when too many
      // already wait for theirs, close at once (each holds a descriptor for up to 5 s).
      const bool answer = shared_.refusing < kMaxRefusing;
      shared_.with_metrics([&](ProxyMetrics& m) { m.count_refused_connection(answer); });
      if (answer) asio::co_spawn(io_, refuse_connection(std::move(socket)), asio::detached);
      continue;  // else closed before the next accept
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
    if (!admin && rx_timestamps_ && opts_.defer_accept_s <= 0) {
      // Registered with the reactor by this accept, in this turn of the loop: nothing was missed.
      kit->wait.first_read = true;
      if (first_reads_.wait()) {
        await_first_edge(socket, kit->wait);
        kit->wait.first_edge_since_us = SystemClock::instance().steady_us();
      }
    }
    if (admin) {
      asio::co_spawn(io_, admin_session(std::move(socket)), asio::detached);
    } else {
      asio::co_spawn(io_, session(std::move(kit)), asio::detached);
    }
  }
}

awaitable<void> Proxy::admin_session(tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
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
  } else if (const std::string_view t = req.target(); t == "/lines" || t.starts_with("/lines?")) {
    // The last ledger lines, numbered (docs/FORMATS.md "recent lines"): `top --admin` reads them.
    std::uint64_t after = 0;
    if (const auto at = t.find("after="); at != std::string_view::npos) {
      for (std::size_t i = at + 6; i < t.size() && t[i] >= '0' && t[i] <= '9' && after < (1ull << 60); ++i) {
        after = after * 10 + static_cast<std::uint64_t>(t[i] - '0');
      }
    }
    res.set(http::field::content_type, "application/x-ndjson");
    res.body() = shared_.with_metrics([&](ProxyMetrics&) { return shared_.recent.since(after, 2000); });
  } else {
    res.result(http::status::not_found);
    res.body() = "not found: try /metrics, /lines?after=N or /healthz\n";
  }
  res.keep_alive(false);
  res.prepare_payload();
  co_await http::async_write(stream, res, kNoThrow);
}

namespace {

std::string_view buffered(const net::ReadBuffer& b) { return {static_cast<const char*>(b.data().data()), b.size()}; }

// The request line's method and target as far as they can be read, for the line of a request
// refused before it was parsed (bounded: a refused head can be 64 KiB of garbage).
ClientRequest refused_request(std::string_view head, int version) {
  const auto line = head.substr(0, head.find_first_of("\r\n"));
  const auto sp = line.find(' ');
  const auto method = line.substr(0, std::min<std::size_t>(sp == std::string_view::npos ? 0 : sp, 32));
  std::string_view target;
  if (sp != std::string_view::npos) {
    const auto rest = line.substr(sp + 1);
    target = rest.substr(0, std::min<std::size_t>(rest.find(' '), 2048));
  }
  return ClientRequest::from_line(method, target, static_cast<unsigned>(version));
}

}  // namespace

namespace {

// What the proxy answers a request whose body it could not read; none for a client that left.
std::unique_ptr<RequestRefusal> body_refusal(boost::system::error_code ec, const ProxyOptions& opts,
                                             ClientRequest req) {
  const auto refusal = [&req](http::status status, std::string_view outcome, std::string message) {
    return std::make_unique<RequestRefusal>(
        RequestRefusal{std::move(req), status, std::string(outcome), std::move(message)});
  };
  if (ec == http::error::body_limit) {
    return refusal(http::status::payload_too_large, "proxy_error",
                   fmt::format("request body over --max-body ({} bytes)", opts.max_body));
  }
  if (ec == beast::error::timeout) {
    return refusal(
        http::status::request_timeout, "bad_request",
        fmt::format("the request body paused over --client-body-timeout ({} s)", opts.client_body_timeout_s));
  }
  if (is_http_syntax_error(ec)) {
    return refusal(http::status::bad_request, "bad_request",
                   fmt::format("invalid request body framing: {}", ec.message()));
  }
  return nullptr;
}

std::string head_refusal_message(HeadScanner::State state, const HeadLimits& limits) {
  return state == HeadScanner::State::kTooLarge
             ? fmt::format("request headers over --max-header-bytes ({} bytes)", limits.max_bytes)
             : fmt::format("more than --max-header-count ({}) header fields", limits.max_fields);
}

}  // namespace

awaitable<void> Proxy::session(ClientKits::Lease kit) {
  beast::tcp_stream& client = kit->stream;
  ReadableWait& client_wait = kit->wait;
  ++shared_.connections;
  net::ReadBuffer buffer;
  IncomingRequest in;
  for (;;) {
    if (!co_await read_request(client, buffer, client_wait, in)) break;
    // The request is out of the buffer: its block goes back to the loop while the engine answers,
    // rather than staying with every stream in flight (issue 43: RSS per stream).
    net::release_if_empty(buffer);
    bool keep = false;
    std::string failure;
    try {
      // Nothing suspends between the request's last read and the watch handle() arms on the client.
      keep = co_await handle(client, in.req, in.arrival, client_wait.drained);
    } catch (const std::exception& e) {
      failure = e.what();  // the per-request handler: one of the two places exceptions are caught
    }
    if (!failure.empty()) {
      std::cerr << "modelperfobs proxy: request failed: " << failure << "\n";
      keep = false;
    }
    in.req = ClientRequest();  // its buffers back to the loop while the connection idles
    if (!keep || stopping_) break;
  }
  --shared_.connections;  // the socket closes (FIN) as `kit` goes back to the loop
}

awaitable<void> Proxy::refuse_request(beast::tcp_stream& client, std::unique_ptr<RequestRefusal> r) {
  co_await refuse(client, r->partial, r->status, std::move(r->outcome), std::move(r->message));
}

// The request from its head's bytes, up to its body: no co_await here, so that the head's parse and
// its fields stay out of read_request's coroutine frame (issue 43: a frame over glibc's per-thread
// cache size, 1,032 bytes, was allocated afresh for almost every request; Asio's recycler hands its
// large cached blocks to smaller frames first).
Proxy::HeadStep Proxy::request_from_head(const HeadRead& found, net::ReadBuffer& buffer, const HeadLimits& limits,
                                         ClientRequest& req) {
  HeadStep step;
  if (found.state != HeadScanner::State::kComplete) {
    step.refusal = std::make_unique<RequestRefusal>(RequestRefusal{
        refused_request(buffered(buffer).substr(found.leading), 11), http::status::request_header_fields_too_large,
        "proxy_error", head_refusal_message(found.state, limits)});
    return step;
  }
  buffer.consume(found.leading);
  const auto head_bytes = buffered(buffer).substr(0, found.head_size);
  RequestHead* const head = &head_read_;  // its field list's buffer the loop's next request's
  if (auto st = parse_request_head(head_bytes, limits, *head); !st) {
    const int version = head_bytes.find("HTTP/1.0\r\n") != std::string_view::npos ? 10 : 11;
    step.refusal = std::make_unique<RequestRefusal>(RequestRefusal{refused_request(head_bytes, version),
                                                                   static_cast<http::status>(status_for(st.error())),
                                                                   "bad_request", st.error().message});
    return step;
  }
  step.origin_rewrite = std::move(head->origin_rewrite);
  step.version = head->version == 10 ? 10 : 11;
  step.content_length = head->content_length.value_or(0);
  // Expect: 100-continue (curl sends it for bodies over 1 KiB): say continue, or the client waits a
  // second before sending the body. The first Expect field decides, as Beast's find() gave it; the
  // backend gets the body without it.
  const auto expect = std::find_if(head->field_lines.begin(), head->field_lines.end(),
                                   [](const RequestHead::Field& f) { return beast::iequals(f.name, "Expect"); });
  step.expects_continue = expect != head->field_lines.end() && beast::iequals(expect->value, "100-continue");
  // A chunked body is decoded by Beast's parser, which reads the head again for it; any other request
  // is made from the fields just read (issue 43: Beast's parse and the checks above read the same
  // head twice, a tenth of the proxy's instructions per request) and its Content-Length body read after.
  if (head->chunked) {
    // On the heap: the coroutine's frame stays small.
    step.chunked = std::make_unique<http::request_parser<http::string_body>>();
    auto& parser = *step.chunked;
    parser.header_limit(static_cast<std::uint32_t>(limits.max_bytes + 1));
    parser.body_limit(opts_.max_body);
    boost::system::error_code ec;
    const std::size_t head_used = parser.put(asio::buffer(head_bytes.data(), head_bytes.size()), ec);
    if (!ec && !parser.is_header_done()) ec = http::error::partial_message;
    if (ec) {  // a head the rules above passed and Beast does not read
      step.refusal = std::make_unique<RequestRefusal>(
          RequestRefusal{refused_request(head_bytes, 11), http::status::bad_request, "bad_request", ec.message()});
      return step;
    }
    buffer.consume(head_used);  // head_bytes is not read after this
  } else {
    req = ClientRequest::from_head(head_bytes, *head);
    // A Content-Length over --max-body is known from the head: 413 after.
    if (head->content_length && *head->content_length > opts_.max_body) step.ec = http::error::body_limit;
    buffer.consume(head_bytes.size());  // head_bytes and *head's views are not read after this
  }
  return step;
}

awaitable<bool> Proxy::read_request(beast::tcp_stream& client, net::ReadBuffer& buffer, ReadableWait& wait,
                                    IncomingRequest& in) {
  const HeadLimits limits{opts_.max_header_bytes, opts_.max_header_count};
  const auto found = co_await read_head(client, buffer, wait, limits);
  if (!found) co_return false;  // closed, idle or too slow: nothing to answer (nginx: the same)
  HeadStep step = request_from_head(*found, buffer, limits, in.req);
  // A refusal is answered by refuse_request(), from the heap: its request, status and strings in
  // this frame made it 2,000 bytes (issue 43). Arguments built before co_await (GCC 12: see refuse()).
  if (step.refusal) {
    co_await refuse_request(client, std::move(step.refusal));
    co_return false;
  }
  if (!step.ec && step.expects_continue) {
    if (co_await write_continue(client, step.version)) co_return false;
  }
  if (step.chunked) {
    if (!step.ec) step.ec = co_await read_body(client, buffer, wait, *step.chunked);
    in.req = ClientRequest::from_message(step.chunked->release());
  } else if (!step.ec && !take_buffered_body(buffer, in.req.body(), step.content_length)) {
    step.ec = co_await read_length_body(client, buffer, wait, in.req.body(), step.content_length);
  }
  if (step.expects_continue) in.req.erase(http::field::expect);
  if (step.ec) {
    // Too large, malformed framing (a bad chunk), or not complete in time: answered and
    // recorded; a client that closed gets nothing.
    if (auto refusal = body_refusal(step.ec, opts_, std::move(in.req))) {
      co_await refuse_request(client, std::move(refusal));
    }
    co_return false;
  }
  // absolute-form: the backend's path
  if (!step.origin_rewrite.empty()) in.req.target(std::move(step.origin_rewrite));
  in.arrival = found->arrival;
  co_return true;
}

awaitable<boost::system::error_code> Proxy::write_continue(beast::tcp_stream& client, unsigned version) {
  http::response<http::empty_body> cont(http::status::continue_, version);
  auto [ec, n] = co_await http::async_write(client, cont, kNoThrow);
  co_return ec;
}

void Proxy::learn_from_first_read(ReadableWait& wait, const RxStamp& arrival) {
  if (wait.first_edge_since_us == 0) {
    first_reads_.read_at_once(true);
  } else if (arrival.kernel) {
    first_reads_.waited(arrival.steady_us, wait.first_edge_since_us);
  }
  wait.first_read = false;
  wait.first_edge_since_us = 0;
}

awaitable<std::optional<Proxy::HeadRead>> Proxy::read_head(beast::tcp_stream& client, net::ReadBuffer& buffer,
                                                           ReadableWait& wait, const HeadLimits& limits) {
  constexpr std::size_t kReadSize = 16 * 1024;
  HeadRead found;
  // The request's first bytes, read with their kernel receive time (its arrival); bytes already
  // buffered (a pipelined request) have none. Up to --client-idle-timeout between requests, then
  // --client-header-timeout for the whole head.
  if (buffer.size() == 0 && rx_timestamps_) {
    Received first;
    if (!receive_at_once(client.socket(), buffer, wait, first)) {
      if (wait.first_read && wait.first_edge_since_us == 0) {
        first_reads_.read_at_once(false);  // a new connection's request not there yet
        wait.first_read = false;
      }
      first = co_await receive_on_edge(client.socket(), buffer, wait, seconds(opts_.client_idle_timeout_s));
    }
    if (first.ec) co_return std::nullopt;  // closed by the client or idle: nothing to answer
    if (wait.first_read) learn_from_first_read(wait, first.stamp);
    found.arrival = first.stamp;
  } else if (buffer.size() == 0) {
    client.expires_after(seconds(opts_.client_idle_timeout_s));
    auto [ec, n] = co_await client.async_read_some(buffer.prepare(kReadSize), kNoThrow);
    if (ec) co_return std::nullopt;
    buffer.commit(n);
  }
  // The head is found by one pass over its bytes, however they arrive, and judged whole
  // (proxy/request_head.hpp) before Beast or the backend sees any of it.
  HeadScanner scan(limits);
  client.expires_after(seconds(opts_.client_header_timeout_s));
  found.state = scan.scan(buffered(buffer));
  while (found.state == HeadScanner::State::kNeedMore) {
    auto [ec, n] = co_await client.async_read_some(buffer.prepare(kReadSize), kNoThrow);
    if (ec) co_return std::nullopt;  // closed, or the head too slow
    buffer.commit(n);
    found.state = scan.scan(buffered(buffer));
  }
  found.leading = scan.leading();
  found.head_size = scan.head_size();
  co_return found;
}

// The body: at most --client-body-timeout of silence between reads. Read by receive_some, whose
// wait times out without closing the socket (a stream's own timeout would, and the client is owed
// its 408) and which reads again when a readiness turns out stale.
awaitable<boost::system::error_code> Proxy::read_body(beast::tcp_stream& client, net::ReadBuffer& buffer,
                                                      ReadableWait& wait,
                                                      http::request_parser<http::string_body>& parser) {
  boost::system::error_code ec;
  while (!parser.is_done()) {
    if (buffer.size() > 0) {
      const std::size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      if (ec == http::error::need_more) ec = {};
      if (ec || parser.is_done()) break;
      if (used > 0 && buffer.size() > 0) continue;
    }
    auto r = co_await receive_some(client.socket(), buffer, wait, seconds(opts_.client_body_timeout_s));
    if (r.ec) co_return r.ec == asio::error::eof ? boost::system::error_code(http::error::partial_message) : r.ec;
  }
  co_return ec;
}

// A body of `length` bytes taken whole from what was read with the head, the usual case for a
// request of a few KiB: no coroutine of its own to start (issue 43). False, the buffer untouched,
// when more is to come: read_length_body reads it.
bool Proxy::take_buffered_body(net::ReadBuffer& buffer, std::string& body, std::uint64_t length) {
  if (buffer.size() < length) return false;
  const auto total = static_cast<std::size_t>(length);
  body.reserve(total + openai::kRequestBodyPadding);  // read in place (openai/chunk.hpp)
  body.assign(static_cast<const char*>(buffer.data().data()), total);
  buffer.consume(total);
  return true;
}

// A body of `length` bytes (its Content-Length, at most --max-body), with the same timeout as
// read_body's. Bytes move to the body as they come, so the buffer stays one read's size; the body
// is reserved whole at once, as Beast's string body does for a known length, with the room past its
// end that lets the tap read it where it lies.
awaitable<boost::system::error_code> Proxy::read_length_body(beast::tcp_stream& client, net::ReadBuffer& buffer,
                                                             ReadableWait& wait, std::string& body,
                                                             std::uint64_t length) {
  const auto total = static_cast<std::size_t>(length);
  body.reserve(total + openai::kRequestBodyPadding);
  for (;;) {
    const std::size_t take = std::min(buffer.size(), total - body.size());
    body.append(static_cast<const char*>(buffer.data().data()), take);
    buffer.consume(take);
    if (body.size() == total) co_return boost::system::error_code();
    auto r = co_await receive_some(client.socket(), buffer, wait, seconds(opts_.client_body_timeout_s));
    if (r.ec) co_return r.ec == asio::error::eof ? boost::system::error_code(http::error::partial_message) : r.ec;
  }
}

awaitable<void> Proxy::refuse_connection(tcp::socket socket) {
  beast::tcp_stream client(std::move(socket));
  ++shared_.refusing;
  beast::flat_buffer buffer;
  http::request_parser<http::string_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(opts_.max_header_bytes));
  parser.body_limit(opts_.max_body);
  client.expires_after(std::chrono::seconds(5));
  auto [ec, n] = co_await http::async_read(client, buffer, parser, kNoThrow);
  if (!ec) {
    std::string message = fmt::format("over --max-connections ({}); try again later", opts_.max_connections);
    std::string outcome = "proxy_error";
    const auto partial = ClientRequest::from_message(parser.release());  // before co_await (GCC 12: see refuse())
    co_await refuse(client, partial, http::status::service_unavailable, std::move(outcome), std::move(message));
  }
  --shared_.refusing;
}

int default_proxy_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(n == 0 ? 1u : n, 1u, 8u));
}

namespace {

// The connection limit from the descriptors this process may open: the soft RLIMIT_NOFILE raised
// to the hard one first (as Go's runtime and systemd services do), then proxy/limits.hpp's budget.
// An explicit --max-connections above the budget is kept, with a warning: accept() will pause
// when descriptors run out (the loops never spin on it).
void derive_max_connections(ProxyOptions& o) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    if (o.max_connections <= 0) o.max_connections = 10000;
    return;
  }
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  const int budget = connections_for_fd_limit(rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : rl.rlim_cur);
  if (o.max_connections <= 0) {
    o.max_connections = budget;
  } else if (o.max_connections > budget) {
    std::cerr << fmt::format(
        "modelperfobs proxy: warning: --max-connections {} is more than {} file descriptors allow ({} "
        "connections, each with one to the backend); past them new connections wait (accept pauses)\n",
        o.max_connections, rl.rlim_cur, budget);
  }
}

}  // namespace

int run_proxy(const ProxyOptions& given) {
  ProxyOptions options = given;
  auto backend = net::parse_backend_url(options.backend);
  if (!backend) {
    std::cerr << "modelperfobs proxy: " << backend.error().message << "\n";
    return 2;
  }
  derive_max_connections(options);
  const int n = std::max(1, options.threads);
  Shared shared(options);
  std::vector<std::unique_ptr<asio::io_context>> loops;
  std::vector<std::unique_ptr<Proxy>> proxies;
  for (int i = 0; i < n; ++i) {
    // Each loop runs on one thread and only that thread touches its sockets and timers (other
    // threads only post to it): Asio need not lock a descriptor per operation (issue 43).
    loops.push_back(std::make_unique<asio::io_context>(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO));
    shared.loops.push_back(loops.back().get());
    shared.accepted_by_loop.emplace_back(0);
    shared.lag_by_loop.emplace_back(kLagBuckets);
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
