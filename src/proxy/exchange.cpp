// One exchange of a proxy loop (proxy/proxy.hpp), top to bottom as a request lives: begun (its
// line's identity, trace context, in-flight counts), checked and forwarded upstream (with the
// stale-connection retry), the response relayed to the client read by read while the stream tap
// times it, the client watched for leaving, the outcome decided; the answers the proxy gives
// itself (limits, an unreachable backend, a refusal); and finish(), which writes the line.
#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
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
#include "core/text.hpp"
#include "core/uuid.hpp"
#include "ledger/from_tap.hpp"
#include "ledger/observation.hpp"
#include "net/backend_url.hpp"
#include "net/client.hpp"
#include "openai/chunk.hpp"
#include "openai/stream_tap.hpp"
#include "promtext/text_writer.hpp"
#include "proxy/backend_notes.hpp"
#include "proxy/client_head.hpp"
#include "proxy/correlation.hpp"
#include "proxy/hop_by_hop.hpp"
#include "proxy/outcome.hpp"
#include "proxy/proxy.hpp"
#include "proxy/proxy_metrics.hpp"
#include "proxy/request_head.hpp"
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

void Proxy::begin(Exchange& x, const ClientRequest& req, const std::optional<RxStamp>& arrival) {
  x.obs = shared_.ledger.take_observation();
  auto& o = *x.obs;
  if (arrival) {
    x.t0_us = arrival->steady_us;
    o.started_at_us = arrival->wall_us;
    note(x, *arrival);
  } else {
    const ClockReading now = read_clocks_together();
    x.t0_us = now.steady_us();
    o.started_at_us = now.wall_us();
    x.timing.note_loop();
  }
  o.proxy_instance = opts_.instance;
  o.backend = backend_.origin;
  // Written into the strings' kept buffers (assigned, not replaced by new strings).
  o.method.assign(req.method_string());
  o.path.assign(req.target());
  // The client's id, its trace context and its session key, read in one pass over the fields.
  std::array<ClientRequest::Match, 3> found;
  req.find_each(begin_fields_, found);
  adopt_or_new_id(o.observation_id, found[0].first.value_or(std::string_view()), ids_, o.started_at_us / 1000);
  // W3C trace context: one traceparent continues the client's trace (two make it invalid).
  std::optional<std::string_view> traceparent;
  if (found[1].count == 1) traceparent = found[1].first;
  x.trace = shared_.with_telemetry([&](Telemetry& t) { return t.begin(traceparent); });
  if (x.trace.continued) {
    for (const auto& f : req.fields()) {
      if (!beast::iequals(f.name, "tracestate")) continue;
      if (!x.trace_state.empty()) x.trace_state += ',';
      x.trace_state += f.value;
    }
  }
  o.trace_id = x.trace.trace_id;
  o.span_id = x.trace.span_id;
  const auto info = openai::inspect_request_in_place(req.target(), req.body());
  o.operation.assign(openai::to_string(info.operation));
  o.model = info.model;
  o.stream = info.stream;
  o.usage_requested = info.usage_requested;
  o.max_tokens = info.max_tokens;
  x.session_claim = session_claim(found[2].first, info);  // none when no session header is set
  if (x.session_claim) {
    std::lock_guard lock(shared_.sessions_mutex);
    x.session = shared_.sessions.begin(*x.session_claim);
  }
  o.request_bytes = req.body().size();
  o.in_flight_at_start = shared_.in_flight++;
  ++in_flight_here_;
  x.in_flight_series = shared_.with_metrics([&](ProxyMetrics& m) { return m.request_started(o.model, o.operation); });
  o.upstream_retries = 0;
}

void Proxy::note(Exchange& x, const RxStamp& s) {
  x.timing.note(s);
  x.last_rx = s;
  if (s.kernel) shared_.lag_by_loop[static_cast<std::size_t>(index_)].observe(static_cast<double>(s.lag_us) / 1e6);
}

void Proxy::note_loop_read(Exchange& x) {
  x.timing.note_loop();
  const ClockReading now = read_clocks_together();
  x.last_rx = loop_stamp(now.wall_us(), now.steady_us());
}

double Proxy::since_ms(const Exchange& x) const {
  return static_cast<double>(SystemClock::instance().steady_us() - x.t0_us) / 1000.0;
}

