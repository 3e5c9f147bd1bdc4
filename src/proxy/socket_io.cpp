// The implementation of proxy/socket_io.hpp. A plain TCP socket's reads with the kernel's receive
// timestamp and its writes at once (edge: Asio, recvmsg, sendmsg).
#include "proxy/socket_io.hpp"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/reactor.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <boost/asio/detail/thread_context.hpp>
#include <boost/asio/detail/thread_info_base.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/error.hpp>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/clock.hpp"

namespace mpo::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

bool enable_rx_timestamps(int fd) {
  const int on = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

bool enable_queue_hints(int fd) {
  const int on = 1;
  return ::setsockopt(fd, SOL_TCP, TCP_INQ, &on, sizeof on) == 0;
}

bool defer_accept(int fd, int seconds) {
  return ::setsockopt(fd, SOL_TCP, TCP_DEFER_ACCEPT, &seconds, sizeof seconds) == 0;
}

// The timeout is kept lazily, as nginx keeps its timers: a wait only moves its deadline forward,
// and the timer, armed once, looks at the deadline when it fires (times out the wait in progress,
// or arms itself again for the later deadline, or stays idle when no wait is in progress). Setting
// and cancelling a timer around every read was most of the per-event cost of a wait. The handler
// holds the state weakly and the number of the arming it belongs to, so a handler of an earlier
// arming (or one that runs after the owner is gone) touches nothing.
struct ReadableWait::State {
  explicit State(const asio::any_io_executor& ex) : timer(ex) {}
  asio::steady_timer timer;
  std::uint64_t arming = 0;  // the number of the timer's latest arming
  bool armed = false;        // the latest arming has not fired yet
  std::chrono::steady_clock::time_point fires_at{};
  std::chrono::steady_clock::time_point deadline{};  // the wait in progress's
  bool timed_out = false;
  tcp::socket* socket = nullptr;             // the socket a wait is in progress on, nullptr between waits
  asio::detail::reactor* reactor = nullptr;  // its loop's, once a read went to it
};

namespace {

void arm(const std::shared_ptr<ReadableWait::State>& s);

void on_timer(const std::weak_ptr<ReadableWait::State>& weak, std::uint64_t arming,
              const boost::system::error_code& ec) {
  const auto s = weak.lock();
  if (!s || s->arming != arming) return;  // gone, or an earlier arming's handler
  s->armed = false;
  if (ec || !s->socket) return;  // cancelled, or no wait in progress: idle until the next wait
  if (std::chrono::steady_clock::now() < s->deadline) {
    arm(s);  // waits since the arming moved the deadline on
    return;
  }
  s->timed_out = true;
  boost::system::error_code cec;
  s->socket->cancel(cec);
}

void arm(const std::shared_ptr<ReadableWait::State>& s) {
  const std::uint64_t arming = ++s->arming;
  s->armed = true;
  s->fires_at = s->deadline;
  s->timer.expires_at(s->deadline);
  s->timer.async_wait([weak = std::weak_ptr<ReadableWait::State>(s), arming](const boost::system::error_code& ec) {
    on_timer(weak, arming, ec);
  });
}

}  // namespace

ReadableWait::ReadableWait(const asio::any_io_executor& ex) : state_(std::make_shared<State>(ex)) {}

// use_service finds the reactor under the service registry's mutex by comparing type names: a lock
// and a strcmp per read through the reactor (issue 43). A wait is its socket's, on one loop: found once.
asio::detail::reactor& ReadableWait::reactor(tcp::socket& socket) {
  State& st = *state_;
  if (st.reactor == nullptr) {
    st.reactor =
        &asio::use_service<asio::detail::reactor>(asio::query(socket.get_executor(), asio::execution::context));
  }
  return *st.reactor;
}

ReadableWait::~ReadableWait() {
  state_->socket = nullptr;
  state_->timer.cancel();
}

void ReadableWait::clear() {
  state_->socket = nullptr;
  state_->timed_out = false;
  drained = false;
  found_empty = false;
  quiet_from_us = kQuietFromUs;
  first_read = false;
  first_edge_since_us = 0;
}

void ReadableWait::begin(tcp::socket& socket, std::chrono::steady_clock::duration timeout) {
  State& st = *state_;
  st.timed_out = false;
  st.socket = &socket;
  st.deadline = std::chrono::steady_clock::now() + timeout;
  if (!st.armed || st.fires_at > st.deadline) arm(state_);  // else the armed timer looks again when it fires
}

boost::system::error_code ReadableWait::end(boost::system::error_code ec) {
  state_->socket = nullptr;  // from here on a firing timer finds no wait in progress
  if (state_->timed_out) return boost::beast::error::timeout;
  return ec;
}

namespace {

// One recvmsg on `fd` into `data`: n as recvmsg returns it (errno kept for the caller), the bytes
// stamped with the kernel's receive time (or the clock's, without one), and `more` set when the
// kernel says (TCP_INQ) that bytes or the peer's end are still queued behind them, cleared when it
// says nothing is, left unset when it does not say.
ssize_t recv_stamped(int fd, void* data, std::size_t size, RxStamp& stamp, std::optional<bool>& more,
                     double quiet_from_us) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
  if (n <= 0) return n;
  const ClockReading now = read_clocks_together();
  std::optional<std::int64_t> rx_ns;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      timespec ts{};
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      rx_ns = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
    } else if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
      int queued = 0;
      std::memcpy(&queued, CMSG_DATA(c), sizeof queued);
      more = queued != 0;
    }
  }
  const std::int64_t now_steady_us = now.steady_us();
  stamp = stamp_read(rx_ns, now.wall_ns(), now_steady_us);
  // Every stamped read of this thread's loop (client and upstream), for how a late read's wait was
  // spent (proxy/timing.hpp). Constant-initialised: no guard on the way here.
  thread_local LoopReads loop_reads;
  if (stamp.kernel && stamp.lag_us >= quiet_from_us) {
    stamp.quiet_us = static_cast<double>(loop_reads.longest_quiet_us(stamp.steady_us, now_steady_us));
  }
  loop_reads.record(now_steady_us);
  return n;
}

