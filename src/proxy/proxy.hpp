// The proxy: one event loop (edge), its listener, its upstream connection pool, its client
// connections and their requests. `run_proxy` (server.cpp) makes one per --threads and shares what
// they share through `Shared` (shared_state.hpp). The loop's life (open, accept, admin, drain) and
// the client connection are in server.cpp; one exchange with the backend, top to bottom (begun, the
// request forwarded, the response relayed read by read, the proxy's own answers, the line), in
// exchange.cpp.
#pragma once

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
#include "proxy/backend_parser.hpp"
#include "proxy/client_kits.hpp"
#include "proxy/client_request.hpp"
#include "proxy/correlation.hpp"
#include "proxy/field_id.hpp"
#include "proxy/first_reads.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/limits.hpp"
#include "proxy/options.hpp"
#include "proxy/outcome.hpp"
#include "proxy/proxy_metrics.hpp"
#include "proxy/request_head.hpp"
#include "proxy/sessions.hpp"
#include "proxy/shared_state.hpp"
#include "proxy/socket_io.hpp"
#include "proxy/telemetry.hpp"
#include "proxy/thread_blocks.hpp"
#include "proxy/timing.hpp"
#include "proxy/upstream_policy.hpp"
#include "proxy/upstream_pool.hpp"
#include "proxy/usage_injection.hpp"
#include "scrape/recorder.hpp"

namespace mpo::proxy {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
// How long one write to the client may wait for the client to take its bytes.
inline constexpr std::chrono::seconds kClientWriteTimeout{60};

inline std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// A request the proxy answers instead of forwarding: the request as far as it was read, and what
// its answer and line say.
struct RequestRefusal {
  ClientRequest partial;
  http::status status;
  std::string outcome, message;
};

// A Beast parse error that means the peer broke HTTP's syntax (not a close, not a limit).
inline bool is_http_syntax_error(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_chunk).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message && ec != http::error::need_more &&
         ec != http::error::need_buffer && ec != http::error::body_limit && ec != http::error::header_limit &&
         ec != http::error::buffer_overflow;
}

// "EMFILE", "ENFILE", "ENOBUFS" or "ENOMEM" when `ec` says the process ran out of descriptors or
// memory (proxy/limits.hpp), else "".
inline std::string_view resource_shortage(const boost::system::error_code& ec) {
  return resource_errno_name(ec.category() == boost::system::system_category() ? ec.value() : 0);
}

// What a finished exchange left behind, for the ledger line.
// Allocated and freed once per request, larger than glibc's per-thread cache: its blocks kept by
// each thread (proxy/thread_blocks.hpp).
struct Exchange : KeptByThread<Exchange> {
  // Taken from the ledger's writer by begin() (a cleared one whose strings keep their buffers) and
  // given back to it by finish(): null after finish(), so a late use fails at once instead of
  // racing with the writer's thread.
  std::unique_ptr<ledger::Observation> obs;
  std::int64_t t0_us = 0;  // the request's arrival on the steady clock
  LineTiming timing;
  RxStamp last_rx;  // the latest read of this exchange (request, response head, body)
  otel::RequestTrace trace;
  std::string trace_state;                    // the client's tracestate, forwarded when its traceparent was valid
  std::int64_t* in_flight_series = nullptr;   // its (model label, operation) series of the in-flight gauge
  std::optional<SessionClaim> session_claim;  // what the request says of its conversation
  SessionPlace session;                       // its session and turn (the root's id at finish)
};

struct Relay;  // one response's relay state (exchange.cpp)

class Proxy {
 private:
  // What the relay and the watch on its client connection share: whether the client left (its
  // socket readable with nothing to read), whether the exchange ended, and the upstream connection
  // to close at once when the client leaves (so the engine aborts the request).
  struct ClientWatch {
    bool client_gone = false;
    bool done = false;
    std::shared_ptr<Upstream> upstream;
  };

