// A plain TCP socket's reads and writes at a system call each (edge: Asio, recvmsg, sendmsg).
// Reads carry the kernel's receive timestamp: the proxy's upstream reads and the first read of
// each client request come through here, so every piece of a response, and the request's arrival,
// carry the time its bytes reached the socket (proxy/timing.hpp), not the time the event loop got
// round to them. Writes go out at once when the socket takes them, as nginx writes: no timer, no
// trip through the loop's queue (issue 43: Beast's write armed and cancelled a timer for every
// chunk relayed, a timerfd_settime and two more epoll_waits a chunk).
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include "net/read_buffer.hpp"
#include "proxy/timing.hpp"

namespace mpo::proxy {

// Asks the kernel for software receive timestamps on `fd` (SO_TIMESTAMPNS). Sockets accepted from
// a listener that has it inherit it. false when refused (reads then stand on the loop basis).
bool enable_rx_timestamps(int fd);

// Asks the kernel to say, with every read on `fd` (TCP_INQ), whether more is queued behind it, so
// a read that drains the socket lets the next one wait without asking first (receive_some).
// Sockets accepted from a listener that has it inherit it. false when refused.
bool enable_queue_hints(int fd);

// Asks the kernel to hand a listener's connections over only once their first bytes came, or
// `seconds` passed (TCP_DEFER_ACCEPT; nginx's `listen ... deferred`): a request's first read finds
// it there, instead of failing once and waiting for it (one recvmsg and one wake-up less on a new
// connection). false when refused.
bool defer_accept(int fd, int seconds);

// The timeout of a socket's reads (receive_some), kept lazily: one per socket, reused by every read,
// so a read costs no timer operation and no allocation once the loop's handler memory is warm.
class ReadableWait {
 public:
  explicit ReadableWait(const boost::asio::any_io_executor& ex);
  ~ReadableWait();
  ReadableWait(const ReadableWait&) = delete;
  ReadableWait& operator=(const ReadableWait&) = delete;
  // Around an operation on `socket` that ends when the socket is cancelled: `begin` before it
  // starts (cancels the socket once `timeout` passes first), `end` with its result after it:
  // beast::error::timeout when that is why it ended, else `ec`.
  void begin(boost::asio::ip::tcp::socket& socket, std::chrono::steady_clock::duration timeout);
  boost::system::error_code end(boost::system::error_code ec);
  // The reactor of the loop `socket` is on (the socket this wait is for), found once.
  boost::asio::detail::reactor& reactor(boost::asio::ip::tcp::socket& socket);
  // As a new wait's, for the next socket of its loop (proxy/client_kits.hpp). Its timer may stay
  // armed: when it fires it finds no wait in progress, or one whose deadline it waits for again.
  void clear();

  // The last read on this socket left it drained (the kernel said so, or it had nothing): the next
  // read waits for the socket's next edge. Otherwise it reads at once, in the calling coroutine:
  // bytes already there are taken without a trip through the loop's queue (a thousand streams
  // each waiting its turn in that queue for every read made the proxy's reads late by 0.1-1 s).
  bool drained = false;
  // receive_at_once just asked the kernel and found nothing: the reactor's read that follows, in the
  // same turn of the loop, waits for the socket's next edge without asking the kernel again (any
  // byte that comes after that read raises a new edge). Cleared by that read.
  bool found_empty = false;
  // The next read asks how its wait was spent (RxStamp::quiet_us) only when it is this late or
  // later; set just before it, and back to kQuietFromUs once it read. A relay sets its line's
  // largest lag so far (LineTiming::largest_lag_us): a read no later cannot become the line's, and
  // at a thousand streams nearly every read is late (issue 43). Kept here, not in the read's
  // operation, which lies in its coroutine's frame (a larger frame missed Asio's recycling).
  double quiet_from_us = kQuietFromUs;
  // A connection just accepted whose first read is yet to come (FirstReads learns from that read),
  // and the steady clock at its accept when that read waits for the first edge (else 0).
  bool first_read = false;
  std::int64_t first_edge_since_us = 0;

  struct State;  // socket_io.cpp's (public for its timer's handler there)