void Proxy::upstream_head(std::string& out, const ClientRequest& req, const Exchange& x, std::size_t body_size) const {
  TextWriter w(out, 1024);  // a kept buffer: the thread's next request writes into it too
  const auto add = [&w](std::string_view name, std::string_view value) { w.field_line(name, value); };
  const auto method = req.method_string();  // any method the head allowed, extension methods too
  const std::string_view target = req.target();
  // The backend's base path before the client's target (BackendUrl::target_for, without its string).
  const bool rooted = !target.empty() && target.front() == '/';
  w.put({method.data(), method.size()}).put(" ").put(backend_.base_path);
  if (!rooted) w.put("/");
  w.put(target).put(" HTTP/1.1\r\n");
  const std::string_view tokens = req.find(http::field::connection).value_or(std::string_view());
  bool client_request_id = false;
  for (const auto& f : req.fields()) {
    const std::string_view name = f.name;
    // A name Beast knows (its enum) is none of traceparent, tracestate, X-Request-Id, and has no
    // underscore: only the names it does not know are compared as text (issue 43).
    const bool known = f.id != http::field::unknown;
    if (is_hop_by_hop_field(f.id, name, tokens) || f.id == http::field::host || f.id == http::field::content_length ||
        f.id == http::field::accept_encoding ||
        (known ? f.id == id_header_field_ : beast::iequals(name, opts_.id_header)) ||
        (!known &&
         (beast::iequals(name, "traceparent") || beast::iequals(name, "tracestate") || dropped_field_name(name)))) {
      // Accept-Encoding dropped: bodies must stay readable for the tap; trace context below;
      // names with underscores as nginx drops them (proxy/request_head.hpp); hop-by-hop fields
      // (Connection among them: the backend connection is kept alive, HTTP/1.1's default).
      continue;
    }
    if (!known && beast::iequals(name, "X-Request-Id")) client_request_id = true;
    add(name, f.value);
  }
  add("Host", backend_.host_header);
  add(opts_.id_header, x.obs->observation_id);
  if (!client_request_id) add("X-Request-Id", x.obs->observation_id);
  // The engine's spans become children of the proxy's span.
  char traceparent[otel::kTraceparentSize];
  add("traceparent", otel::write_traceparent(traceparent, x.trace.trace_id, x.trace.span_id, x.trace.flags));
  if (!x.trace_state.empty()) add("tracestate", x.trace_state);
  // A length as Beast's prepare_payload gives one: for a body, and for the methods that carry one.
  const auto verb = req.method();
  if (body_size > 0 || verb == http::verb::post || verb == http::verb::put || verb == http::verb::options) {
    char number[24];
    const auto end = std::to_chars(number, number + sizeof number, body_size).ptr;
    add("Content-Length", {number, static_cast<std::size_t>(end - number)});
  }
  w.put("\r\n").finish();
}

namespace {

// --usage inject: a streamed chat or completion that did not ask for usage is asked for it (and the
// usage chunk stripped from what the client gets). True when the body was rewritten.
bool inject_usage(ledger::Observation& o, std::string& body) {
  if (!o.stream || o.usage_requested || (o.operation != "chat" && o.operation != "text_completion")) return false;
  auto rewritten = inject_include_usage(body);
  if (!rewritten) return false;
  body = std::move(*rewritten);
  o.usage_injected = true;
  return true;
}

// What decides whether a failed send or head read is retried on a fresh connection.
RetryContext retry_context(bool retry_stale, bool pooled, const ledger::Observation& o, boost::system::error_code ec,
                           bool response_bytes_seen, bool client_gone) {
  RetryContext retry;
  retry.retry_stale = retry_stale;
  retry.pooled_connection = pooled;
  retry.retries_so_far = o.upstream_retries.value_or(0);
  retry.failure = failure_of(ec);
  retry.response_bytes_seen = response_bytes_seen;
  retry.client_gone = client_gone;
  return retry;
}

// The response head from bytes read so far: a head that came whole in one read is parsed at once
// (issue 43: Beast's read operation went once round the event loop); the fields taken leave the
// buffer, a field not yet whole stays there for the next read.
boost::system::error_code parse_buffered_head(BackendParser& parser, net::ReadBuffer& buffer) {
  boost::system::error_code ec;
  while (!parser.is_header_done() && buffer.size() > 0) {
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec) return ec == http::error::need_more ? boost::system::error_code() : ec;
    if (used == 0) return ec;
  }
  return {};
}

// What the end of the backend's stream means for its response: a body read to the close ends
// there; anything else not whole is partial_message; before any byte, end_of_stream (a pooled
// connection the backend had closed: retried). As Beast's read operations said it.
boost::system::error_code end_of_stream(BackendParser& parser) {
  if (!parser.got_some()) return http::error::end_of_stream;
  boost::system::error_code ec;
  parser.put_eof(ec);
  return ec;
}

}  // namespace