// One read attempt on `fd` into `space`: false when the socket had nothing (EAGAIN); else true with
// `r` filled: the bytes, their stamp and whether the kernel said the socket is drained, or `ec`
// (eof at the peer's end, or the error).
bool read_now(int fd, asio::mutable_buffer space, Received& r, ReadableWait& wait) {
  for (;;) {
    std::optional<bool> more;
    const ssize_t n = recv_stamped(fd, space.data(), space.size(), r.stamp, more, wait.quiet_from_us);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    wait.quiet_from_us = kQuietFromUs;  // it was for this read only
    if (n > 0) {
      r.bytes = static_cast<std::size_t>(n);
      r.drained = more == false;
    } else if (n == 0) {
      r.ec = asio::error::eof;
    } else {
      r.ec = boost::system::error_code(errno, asio::error::get_system_category());
    }
    return true;
  }
}

// A read's bytes committed to the buffer, and whether it drained the socket kept for the next.
void finish_read(const Received& r, net::ReadBuffer& buffer, ReadableWait& wait) {
  if (r.ec) return;
  wait.drained = r.drained;
  buffer.commit(r.bytes);
}

// A stamped read as an operation of Asio's reactor, as its own socket reads are (Asio has none that
// hands over control messages, so none that gives SO_TIMESTAMPNS). Queued on the socket's
// registration, which Asio makes edge-triggered and keeps: the reactor reads at once when it has not
// seen the socket drained, and otherwise queues the read and performs it on the socket's next edge.
// A readiness wait (async_wait) instead re-registers the socket with epoll (EPOLL_CTL_MOD) every
// time (issue 43: one epoll_ctl per chunk relayed, four per one-token request). A read after which
// the kernel says nothing is queued (TCP_INQ: neither bytes nor the peer's end) tells the reactor
// the socket is drained (done_and_exhausted), so the next read waits for the next edge without
// asking the kernel first, as nginx does after a short read. A short read alone does not say it:
// the peer's end may be queued behind the bytes, and its edge has passed (a backend that wrote its
// last bytes and closed would never be read to its end). Without the kernel's word a read drains
// nothing, as Asio's own reads (only an end does). Not cancellable per operation: cancel() or
// close() on the socket ends it (operation_aborted).
template <typename Handler, typename IoExecutor>
class StampedRecvOp : public asio::detail::reactor_op {
 public:
  BOOST_ASIO_DEFINE_HANDLER_PTR(StampedRecvOp);