 private:
  std::shared_ptr<State> state_;
};

struct Received {
  boost::system::error_code ec;  // asio::error::eof when the peer closed
  std::size_t bytes = 0;
  RxStamp stamp;
  bool drained = false;  // the kernel said nothing (no byte, no end) was queued behind these bytes
};

// One read of up to `max_bytes` appended to `buffer`, waiting for data as needed (at most
// `timeout`), stamped with the kernel's receive time of the bytes read (the last segment's, when
// several were queued) or, without one, the clock's at the read. At once when the socket was not
// left drained (ReadableWait::drained), else a read of Asio's reactor on the socket's
// edge-triggered registration: waiting costs no epoll_ctl.
boost::asio::awaitable<Received> receive_some(boost::asio::ip::tcp::socket& socket, net::ReadBuffer& buffer,
                                              ReadableWait& wait, std::chrono::steady_clock::duration timeout,
                                              std::size_t max_bytes = 16 * 1024);

// A socket nothing can have come on that a read must not wait past: one accepted or connected in
// this turn of the loop, before anything is sent on it. Its first read waits for the socket's first
// readiness edge without asking the kernel in vain (nginx's way: a read after an event). Bytes the
// kernel queued before it was registered raise that edge too (epoll reports a socket that is ready
// when it is added). On a connection just made to a backend, bytes that came with the connect's
// own event (a backend that speaks first) are read once the request sent draws an answer or a
// reset.
void await_first_edge(boost::asio::ip::tcp::socket& socket, ReadableWait& wait);

// An accepted socket's descriptor is its alone (never duplicated): closing it then removes it from
// epoll by itself, and Asio's close asks for no EPOLL_CTL_DEL first. Asio takes every socket it
// accepts for one assigned from elsewhere, whose descriptor may be shared (the registration of a
// shared one outlives its close): one system call a connection that nginx does not make (issue 43).
void own_descriptor(boost::asio::ip::tcp::socket& socket);

// The reactor's read on a socket's next edge (receive_on_edge's), as an asynchronous operation of
// Asio's own kind: `co_await`ed in a coroutine it suspends that coroutine itself, where an
// operation started with use_awaitable runs in a coroutine frame of its own (issue 43: that frame's
// creation, resumption and end were a fifth of a relayed chunk's Asio work). Its bytes are
// committed to the buffer, and the wait's timeout applied, before the coroutine resumes.
class EdgeRead {
 public:
  EdgeRead(boost::asio::ip::tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait,
           boost::asio::mutable_buffer space)
      : socket_(&socket), buffer_(&buffer), wait_(&wait), space_(space) {}
  template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(Received)) Token>
  auto operator()(Token&& token) const;

 private:
  struct Start;
  // Defined in socket_io.cpp, for the handler of a co_await in an awaitable<> coroutine.
  template <typename Handler>
  void start(Handler&& handler) const;

  boost::asio::ip::tcp::socket* socket_;
  net::ReadBuffer* buffer_;
  ReadableWait* wait_;
  boost::asio::mutable_buffer space_;
};

struct EdgeRead::Start {
  EdgeRead read;
  template <typename Handler>
  void operator()(Handler&& handler) const {
    read.start(std::move(handler));
  }
};

template <BOOST_ASIO_COMPLETION_TOKEN_FOR(void(Received)) Token>
auto EdgeRead::operator()(Token&& token) const {
  return boost::asio::async_initiate<Token, void(Received)>(Start{*this}, token);
}

// receive_some's two halves, for a caller on the hot path that enters no coroutine of its own for a
// read (issue 43: a coroutine's frame and resumption a chunk): receive_at_once reads what the
// socket holds, true with `r` filled (bytes appended, an end or an error) unless it must wait; then
// `co_await receive_on_edge(...)`, the reactor's read on the socket's next edge (the socket open).
bool receive_at_once(boost::asio::ip::tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait, Received& r,
                     std::size_t max_bytes = 16 * 1024);
EdgeRead receive_on_edge(boost::asio::ip::tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait,
                         std::chrono::steady_clock::duration timeout, std::size_t max_bytes = 16 * 1024);

// A peek of one byte queued on `socket`'s registration with `reactor` (its loop's), as the reactor's
// own reads are: `on_done(owner, ec, bytes)` runs on the loop when a byte is there (bytes 1), the
// peer's end came (bytes 0) or the socket failed or was cancelled (ec; operation_aborted for
// cancel() and close()). The byte stays queued. Unlike Asio's async_receive it never switches the
// socket to non-blocking (an ioctl on every socket's first such read: one a connection, issue 43),
// as it peeks with MSG_DONTWAIT.
// `at_once` false: the caller read the socket drained (TCP_INQ) in this turn of the loop, so the
// peek waits for the socket's next edge without asking the kernel first.
using PeekDone = void (*)(std::shared_ptr<void>& owner, boost::system::error_code ec, std::size_t bytes);
void peek_on_edge(boost::asio::detail::reactor& reactor, boost::asio::ip::tcp::socket& socket,
                  std::shared_ptr<void> owner, PeekDone on_done, bool at_once = true);

// Writes what of `buffers` the socket takes now, without waiting (one sendmsg). The bytes written;
// `ec` set on a failure other than a full send buffer (a closed peer's EPIPE among them: no signal).
std::size_t send_now(boost::asio::ip::tcp::socket& socket, std::span<const boost::asio::const_buffer> buffers,
                     boost::system::error_code& ec);

// What send_now left of `buffers` (all but the first `sent` bytes), by Asio's write with `timeout`
// for it. {} once all is written.
boost::asio::awaitable<boost::system::error_code> send_rest(boost::beast::tcp_stream& stream,
                                                            std::span<const boost::asio::const_buffer> buffers,
                                                            std::size_t sent,
                                                            std::chrono::steady_clock::duration timeout);

// All of `buffers` to `stream`: what the socket takes at once (send_now), the rest by send_rest.
// A caller on the hot path calls the two itself, and enters no coroutine when the socket took all.
boost::asio::awaitable<boost::system::error_code> send_all(boost::beast::tcp_stream& stream,
                                                           std::span<const boost::asio::const_buffer> buffers,
                                                           std::chrono::steady_clock::duration timeout);

}  // namespace mpo::proxy