awaitable<bool> Proxy::handle(beast::tcp_stream& client, ClientRequest& req, std::optional<RxStamp> arrival,
                              bool client_drained) {
  // On the heap, not in the coroutine's frame: a frame over Asio's 2 KiB recycling limit is
  // allocated and freed for every request, and evicts a smaller cached frame each time (issue 43).
  const auto exchange = std::make_unique<Exchange>();
  begin(*exchange, req, arrival);
  Exchange& x = *exchange;
  auto& o = *x.obs;
  const bool client_keep = req.keep_alive();

  std::string& body = req.body();  // rewritten below when usage is injected
  const bool strip_usage = opts_.usage == UsageMode::kInject && inject_usage(o, body);
  Kept<std::string, struct UpstreamText> up_head;  // its buffer the thread's next request's (issue 43)
  upstream_head(*up_head, req, x, body.size());

  // The client may leave while we wait: watch its socket, and close the upstream if it does.
  auto watch = std::make_shared<ClientWatch>();
  arm_client_watch(client, watch, client_drained);

  BackendParser parser;
  parser.header_limit(64 * 1024);
  parser.skip(req.method() == http::verb::head);  // a HEAD response has no body, whatever its length says

  auto sent = co_await send_upstream(x, *up_head, body, parser, *watch);
  if (sent.ec) {
    disarm_client_watch(client, watch);
    co_return co_await answer_send_failure(client, x, req.version(), client_keep, *watch, sent);
  }
  o.ttfb_ms = static_cast<double>(x.last_rx.steady_us - x.t0_us) / 1000.0;
  co_return co_await relay(client, req, x, std::move(sent.up), parser, watch, strip_usage);
}

// Sends the request and reads the response head. A pooled connection that the backend closed while
// the request was on its way (EOF or reset before any response byte) is replaced by a fresh one,
// once (upstream_policy.hpp: should_retry).
awaitable<Proxy::Sent> Proxy::send_upstream(Exchange& x, std::string_view head, std::string_view body,
                                            BackendParser& parser, ClientWatch& watch) {
  // The head and the body leave in one system call, from where each lies (the body is not copied
  // after the head: two copies and a zero-fill of a long agent request's bytes, issue 43).
  const std::array<asio::const_buffer, 2> request{asio::buffer(head), asio::buffer(body)};
  Sent sent{pool_->take(), {}, false};
  bool pooled = sent.up != nullptr;
  for (;;) {
    if (!sent.up) {
      pooled = false;
      auto [fresh, cec] = co_await pool_->connect();
      if (cec) co_return Sent{nullptr, cec, true};
      sent.up = fresh;
    }
    Upstream& up = *sent.up;
    watch.upstream = sent.up;
    if (up.wait) {   // plain: at once when the socket takes it
      sent.ec = {};  // a retry's: the failure of the connection before is not this one's
      const std::size_t at_once = send_now(up.tcp().socket(), request, sent.ec);
      if (!sent.ec && at_once < head.size() + body.size()) {
        sent.ec = co_await send_rest(up.tcp(), request, at_once, seconds(opts_.response_timeout_s));
      }
    } else {
      up.tcp().expires_after(seconds(opts_.response_timeout_s));
      std::tie(sent.ec, std::ignore) = co_await up.conn->write_bytes(request);
    }
    // The head, read until whole: on a plain socket by the proxy's own reads, the first with its
    // kernel receive time; on TLS through the stream.
    std::optional<RxStamp> head_rx;
    while (!sent.ec && !parser.is_header_done()) {
      boost::system::error_code rec;
      if (up.wait) {
        Received more;
        if (!receive_at_once(up.tcp().socket(), up.buffer(), *up.wait, more))
          more = co_await receive_on_edge(up.tcp().socket(), up.buffer(), *up.wait, seconds(opts_.response_timeout_s));
        rec = more.ec;
        if (!rec && !head_rx) head_rx = more.stamp;
      } else {
        up.tcp().expires_after(seconds(opts_.response_timeout_s));
        std::tie(rec, std::ignore) = co_await up.conn->read_more();
      }
      sent.ec = rec == asio::error::eof ? end_of_stream(parser) : rec ? rec : parse_buffered_head(parser, up.buffer());
    }
    if (!sent.ec) {
      if (head_rx) {
        note(x, *head_rx);
      } else {
        note_loop_read(x);
      }
      if (pooled) pool_->learner().reused(up.after_stream);
      co_return sent;
    }
    const RetryContext retry = retry_context(opts_.retry_stale, pooled, *x.obs, sent.ec,
                                             parser.got_some() || up.buffer().size() > 0, watch.client_gone);
    if (pooled && closed_by_server(retry.failure) && !retry.response_bytes_seen) {
      pool_->learner().closed_before_reuse(up.after_stream);
    }
    if (!should_retry(retry)) co_return sent;
    shared_.with_metrics([&](ProxyMetrics& m) { m.count_retry(to_string(retry.failure)); });
    x.obs->upstream_retries = retry.retries_so_far + 1;
    watch.upstream = nullptr;
    sent.up.reset();
  }
}

