// The implementation of proxy/socket_io.hpp. A plain TCP socket's reads with the kernel's receive
// timestamp and its writes at once (edge: Asio, recvmsg, sendmsg).
#include "proxy/socket_io.hpp"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/error.hpp>
#include <cstring>
#include <utility>

#include "core/clock.hpp"

namespace mpo::proxy {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

bool enable_rx_timestamps(int fd) {
  const int on = 1;
  return ::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
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
  tcp::socket* socket = nullptr;  // the socket a wait is in progress on, nullptr between waits
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

ReadableWait::~ReadableWait() {
  state_->socket = nullptr;
  state_->timer.cancel();
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

asio::awaitable<boost::system::error_code> ReadableWait::wait(tcp::socket& socket,
                                                              std::chrono::steady_clock::duration timeout) {
  begin(socket, timeout);
  auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
  co_return end(ec);
}

asio::awaitable<Received> receive_some(tcp::socket& socket, boost::beast::flat_buffer& buffer, ReadableWait& wait,
                                       std::chrono::steady_clock::duration timeout, std::size_t max_bytes) {
  Received r;
  // After a short read the socket was drained: wait before asking it again.
  bool wait_first = wait.drained;
  for (;;) {
    if (std::exchange(wait_first, true)) {
      wait.begin(socket, timeout);
      auto [wec] = co_await socket.async_wait(tcp::socket::wait_read, asio::as_tuple(asio::use_awaitable));
      if (auto ec = wait.end(wec)) {
        r.ec = ec;
        co_return r;
      }
    }
    // Asked again after every wait: a socket closed meanwhile (the client watch closes the
    // upstream when the client leaves) must not be read through a descriptor number reused since.
    if (!socket.is_open()) {
      r.ec = asio::error::bad_descriptor;
      co_return r;
    }
    const int fd = socket.native_handle();
    const auto space = buffer.prepare(max_bytes);
    iovec iov{space.data(), space.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_DONTWAIT);
    if (n > 0) {
      timespec now{};
      ::clock_gettime(CLOCK_REALTIME, &now);
      const std::int64_t steady = SystemClock::instance().steady_us();
      std::optional<std::int64_t> rx_ns;
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
          timespec ts{};
          std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
          rx_ns = static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
        }
      }
      buffer.commit(static_cast<std::size_t>(n));
      wait.drained = static_cast<std::size_t>(n) < space.size();
      r.bytes = static_cast<std::size_t>(n);
      r.stamp = stamp_read(rx_ns, static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec, steady);
      co_return r;
    }
    if (n == 0) {
      r.ec = asio::error::eof;
      co_return r;
    }
    if (errno == EINTR) {
      wait_first = false;  // asks again at once
      continue;
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      r.ec = boost::system::error_code(errno, asio::error::get_system_category());
      co_return r;
    }
  }
}

void watch_reads_only(tcp::socket& socket) {
  boost::system::error_code ec;
  const auto endpoint = socket.local_endpoint(ec);
  if (ec) return;
  const int fd = socket.release(ec);
  if (ec) return;
  socket.assign(endpoint.protocol(), fd, ec);
  if (ec) ::close(fd);
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