  StampedRecvOp(int fd, asio::mutable_buffer space, net::ReadBuffer& buffer, ReadableWait& wait, Handler& handler,
                const IoExecutor& io_ex)
      : reactor_op(boost::system::error_code(), &StampedRecvOp::perform_read, &StampedRecvOp::complete),
        fd_(fd),
        space_(space),
        buffer_(&buffer),
        wait_(&wait),
        handler_(std::move(handler)),
        work_(handler_, io_ex) {}

  static status perform_read(reactor_op* base) {
    auto* o = static_cast<StampedRecvOp*>(base);
    if (!read_now(o->fd_, o->space_, o->result_, *o->wait_)) return not_done;
    return o->result_.drained ? done_and_exhausted : done;
  }

  // Called by the loop with `owner` set to run the handler, or without to destroy the operation
  // (the loop's shutdown, when the buffer and the wait may be gone: neither is touched).
  static void complete(void* owner, asio::detail::operation* base, const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<StampedRecvOp*>(base);
    ptr p = {std::addressof(o->handler_), o, o};
    asio::detail::handler_work<Handler, IoExecutor> w(std::move(o->work_));
    Received r = o->result_;
    if (o->ec_) r.ec = o->ec_;  // the reactor's: cancelled (operation_aborted), or no descriptor
    if (owner) {
      r.ec = o->wait_->end(r.ec);  // a timeout's when that is why
      finish_read(r, *o->buffer_, *o->wait_);
    }
    // The handler is moved out and the operation's memory freed before the upcall, which may start
    // the next read from the same recycled memory.
    asio::detail::binder1<Handler, Received> bound(o->handler_, r);
    p.h = std::addressof(bound.handler_);
    p.reset();
    if (owner) {
      asio::detail::fenced_block b(asio::detail::fenced_block::half);
      w.complete(bound, bound.handler_);
    }
  }

 private:
  int fd_;
  asio::mutable_buffer space_;
  net::ReadBuffer* buffer_;
  ReadableWait* wait_;
  Received result_;
  Handler handler_;
  asio::detail::handler_work<Handler, IoExecutor> work_;
};

// peek_on_edge's operation. Its memory is the loop's recycled handler memory, as Asio's own.
class PeekOp : public asio::detail::reactor_op {
 public:
  PeekOp(int fd, std::shared_ptr<void> owner, PeekDone on_done)
      : reactor_op(boost::system::error_code(), &PeekOp::perform_peek, &PeekOp::complete),
        fd_(fd),
        owner_(std::move(owner)),
        done_(on_done) {}

  static void* allocate() {
    return asio::detail::thread_info_base::allocate(asio::detail::thread_info_base::default_tag(),
                                                    asio::detail::thread_context::top_of_thread_call_stack(),
                                                    sizeof(PeekOp), alignof(PeekOp));
  }