awaitable<bool> Proxy::answer_send_failure(beast::tcp_stream& client, Exchange& x, unsigned version, bool client_keep,
                                           const ClientWatch& watch, const Sent& sent) {
  const auto ec = sent.ec;
  if (sent.connect_failed) {
    if (const auto why = resource_shortage(ec); !why.empty()) {
      // The proxy, not the backend, is out of descriptors or memory: say so, as a 503.
      std::string message = fmt::format(
          "modelperfobs proxy: no connection to the backend could be opened: {} ({}); raise the file descriptor "
          "limit (ulimit -n) or lower --max-connections",
          ec.message(), why);
      co_return co_await answer_error(client, x, version, false, http::status::service_unavailable, "proxy_error",
                                      std::move(message));
    }
    shared_.with_metrics([](ProxyMetrics& m) { m.count_connect_error(); });
    co_return co_await answer_upstream_failure(client, x, version, client_keep, ec, "upstream_unreachable",
                                               "did not accept the connection in time", "is unreachable");
  }
  if (watch.client_gone) {
    x.obs->outcome = "client_disconnected";
    finish(x);
    co_return false;
  }
  if (is_http_syntax_error(ec)) {
    // A garbage status line, two Content-Lengths, a bad field: not a reset, say what it was.
    std::string message =
        fmt::format("modelperfobs proxy: backend {} sent an invalid response head: {}", backend_.origin, ec.message());
    co_return co_await answer_error(client, x, version, false, http::status::bad_gateway, "upstream_protocol_error",
                                    std::move(message));
  }
  co_return co_await answer_upstream_failure(client, x, version, false, ec, "upstream_reset",
                                             "sent no response in time", "closed the connection before responding");
}

void Proxy::arm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch,
                             bool client_drained) {
  // A peek of one byte through the loop's reactor rather than a readiness wait (issue 43). Readiness
  // can be stale: the request's bytes were read by recvmsg outside the reactor, whose event for them
  // may still be queued; taking that for an EOF cut live requests, which the load generator then
  // sent again on a fresh connection. The reactor tries a read operation again itself on every event
  // and completes it only on a byte, the end or an error, so a stale event costs one failed peek; a
  // wait completed on it, to be peeked and armed again, cost a wake-up and an epoll_ctl per arming.
  // peek_on_edge rather than Asio's async_receive: no ioctl per connection. When the request's last
  // read left the socket empty (the kernel said so) and nothing ran since, the peek does not ask
  // the kernel at once: anything the client sends, or its end, raises the socket's next edge. (A
  // request taken whole at once, as --defer-accept makes it, never told the reactor so.)
  const auto on_peek = [](std::shared_ptr<void>& owner, boost::system::error_code ec, std::size_t n) {
    auto& w = *static_cast<ClientWatch*>(owner.get());
    if (ec == asio::error::operation_aborted || w.done) return;
    if (!ec && n > 0) return;  // bytes (a pipelined request): the client is there
    // Its end or an error (a reset): it left.
    w.client_gone = true;
    if (w.upstream) {
      boost::system::error_code cec;
      w.upstream->tcp().socket().close(cec);  // the engine sees the disconnect at once
    }
  };
  peek_on_edge(reactor_, client.socket(), watch, on_peek, !client_drained);
}

void Proxy::disarm_client_watch(beast::tcp_stream& client, const std::shared_ptr<ClientWatch>& watch) {
  watch->done = true;
  boost::system::error_code ec;
  client.socket().cancel(ec);
}