 public:
  // `index` 0 is the primary loop: the admin listener, the scraper, signals and the drain.
  Proxy(asio::io_context& io, ProxyOptions opts, net::BackendUrl backend, Shared& shared, int index)
      : io_(io),
        reactor_(asio::use_service<asio::detail::reactor>(io)),
        kits_(asio::use_service<ClientKits>(io)),
        opts_(std::move(opts)),
        backend_(std::move(backend)),
        acceptor_(io),
        admin_acceptor_(io),
        shared_(shared),
        index_(index),
        id_header_field_(field_id(opts_.id_header)),
        begin_fields_{ClientRequest::wanted(opts_.id_header), ClientRequest::wanted("traceparent"),
                      ClientRequest::wanted(opts_.session_header)} {
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

  // Not copied or moved: begin_fields_ views opts_'s strings.
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  // The primary opens what is shared (ledger, exporter, scraper) and the admin listener; every
  // loop its own connection pool and listener (on the primary's port when there are several).
  Status open(std::uint16_t port);

  std::uint16_t listen_port() const { return acceptor_.local_endpoint().port(); }

  std::string address(const tcp::acceptor& a) const;
  std::string listen_address() const { return address(acceptor_); }
  std::string admin_address() const { return opts_.admin_enabled ? address(admin_acceptor_) : "disabled"; }

  void start();

  // "ledger L" or "ledger L, engine snapshots S": what the startup line names.
  std::string outputs() const;

  // On its own loop: no new connections, then drain (see drain()).
  void begin_shutdown();

  void reopen_ledger();

 private:
  Status listen(tcp::acceptor& a, const HostPort& hp, std::string_view flag, bool reuse_port);

  // Said once at exit, so that lines the ledger could not keep are never lost silently.
  void report_ledger_losses() const;

  // Each loop drains its own requests and stops itself: the check and the stop run on the loop's
  // own thread, so no request of it can begin in between. The primary then waits for the others
  // (to the same deadline) before it closes the ledger, so no line comes after it.
  awaitable<void> drain();

  // Every --otlp-metrics-interval, the GenAI metrics' cumulative snapshot to the exporter.
  awaitable<void> export_metrics_loop();

  awaitable<void> accept_loop(tcp::acceptor& acceptor, bool admin);

  // The accepted socket is handed over and the Beast stream built in the coroutine's frame: moving a
  // beast::tcp_stream allocates its state again, three timers included (issue 43: ~1k instructions
  // a connection).
  awaitable<void> admin_session(tcp::socket socket);

  // A client connection: accepted into the kit's stream, which goes back to the loop's kits with
  // the last request (proxy/client_kits.hpp).
  awaitable<void> session(ClientKits::Lease kit);

  // session()'s steps (server.cpp): the next request read whole from the client into `in` (false:
  // the connection ends, its refusal already answered and recorded, or the client left or idled);
  // its head, found and judged whole before Beast sees it; its body under --client-body-timeout.
  // `in` is session()'s, filled in place: a request returned by value was moved four times on its
  // way to handle() (issue 43).
  struct IncomingRequest {
    ClientRequest req;
    std::optional<RxStamp> arrival;
  };
  awaitable<bool> read_request(beast::tcp_stream& client, net::ReadBuffer& buffer, ReadableWait& wait,
                               IncomingRequest& in);
  // What read_request's synchronous step makes of a head, beside the request it fills: how to read
  // its body (with a chunked body, Beast's parser for it), or a refusal to answer.
  struct HeadStep {
    std::unique_ptr<http::request_parser<http::string_body>> chunked;
    std::unique_ptr<RequestRefusal> refusal;
    std::string origin_rewrite;  // RequestHead's
    std::uint64_t content_length = 0;
    boost::system::error_code ec;
    unsigned version = 11;
    bool expects_continue = false;
  };
  struct HeadRead {
    HeadScanner::State state = HeadScanner::State::kNeedMore;
    std::size_t leading = 0, head_size = 0;
    std::optional<RxStamp> arrival;
  };
  awaitable<std::optional<HeadRead>> read_head(beast::tcp_stream& client, net::ReadBuffer& buffer, ReadableWait& wait,
                                               const HeadLimits& limits);
  // A new connection's first read came (its bytes received at `arrival`): what it tells first_reads_.
  void learn_from_first_read(ReadableWait& wait, const RxStamp& arrival);
  HeadStep request_from_head(const HeadRead& found, net::ReadBuffer& buffer, const HeadLimits& limits,
                             ClientRequest& req);
  // The interim 100 Continue to a client that asked for it.
  awaitable<boost::system::error_code> write_continue(beast::tcp_stream& client, unsigned version);
  awaitable<boost::system::error_code> read_body(beast::tcp_stream& client, net::ReadBuffer& buffer, ReadableWait& wait,
                                                 http::request_parser<http::string_body>& parser);
  static bool take_buffered_body(net::ReadBuffer& buffer, std::string& body, std::uint64_t length);
  awaitable<boost::system::error_code> read_length_body(beast::tcp_stream& client, net::ReadBuffer& buffer,
                                                        ReadableWait& wait, std::string& body, std::uint64_t length);

  // Fills a new exchange in place (issue 43: returned by value, its observation was moved once more
  // per request).
  void begin(Exchange& x, const ClientRequest& req, const std::optional<RxStamp>& arrival = std::nullopt);

  // A read's stamp joins the exchange: the line's timing basis, its largest lag, the histogram.
  void note(Exchange& x, const RxStamp& s);

  // A read without a kernel timestamp: the loop's clock now stands in, and the line says loop.
  static void note_loop_read(Exchange& x);

  // Writes the line and hands it on: consumes x.obs (the callers return right after).
  void finish(Exchange& x);

  double since_ms(const Exchange& x) const;

  // Answers the client ourselves (limits, unreachable backend, timeouts) and records the line.
  awaitable<bool> answer_error(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
                               http::status status, std::string_view type, std::string message);

  // The backend failed before a response head: 504 upstream_timeout on a timeout, else 502 with
  // `otherwise_type`. Arguments are built before co_await (see refuse()).
  awaitable<bool> answer_upstream_failure(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
                                          boost::system::error_code ec, std::string_view otherwise_type,
                                          std::string_view timed_out_what, std::string_view otherwise_what);

  // Answers a request the proxy will not forward (status, outcome and message for the line) and
  // records it; the connection closes after it.
  awaitable<void> refuse(beast::tcp_stream& client, const ClientRequest& partial, http::status status,
                         std::string outcome, std::string message);

  // The same for a request refused while it was read (read_request), its refusal on the heap.
  awaitable<void> refuse_request(beast::tcp_stream& client, std::unique_ptr<RequestRefusal> refusal);
  awaitable<void> refuse_connection(tcp::socket socket);

  // The request's head as the backend gets it, written into `out` (emptied first) as text (a Beast
  // message and its serializer took ~25,000 instructions a request to write the same bytes); its
  // Content-Length is `body_size` (the body is sent after it, from where it lies).
  void upstream_head(std::string& out, const ClientRequest& req, const Exchange& x, std::size_t body_size) const;

  // One request (exchange.cpp): checked, sent upstream on a pooled connection (retried once on a fresh
  // one when the pooled one was stale), the response head awaited; false: close the client.
  // `client_drained`: the request's last read left the client's socket empty, in this turn of the loop.
  // `req` is the caller's (session()'s, which awaits this), its body rewritten here when usage is
  // injected: not moved into this frame (issue 43).
  awaitable<bool> handle(beast::tcp_stream& client, ClientRequest& req, std::optional<RxStamp> arrival,
                         bool client_drained = false);

  // handle()'s steps (exchange.cpp): the request sent on a pooled connection (retried once on a
  // fresh one when the pooled one was stale) and the response head read; what the client gets when
  // that failed (a 502, 503 or 504 of the proxy's, or nothing when the client left).
  struct Sent {
    std::shared_ptr<Upstream> up;
    boost::system::error_code ec;
    bool connect_failed = false;  // no connection could be made (ec says why)
  };
  awaitable<Sent> send_upstream(Exchange& x, std::string_view head, std::string_view body, BackendParser& parser,
                                ClientWatch& watch);
  awaitable<bool> answer_send_failure(beast::tcp_stream& client, Exchange& x, unsigned version, bool client_keep,
                                      const ClientWatch& watch, const Sent& sent);

  void arm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch, bool client_drained);