 private:
  static status perform_peek(reactor_op* base) {
    auto* o = static_cast<PeekOp*>(base);
    char byte = 0;
    for (;;) {
      const ssize_t n = ::recv(o->fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n >= 0) {
        o->bytes_transferred_ = static_cast<std::size_t>(n);
        return done;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return not_done;
      o->ec_ = boost::system::error_code(errno, asio::error::get_system_category());
      return done;
    }
  }

  // With `owner` set the loop runs the callback; without, it destroys the operation (its shutdown).
  static void complete(void* owner, asio::detail::operation* base, const boost::system::error_code&, std::size_t) {
    auto* o = static_cast<PeekOp*>(base);
    std::shared_ptr<void> keep = std::move(o->owner_);
    const PeekDone on_done = o->done_;
    const boost::system::error_code ec = o->ec_;
    const std::size_t bytes = o->bytes_transferred_;
    o->~PeekOp();
    asio::detail::thread_info_base::deallocate(asio::detail::thread_info_base::default_tag(),
                                               asio::detail::thread_context::top_of_thread_call_stack(), o,
                                               sizeof(PeekOp));
    if (owner) on_done(keep, ec, bytes);
  }

  int fd_;
  std::shared_ptr<void> owner_;
  PeekDone done_;
};

// basic_socket keeps its implementation (the descriptor and its reactor registration) protected.
struct SocketAccess : tcp::socket {
  static auto& implementation(tcp::socket& s) { return (s.*(&SocketAccess::impl_)).get_implementation(); }
};

// Asio's reactor keeps, for each socket, whether the next operation queued on it may try at once
// (`try_speculative_`: set by every event the reactor takes for it, cleared when an operation says
// it drained the socket). It is private; an explicit instantiation may name a private member (C++
// [temp.spec]/6), which hands a pointer to it to the function below. The alternative Asio offers,
// an operation started without trying at once, costs an epoll_ctl (EPOLL_CTL_MOD) each time.
static_assert(std::is_same_v<asio::detail::reactor, asio::detail::epoll_reactor>, "Linux's epoll reactor");
using DescriptorState = asio::detail::epoll_reactor::descriptor_state;
using TrySpeculative = bool (DescriptorState::*)[asio::detail::epoll_reactor::max_ops];
TrySpeculative try_speculative_member();
template <TrySpeculative Member>
struct TrySpeculativeAccess {
  friend TrySpeculative try_speculative_member() { return Member; }
};
template struct TrySpeculativeAccess<&DescriptorState::try_speculative_>;

// Tells the reactor that `socket` holds nothing to read, as an operation that drained it would:
// the next read operation queued on it waits for the socket's next edge without asking the kernel.
// Only for a socket the caller found empty in this turn of the loop (no event of the reactor's
// since): bytes or an end that come later raise a new edge, which sets the flag again. The socket's
// loop is the calling thread (its reactor's lock is not taken).
void mark_drained(tcp::socket& socket) {
  auto& impl = SocketAccess::implementation(socket);
  if (impl.reactor_data_ != nullptr) {
    (impl.reactor_data_->*try_speculative_member())[asio::detail::reactor::read_op] = false;
  }
}

}  // namespace

void own_descriptor(tcp::socket& socket) {
  SocketAccess::implementation(socket).state_ &=
      static_cast<asio::detail::socket_ops::state_type>(~asio::detail::socket_ops::possible_dup);
}

void await_first_edge(tcp::socket& socket, ReadableWait& wait) {
  wait.drained = true;
  mark_drained(socket);
}

bool receive_at_once(tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait, Received& r,
                     std::size_t max_bytes) {
  if (!socket.is_open()) {
    r = Received{asio::error::bad_descriptor, 0, {}, false};
    return true;
  }
  if (wait.drained) return false;
  if (!read_now(socket.native_handle(), buffer.prepare(max_bytes), r, wait)) {
    wait.found_empty = true;
    return false;
  }
  finish_read(r, buffer, wait);
  return true;
}

EdgeRead receive_on_edge(tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait,
                         std::chrono::steady_clock::duration timeout, std::size_t max_bytes) {
  wait.begin(socket, timeout);
  return EdgeRead(socket, buffer, wait, buffer.prepare(max_bytes));
}