namespace {

// Whether the backend's body can go to the client byte for byte, its framing included (issue 43:
// decoding and re-encoding every chunk was a tenth of the proxy's instructions): the client's head
// then says what the backend's does (the same Content-Length, or chunked to an HTTP/1.1 client).
// Not when usage is stripped from the events, the body is read to the close, or the backend's
// transfer coding is more than chunked. A TLS backend's too: its bytes, decrypted, are read into the
// same buffer and parsed by the same rounds.
bool passes_through(const ClientRequest& req, const BackendParser& parser, std::string_view transfer_encoding,
                    bool strip_usage) {
  if (strip_usage || parser.is_done()) return false;
  if (parser.chunked()) return req.version() >= 11 && beast::iequals(transfer_encoding, "chunked");
  return parser.content_length().has_value();
}

// What the proxy reads of the backend's head, in one pass over its fields (issue 43: a lookup by
// name each walked Beast's tree). Each is the first field of its name, as Beast's find() gives it.
struct BackendHeadFacts {
  bool sse = false, encoded = false;
  std::optional<std::string_view> transfer_encoding, keep_alive, request_id;
  explicit BackendHeadFacts(const BackendHead& head) {
    bool typed = false;
    for (const auto& f : head) {
      switch (f.name()) {
        case http::field::content_type:
          if (!typed) sse = f.value().find("text/event-stream") != std::string_view::npos;
          typed = true;
          break;
        case http::field::content_encoding: encoded = true; break;
        case http::field::transfer_encoding:
          if (!transfer_encoding) transfer_encoding = f.value();
          break;
        case http::field::keep_alive:
          if (!keep_alive) keep_alive = f.value();
          break;
        case http::field::unknown:
          if (!request_id && beast::iequals(f.name_string(), "X-Request-Id")) request_id = f.value();
          break;
        default: break;
      }
    }
  }
};

// The line's outcome from how the relay ended: the upstream's end, the client's, the stream's own
// terminal and error events; an upstream failure gets its type and message.
void record_outcome(ledger::Observation& o, const openai::StreamTap& tap, boost::system::error_code upstream_ec,
                    bool client_left, bool terminal_forwarded, bool sse) {
  RelayEnd end;
  end.client_left = client_left;
  end.terminal_forwarded = terminal_forwarded;
  end.upstream = !upstream_ec                                   ? UpstreamEnd::kComplete
                 : upstream_ec == beast::error::timeout         ? UpstreamEnd::kTimeout
                 : upstream_ec == asio::error::connection_reset ? UpstreamEnd::kReset
                 : is_http_syntax_error(upstream_ec)            ? UpstreamEnd::kProtocolError
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
    o.error_message = end.upstream == UpstreamEnd::kProtocolError
                          ? fmt::format("backend's response body broke HTTP framing: {}", upstream_ec.message())
                      : upstream_ec ? fmt::format("backend ended the response early: {}", upstream_ec.message())
                                    : std::string(openai::kMissingTerminalEvent);
  }
}

}  // namespace

// One response's relay: the client's head and how its body goes (as it came, or framed again by
// the serializer), the tap, and what has been written so far.
struct Relay : KeptByThread<Relay> {
  Relay(const ClientRequest& req, BackendParser& parser, const BackendHeadFacts& backend, const ProxyOptions& opts,
        const std::string& observation_id, bool strip)
      : sse(backend.sse),
        encoded(backend.encoded),
        strip_usage(strip && sse),
        head{req.version(), req.method() == http::verb::head, parser, opts.id_header, observation_id, sse, strip_usage},
        tap(sse),
        close_delimited(req.version() < 11 && client_framing(head) == ClientFraming::kNone),
        client_keep_alive(req.keep_alive() && !close_delimited),
        pass_through(passes_through(req, parser, backend.transfer_encoding.value_or(std::string_view()), strip_usage)),
        // A body relayed as it came needs only the head's bytes; the serializer's message stays empty.
        res(pass_through ? http::response<http::buffer_body>() : client_response_head(head, client_keep_alive)),
        sr(res),
        // A body relayed as it came stays in the upstream buffer (the parser says where, the tap
        // reads it there): no copy of it, and no block of its own (issue 43).
        buf(pass_through ? nullptr : static_cast<char*>(ThreadBlocks<kBufSize>::take())) {
    parser.body_in_place(pass_through);
    if (pass_through) write_client_response_head(*raw_head, head, client_keep_alive);
    if (backend.keep_alive) keep_alive_hint = parse_keep_alive(*backend.keep_alive);
  }
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Parses what the upstream buffer holds, never waiting on the socket, so that one read leaves in
  // one write (and the final chunk rides with the last data); waiting here would coalesce events.
  // Stops when more bytes are needed, the body buffer is full or the message is done. The bytes
  // parsed stay in the buffer (`parsed` of them) until the round has forwarded them.
  boost::system::error_code parse_buffered(BackendParser& parser, Upstream& up) {
    consumed = false;
    while (!parser.is_done() && up.buffer().size() > parsed && parser.body().size > 0) {
      boost::system::error_code pec;
      const auto data = up.buffer().data();
      const std::size_t used =
          parser.put(asio::buffer(static_cast<const char*>(data.data()) + parsed, data.size() - parsed), pec);
      parsed += used;
      consumed = consumed || used > 0;
      if (pec) {  // compared only when set: comparing error codes costs more than the test
        if (pec == http::error::need_more || pec == http::error::need_buffer) break;
        return pec;
      }
      if (used == 0) break;
    }
    return {};
  }