  static void disarm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch);

  // The response relayed read by read while the stream tap times it; the outcome and the line.
  awaitable<bool> relay(beast::tcp_stream& client, const ClientRequest& req, Exchange& x, std::shared_ptr<Upstream> up,
                        BackendParser& parser, std::shared_ptr<ClientWatch> watch, bool strip_usage);

  // The head alone, before any body byte came (the client learns the status while the engine
  // works), and the end of the client's response: relay()'s writes once per response (exchange.cpp).
  static awaitable<void> end_client_response(beast::tcp_stream& client, Relay& r, bool& complete);

  asio::io_context& io_;
  asio::detail::reactor& reactor_;  // the loop's, for the client watch's peek (found once)
  ClientKits& kits_;                // the loop's client connections' streams and waits, kept
  ProxyOptions opts_;
  net::BackendUrl backend_;
  tcp::acceptor acceptor_;
  tcp::acceptor admin_acceptor_;
  Shared& shared_;
  int index_ = 0;
  // The correlation header's name as Beast knows it (unknown for X-Fak-Observation-ID): a field
  // Beast knows is that header only by this id, without comparing names (issue 43).
  http::field id_header_field_ = http::field::unknown;
  // The fields begin() reads, in one pass: the client's id, its trace context, its session key
  // (views into opts_, which the proxy keeps).
  std::array<ClientRequest::Wanted, 3> begin_fields_;
  std::unique_ptr<scrape::Recorder> scraper_;  // the primary's
  std::unique_ptr<net::Client> client_;
  // The loop's latest request head as parse_request_head read it: kept so that the next one is read
  // into its field list's buffer (issue 43). Its views point into bytes already consumed: read only
  // inside request_from_head.
  RequestHead head_read_;
  std::unique_ptr<UpstreamPool> pool_;
  Uuid7Generator ids_;
  std::int64_t in_flight_here_ = 0;  // this loop's requests (shared_.in_flight counts every loop's)
  bool stopping_ = false;
  bool nodelay_inherited_ = false;
  bool rx_timestamps_ = false;  // the listener's sockets carry kernel receive timestamps
  // Whether a new connection's first read asks at once or waits for its first edge (not with
  // --defer-accept, whose connections come with their request).
  FirstReads first_reads_;
};

}  // namespace mpo::proxy