// The read queued on the socket's registration with the loop's reactor (found once per wait).
template <typename Handler>
void EdgeRead::start(Handler&& handler) const {
  using Op = StampedRecvOp<Handler, tcp::socket::executor_type>;
  auto& impl = SocketAccess::implementation(*socket_);
  auto& reactor = wait_->reactor(*socket_);
  const bool continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
  // Right after a read at once that found nothing (this turn of the loop: no event taken since)
  // the reactor's read waits for the next edge. Otherwise the reactor decides: it reads at once
  // unless it saw the socket drained itself, as an event it took while no read was queued (bytes
  // that came after a read at once drained the socket) must not be waited past.
  if (std::exchange(wait_->found_empty, false)) mark_drained(*socket_);
  typename Op::ptr p = {std::addressof(handler), Op::ptr::allocate(handler), nullptr};
  p.p = new (p.v) Op(impl.socket_, space_, *buffer_, *wait_, handler, socket_->get_executor());
  reactor.start_op(asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, p.p, continuation, true);
  p.v = p.p = nullptr;
}

void peek_on_edge(asio::detail::reactor& reactor, tcp::socket& socket, std::shared_ptr<void> owner, PeekDone on_done,
                  bool at_once) {
  auto& impl = SocketAccess::implementation(socket);
  auto* op = new (PeekOp::allocate()) PeekOp(impl.socket_, std::move(owner), on_done);
  if (!at_once) mark_drained(socket);
  reactor.start_op(asio::detail::reactor::read_op, impl.socket_, impl.reactor_data_, op, false, true);
}

// The handler of `co_await receive_on_edge(...)` in an asio::awaitable<> coroutine.
template void EdgeRead::start(asio::detail::awaitable_async_op_handler<void(Received), asio::any_io_executor>&&) const;

asio::awaitable<Received> receive_some(tcp::socket& socket, net::ReadBuffer& buffer, ReadableWait& wait,
                                       std::chrono::steady_clock::duration timeout, std::size_t max_bytes) {
  Received r;
  if (receive_at_once(socket, buffer, wait, r, max_bytes)) co_return r;
  co_return co_await receive_on_edge(socket, buffer, wait, timeout, max_bytes);
}

std::size_t send_now(tcp::socket& socket, std::span<const asio::const_buffer> buffers, boost::system::error_code& ec) {
  constexpr std::size_t kMaxIov = 8;
  iovec iov[kMaxIov];
  std::size_t count = 0;
  for (const auto& b : buffers) {
    if (b.size() == 0) continue;
    if (count == kMaxIov) break;  // the rest goes by the caller's write
    iov[count++] = iovec{const_cast<void*>(b.data()), b.size()};
  }
  if (count == 0) return 0;
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = count;
  for (;;) {
    const ssize_t n = ::sendmsg(socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      ec = boost::system::error_code(errno, asio::error::get_system_category());
    return 0;
  }
}

asio::awaitable<boost::system::error_code> send_rest(boost::beast::tcp_stream& stream,
                                                     std::span<const asio::const_buffer> buffers, std::size_t sent,
                                                     std::chrono::steady_clock::duration timeout) {
  boost::beast::buffers_suffix<std::span<const asio::const_buffer>> rest(buffers);
  rest.consume(sent);
  stream.expires_after(timeout);
  auto [ec, n] = co_await asio::async_write(stream, rest, asio::as_tuple(asio::use_awaitable));
  co_return ec;
}

asio::awaitable<boost::system::error_code> send_all(boost::beast::tcp_stream& stream,
                                                    std::span<const asio::const_buffer> buffers,
                                                    std::chrono::steady_clock::duration timeout) {
  boost::system::error_code ec;
  const std::size_t sent = send_now(stream.socket(), buffers, ec);
  if (ec || sent == asio::buffer_size(buffers)) co_return ec;
  co_return co_await send_rest(stream, buffers, sent, timeout);
}

}  // namespace mpo::proxy