  // What a round writes to the client (relay() does the write: a read and a write coroutine per
  // round cost 5% of the proxy's instructions on streams). `raw`: the bytes the parser took this round;
  // `out`: their payload as the client gets it.
  enum class Write { kNone, kAsTheyCame, kBody, kHead };
  Write plan_round(std::string_view raw, std::string_view out, bool last, bool failed_upstream) {
    if (pass_through) {
      // The round's bytes as they came (a chunk-size line alone included: the client gets the head now).
      if (raw.empty() && (head_written || last || failed_upstream)) return Write::kNone;
      bytes = {asio::buffer(head_written ? std::string_view() : std::string_view(*raw_head)), asio::buffer(raw)};
      return Write::kAsTheyCame;
    }
    if (!out.empty()) {
      res.body().data = const_cast<char*>(out.data());
      res.body().size = out.size();
      res.body().more = !last;
      return Write::kBody;
    }
    // Only framing came (a chunk size line), or nothing yet: the client still gets the head now.
    return !head_written && !last && !failed_upstream ? Write::kHead : Write::kNone;
  }
  // The end of the body (or a body-less response) when no data carried it; or, when the backend
  // failed right after its head, that head, so the client's response ends as the backend's did. A
  // body forwarded as it came ends with it: only a head can be left to write.
  bool end_left_to_write(bool complete) const {
    return (complete && !final_written) || (!complete && !head_written && !client_failed);
  }
  void wrote(Write w, boost::system::error_code ec, bool last) {
    if (w == Write::kBody && ec == http::error::need_buffer) ec = {};
    client_failed = client_failed || static_cast<bool>(ec);
    head_written = true;
    if (w != Write::kHead) final_written = last;
  }

  // Not zeroed: every byte used is first written by the parser (16 KiB of memset per request
  // showed in profiles).
  static constexpr std::size_t kBufSize = 16 * 1024;
  struct GiveBuffer {  // the buffer goes back to its thread's blocks (proxy/thread_blocks.hpp)
    void operator()(char* p) const noexcept { ThreadBlocks<kBufSize>::give(p); }
  };
  const bool sse, encoded, strip_usage;
  const ClientHeadInput head;  // what the client's head is made from
  openai::StreamTap tap;
  UsageStripper stripper;
  KeepAliveHint keep_alive_hint;
  const bool close_delimited, client_keep_alive, pass_through;
  http::response<http::buffer_body> res;
  http::response_serializer<http::buffer_body> sr;
  Kept<std::string, struct ClientHeadText>
      raw_head;  // pass-through: the head's bytes, then the backend's body as it came
  const std::unique_ptr<char[], GiveBuffer> buf;
  std::array<asio::const_buffer, 2> bytes;  // kAsTheyCame's: the head (until written) and the raw bytes
  Write head_pending = Write::kNone;        // a head the client's socket did not take at once
  std::size_t head_sent = 0;                // and the bytes of it that went
  std::size_t parsed = 0;
  bool consumed = false;
  // The head goes out at once when no body byte came with it (the client learns the status while
  // the engine works); when body bytes came in the same read, head and body leave in one write.
  // Likewise the last body bytes carry the final chunk when they came together.
  bool head_written = false, final_written = false, client_failed = false;
  // The stream's terminal event ([DONE], response.completed, message_stop) reached the client.
  bool terminal_forwarded = false;
};

namespace {

// The head written at once when the client's socket takes it, as a round's bytes go (issue 43: a
// coroutine to write it, and another inside it, cost about 700 instructions a request). False when
// the rest is to be awaited (write_head_rest): what is left is kept in the relay, not in relay()'s
// coroutine frame, which a few more bytes would push past the allocators' cached sizes.
bool write_head_at_once(beast::tcp_stream& client, Relay& r) {
  const auto w = r.plan_round({}, {}, false, false);
  boost::system::error_code ec;
  std::size_t sent = 0;
  if (w == Relay::Write::kAsTheyCame) sent = send_now(client.socket(), r.bytes, ec);
  if (w == Relay::Write::kHead || (w == Relay::Write::kAsTheyCame && !ec && sent < asio::buffer_size(r.bytes))) {
    r.head_pending = w;
    r.head_sent = sent;
    return false;
  }
  if (w != Relay::Write::kNone) r.wrote(w, ec, false);
  return true;
}

// What of the head the client's socket did not take at once, or the head by Beast's serializer
// when the body is framed again.
awaitable<void> write_head_rest(beast::tcp_stream& client, Relay& r) {
  boost::system::error_code ec;
  if (r.head_pending == Relay::Write::kAsTheyCame) {
    ec = co_await send_rest(client, r.bytes, r.head_sent, kClientWriteTimeout);
  } else {
    client.expires_after(kClientWriteTimeout);
    std::tie(ec, std::ignore) = co_await http::async_write_header(client, r.sr, kNoThrow);
  }
  r.wrote(r.head_pending, ec, false);
}

}  // namespace

awaitable<bool> Proxy::relay(beast::tcp_stream& client, const ClientRequest& req, Exchange& x,
                             std::shared_ptr<Upstream> up, BackendParser& parser, std::shared_ptr<ClientWatch> watch,
                             bool strip_usage) {
  auto& o = *x.obs;
  o.http_status = static_cast<int>(parser.head().result_int());
  const BackendHeadFacts backend(parser.head());
  if (backend.request_id) o.upstream_request_id = std::string(*backend.request_id);
  // On the heap, not in the coroutine's frame (see handle()).
  const auto relay_state = std::make_unique<Relay>(req, parser, backend, opts_, o.observation_id, strip_usage);
  Relay& r = *relay_state;
  const auto idle = seconds(opts_.stream_idle_timeout_s);
  // The head alone (no body byte came with it): the client learns the status while the engine works.
  if (up->buffer().size() == 0 && !parser.is_done() && !write_head_at_once(client, r))
    co_await write_head_rest(client, r);
  boost::system::error_code upstream_ec;
  while (!r.client_failed && !parser.is_done()) {
    parser.body().data = r.buf.get();
    parser.body().size = Relay::kBufSize;
    boost::system::error_code rec = r.parse_buffered(parser, *up);
    if (!rec && !parser.is_done() && !r.consumed && up->wait) {  // one read, with its kernel receive time
      Received got;
      up->wait->quiet_from_us = std::max(kQuietFromUs, x.timing.largest_lag_us());
      if (!receive_at_once(up->tcp().socket(), up->buffer(), *up->wait, got))
        got = co_await receive_on_edge(up->tcp().socket(), up->buffer(), *up->wait, idle);
      if (!got.ec) {
        note(x, got.stamp);
        rec = r.parse_buffered(parser, *up);
      } else if (got.ec == asio::error::eof) {
        parser.put_eof(rec);  // ends a body read to the close; else partial_message
      } else {
        rec = got.ec;
      }
    } else if (!rec && !parser.is_done() && !r.consumed) {  // TLS: through the stream
      up->tcp().expires_after(idle);
      auto [tec, tn] = co_await up->conn->read_more();
      note_loop_read(x);
      rec = tec == asio::error::eof ? end_of_stream(parser) : tec;
      if (!rec) rec = r.parse_buffered(parser, *up);
    }
    const std::size_t got = Relay::kBufSize - parser.body().size;
    const bool last = parser.is_done() && !rec;
    // The round's body as the parser copied it (a body relayed as it came is read in place below).
    const std::string_view piece = r.pass_through ? std::string_view() : std::string_view(r.buf.get(), got);
    std::string filtered;
    if (got > 0 && r.strip_usage) filtered = r.stripper.filter(piece, parser.is_done());
    const auto w = r.plan_round({static_cast<const char*>(up->buffer().data().data()), r.parsed},
                                r.strip_usage ? std::string_view(filtered) : piece, last, static_cast<bool>(rec));
    boost::system::error_code wec;
    if (w == Relay::Write::kAsTheyCame) {  // at once, unless the client's socket is full
      const std::size_t sent = send_now(client.socket(), r.bytes, wec);
      if (!wec && sent < asio::buffer_size(r.bytes))
        wec = co_await send_rest(client, r.bytes, sent, kClientWriteTimeout);
    }
    if (w == Relay::Write::kBody || w == Relay::Write::kHead) client.expires_after(kClientWriteTimeout);
    if (w == Relay::Write::kBody) std::tie(wec, std::ignore) = co_await http::async_write(client, r.sr, kNoThrow);
    if (w == Relay::Write::kHead)
      std::tie(wec, std::ignore) = co_await http::async_write_header(client, r.sr, kNoThrow);
    if (w != Relay::Write::kNone) r.wrote(w, wec, last);
    o.response_bytes += got;
    if (got > 0 && !r.encoded) {  // after forwarding: never delays the client
      if (r.pass_through) {
        // The body where the parser left it in the upstream buffer, which nothing has read into
        // since: a round reads only when its first parse took nothing.
        for (const auto& s : parser.body_spans()) r.tap.feed(std::string_view(s.data, s.size), x.last_rx.steady_us);
      } else {
        r.tap.feed(piece, x.last_rx.steady_us);
      }
    }
    parser.clear_body_spans();
    up->buffer().consume(std::exchange(r.parsed, 0));
    if (got > 0 && !r.client_failed && r.tap.saw_terminal()) r.terminal_forwarded = true;
    if (rec) {
      upstream_ec = rec;
      break;
    }
  }
  disarm_client_watch(client, watch);
  bool complete = parser.is_done() && !r.client_failed;
  if (r.end_left_to_write(complete)) co_await end_client_response(client, r, complete);
  // To the last response byte received, on the line's own basis.
  o.e2e_ms = x.timing.basis() == kKernelRx ? static_cast<double>(x.last_rx.steady_us - x.t0_us) / 1000.0 : since_ms(x);
  r.tap.finish(parser.is_done());
  ledger::fill_from_tap(o, r.tap, x.t0_us, opts_.itl_full);
  // A client that closes once the whole response was written to it (a Content-Length body read to
  // its end) did not leave early, whenever the watch noticed its close.
  record_outcome(o, r.tap, upstream_ec, r.client_failed || (watch->client_gone && !complete), r.terminal_forwarded,
                 r.sse);
  if (r.tap.unknown_events() > 0)
    shared_.with_metrics([&](ProxyMetrics& m) { m.count_unknown_events(o.operation, r.tap.unknown_events()); });
  if (complete && parser.keep_alive() && !upstream_ec) pool_->give_back(std::move(up), r.keep_alive_hint, r.sse);
  finish(x);
  co_return complete&& req.keep_alive() && !r.close_delimited;
}

// What Relay::end_left_to_write says is left (relay() calls it only then).
awaitable<void> Proxy::end_client_response(beast::tcp_stream& client, Relay& r, bool& complete) {
  r.res.body().data = nullptr;
  r.res.body().size = 0;
  r.res.body().more = !complete;
  boost::system::error_code wec;
  client.expires_after(kClientWriteTimeout);
  if (r.pass_through) {
    if (!r.head_written) {
      const asio::const_buffer head = asio::buffer(*r.raw_head);
      wec = co_await send_all(client, {&head, 1}, kClientWriteTimeout);
    }
  } else if (complete) {  // no co_await inside a conditional expression (GCC 12, see refuse())
    std::tie(wec, std::ignore) = co_await http::async_write(client, r.sr, kNoThrow);
  } else {
    std::tie(wec, std::ignore) = co_await http::async_write_header(client, r.sr, kNoThrow);
  }
  if (wec && wec != http::error::need_buffer) {
    r.client_failed = true;
    complete = false;
  }
}

awaitable<bool> Proxy::answer_error(beast::tcp_stream& client, Exchange& x, unsigned version, bool keep_alive,
                                    http::status status, std::string_view type, std::string message) {
  http::response<http::string_body> res(status, version);
  res.set(http::field::content_type, "application/json");
  res.set(opts_.id_header, x.obs->observation_id);
  res.body() = fmt::format(R"({{"error":{{"message":{},"type":{},"param":null,"code":{}}}}})", json_quote(message),
                           json_quote(type), static_cast<int>(status));
  res.keep_alive(keep_alive);
  res.prepare_payload();
  x.obs->http_status = static_cast<int>(status);
  x.obs->outcome = std::string(type);
  x.obs->error_type = std::string(type);
  x.obs->error_message = message;
  x.obs->response_bytes = res.body().size();
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

awaitable<void> Proxy::refuse(beast::tcp_stream& client, const ClientRequest& partial, http::status status,
                              std::string outcome, std::string message) {
  Exchange x;
  begin(x, partial);
  const auto version = partial.version() == 10 ? 10u : 11u;
  co_await answer_error(client, x, version, false, status, outcome, std::move(message));
  // Lingering close (nginx's lingering_close): the client may still be sending what was refused; a
  // close with its bytes unread would reset the connection and lose the answer. Say we are done
  // and read what comes, for a short while.
  boost::system::error_code ec;
  client.socket().shutdown(tcp::socket::shutdown_send, ec);
  if (ec) co_return;
  ReadableWait wait(io_.get_executor());
  net::ReadBuffer sink;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (std::size_t drained = 0; drained < (4u << 20) && std::chrono::steady_clock::now() < until;) {
    auto r = co_await receive_some(client.socket(), sink, wait, std::chrono::milliseconds(500));
    if (r.ec) break;
    drained += r.bytes;
    sink.clear();
  }
}

void Proxy::finish(Exchange& x) {
  auto& o = *x.obs;
  o.ended_at_us = SystemClock::instance().wall_us();
  if (!o.e2e_ms) {
    x.timing.note_loop();
    o.e2e_ms = since_ms(x);
  }
  o.timing_basis = std::string(x.timing.basis());
  o.proxy_lag_ms = x.timing.max_lag_ms();
  if (const auto at = x.timing.max_lag_arrival_steady_us())
    o.proxy_lag_at_ms = static_cast<double>(*at - x.t0_us) / 1000.0;
  o.proxy_lag_quiet_ms = x.timing.max_lag_quiet_ms();
  if (x.session_claim) {
    std::lock_guard lock(shared_.sessions_mutex);
    shared_.sessions.finish(*x.session_claim, o.response_id, x.session);
  }
  o.session_id = x.session.session_id;
  o.session_source = x.session.source;
  o.turn = x.session.turn;
  const auto note = shared_.with_metrics([&](ProxyMetrics& m) {
    m.record(o);
    m.request_ended(x.in_flight_series);
    return shared_.notes.observe(o);
  });
  if (note) std::cerr << *note << "\n";
  --shared_.in_flight;
  --in_flight_here_;
  shared_.with_telemetry([&](Telemetry& t) { t.finish(o, x.trace, std::move(x.trace_state)); });
  // Last: the observation goes to the ledger's writer, which renders its line on its own thread
  // (x.obs is null after finish()).
  shared_.ledger.submit(std::move(x.obs));
}

}  // namespace mpo::proxy
