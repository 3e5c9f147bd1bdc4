// proxy/socket_io.hpp over loopback (issue 43): ReadableWait's lazy timeout (a wait moves its
// deadline forward instead of setting and cancelling a timer around every read), reads that wait
// on the reactor's registration after the kernel said the socket was drained (and only then),
// and writes at once with Asio's write for the rest. Asio timers stand in for a backend.
#include "proxy/socket_io.hpp"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <string>
#include <thread>

namespace mpo::proxy {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

// Asio's epoll_reactor is compiled into this test: this definition takes the place of libc's for
// it, and counts the re-registrations (EPOLL_CTL_MOD) of one descriptor.
std::atomic<int> g_counted_fd{-1};
std::atomic<int> g_mods{0};
std::atomic<int> g_dels{0};
// The same for the reads of one descriptor that found nothing (recvmsg's EAGAIN): the proxy's
// reads, socket_io.cpp's, are compiled into this test too.
std::atomic<int> g_reads_in_vain{0};

}  // namespace
}  // namespace mpo::proxy

extern "C" int epoll_ctl(int epfd, int op, int fd, struct epoll_event* event) noexcept {
  if (op == EPOLL_CTL_MOD && fd == mpo::proxy::g_counted_fd.load()) ++mpo::proxy::g_mods;
  if (op == EPOLL_CTL_DEL && fd == mpo::proxy::g_counted_fd.load()) ++mpo::proxy::g_dels;
  return static_cast<int>(::syscall(SYS_epoll_ctl, epfd, op, fd, event));
}

extern "C" ssize_t recvmsg(int fd, struct msghdr* msg, int flags) {
  const auto n = static_cast<ssize_t>(::syscall(SYS_recvmsg, fd, msg, flags));
  if (n < 0 && errno == EAGAIN && fd == mpo::proxy::g_counted_fd.load()) ++mpo::proxy::g_reads_in_vain;
  return n;
}

namespace mpo::proxy {
namespace {

// Reader: accepted from a listener with the kernel's queue hints (as the proxy's listener).
struct SocketPair {
  explicit SocketPair(asio::io_context& io) : reader(io), writer(io) {
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    EXPECT_TRUE(enable_queue_hints(acceptor.native_handle()));
    writer.connect(acceptor.local_endpoint());
    reader = acceptor.accept();
  }
  tcp::socket reader, writer;
};

// SO_TIMESTAMPNS turns the kernel's receive timestamps on for the whole machine through a switch it
// flips later, from a work queue (net_enable_timestamp): bytes that arrive right after the first
// socket asks can come unstamped, and the switch goes off again when the last such socket closes.
// A test that needs a stamped read calls this first: a pair kept open for the test program's life,
// with timestamps on, written and read until a read comes stamped (at most 2 s; false if never).
bool kernel_stamps_on() {
  static asio::io_context io;
  static SocketPair keep(io);
  static const bool on = [] {
    EXPECT_TRUE(enable_rx_timestamps(keep.reader.native_handle()));
    ReadableWait wait(io.get_executor());
    net::ReadBuffer buffer;
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (std::chrono::steady_clock::now() < until) {
      asio::write(keep.writer, asio::buffer("s", 1));
      Received r;
      wait.drained = false;
      if (receive_at_once(keep.reader, buffer, wait, r) && !r.ec && r.stamp.kernel) return true;
      buffer.consume(buffer.size());
    }
    return false;
  }();
  return on;
}

// A byte sent, then the loop's own thread held for `held` (as when it is descheduled or its machine
// pauses): the byte waits that long before any read of it, not a wait for readiness.
void send_then_hold(tcp::socket& writer, std::chrono::milliseconds held) {
  asio::write(writer, asio::buffer("x", 1));
  std::this_thread::sleep_for(held);
}

// What `buffer` holds, as text.
std::string text(const net::ReadBuffer& buffer) {
  return {static_cast<const char*>(buffer.data().data()), buffer.size()};
}

// Runs `body` as the loop's coroutine to its end.
void run(asio::io_context& io, asio::awaitable<void> body) {
  bool done = false;
  asio::co_spawn(io, std::move(body), [&](std::exception_ptr e) {
    done = true;
    if (e) std::rethrow_exception(e);
  });
  io.run();
  EXPECT_TRUE(done);
}

// Writes a byte and reads it: a read that drains the socket, as the kernel's queue hint says.
asio::awaitable<void> read_a_byte_that_drains(SocketPair& p, net::ReadBuffer& buffer, ReadableWait& wait) {
  asio::write(p.writer, asio::buffer("a", 1));
  const auto r = co_await receive_some(p.reader, buffer, wait, 2s);
  EXPECT_FALSE(r.ec) << r.ec.message();
  EXPECT_EQ(r.bytes, 1u);
  EXPECT_TRUE(wait.drained) << "the kernel's queue hint did not come";
}

TEST(ReadableWait, ASteadyTrickleNeverTimesOutAndSilenceAfterItDoes) {
  // A byte every 5 ms for 400 ms, each wait allowed 100 ms: the timer armed by the first wait fires
  // while later waits are in progress and must find their deadlines moved on, never a timeout.
  // Then silence: the next wait times out.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    asio::steady_timer pace(co_await asio::this_coro::executor);
    const auto until = std::chrono::steady_clock::now() + 400ms;
    net::ReadBuffer buffer;
    int reads = 0;
    while (std::chrono::steady_clock::now() < until) {
      pace.expires_after(5ms);
      pace.async_wait([&](boost::system::error_code) { asio::write(p.writer, asio::buffer("x", 1)); });
      const auto r = co_await receive_some(p.reader, buffer, wait, 100ms);
      EXPECT_FALSE(r.ec) << r.ec.message() << " after " << reads << " reads";
      ++reads;
    }
    EXPECT_GT(reads, 10);
    EXPECT_EQ((co_await receive_some(p.reader, buffer, wait, 50ms)).ec, boost::beast::error::timeout);
  }());
}

TEST(ReadableWait, AShorterTimeoutThanTheArmedOneStillTimesOut) {
  // A wait with a long timeout arms the timer far ahead; a later wait with a short one must not
  // wait for that far arming.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    asio::write(p.writer, asio::buffer("x", 1));
    EXPECT_FALSE((co_await receive_some(p.reader, buffer, wait, 3600s)).ec);
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ((co_await receive_some(p.reader, buffer, wait, 30ms)).ec, boost::beast::error::timeout);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 3600s);
  }());
}

TEST(ReadableWait, BytesReadAtOnceAfterAWaitThatTimedOutAreNoTimeout) {
  // The first read finds nothing and waits on the socket's edge until it times out; bytes written
  // after that are read at once (receive_at_once: no wait begun), and that read is no timeout.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    EXPECT_EQ((co_await receive_some(p.reader, buffer, wait, 20ms)).ec, boost::beast::error::timeout);
    EXPECT_FALSE(wait.drained);
    asio::write(p.writer, asio::buffer("late", 4));
    Received r;
    if (!receive_at_once(p.reader, buffer, wait, r)) r = co_await receive_on_edge(p.reader, buffer, wait, 1s);
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(text(buffer), "late");
  }());
}

TEST(ReadableWait, ReceiveSomeStampsWhatItReads) {
  asio::io_context io;
  SocketPair p(io);
  enable_rx_timestamps(p.reader.native_handle());
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    asio::write(p.writer, asio::buffer("hello", 5));
    const auto r = co_await receive_some(p.reader, buffer, wait, 1s);
    EXPECT_FALSE(r.ec);
    EXPECT_EQ(r.bytes, 5u);
    EXPECT_EQ(buffer.size(), 5u);
    p.writer.close();
    const auto end = co_await receive_some(p.reader, buffer, wait, 1s);
    EXPECT_EQ(end.ec, asio::error::eof);
  }());
}

// A late read says how its loop spent the wait (RxStamp::quiet_us, the ledger's
// proxy_lag_quiet_ms). Held up: the loop thread does nothing for 6 ms while a byte waits (as when it
// is descheduled or its machine pauses): no read at all in that time, so the quiet stretch is
// nearly the whole lag.
TEST(LoopReads, ALateReadAfterTheLoopWasHeldUpWasQuietForMostOfItsWait) {
  ASSERT_TRUE(kernel_stamps_on()) << "the kernel gave no receive timestamp in 2 s";
  asio::io_context io;
  SocketPair p(io);
  enable_rx_timestamps(p.reader.native_handle());
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    send_then_hold(p.writer, 6ms);
    const auto r = co_await receive_some(p.reader, buffer, wait, 1s);
    EXPECT_FALSE(r.ec);
    EXPECT_TRUE(r.stamp.kernel);
    EXPECT_GE(r.stamp.lag_us, 6000);
    EXPECT_GE(r.stamp.quiet_us, 0.9 * r.stamp.lag_us) << "lag " << r.stamp.lag_us;
  }());
}

// A read is asked how its wait was spent only from the lag its caller names (its line's largest so
// far: a read no later cannot become the line's, issue 43); below it, however late, it is not.
TEST(LoopReads, ALateReadBelowItsCallersThresholdIsNotAskedHowItsWaitWasSpent) {
  ASSERT_TRUE(kernel_stamps_on()) << "the kernel gave no receive timestamp in 2 s";
  asio::io_context io;
  SocketPair p(io);
  enable_rx_timestamps(p.reader.native_handle());
  ReadableWait wait(io.get_executor());
  net::ReadBuffer buffer;
  send_then_hold(p.writer, 3ms);
  Received r;
  wait.quiet_from_us = 60'000'000.0;
  EXPECT_TRUE(receive_at_once(p.reader, buffer, wait, r));
  EXPECT_TRUE(r.stamp.kernel);
  EXPECT_GE(r.stamp.lag_us, 3000);
  EXPECT_LT(r.stamp.quiet_us, 0) << "asked below the threshold";
  EXPECT_EQ(wait.quiet_from_us, kQuietFromUs) << "the threshold was for that read only";
  send_then_hold(p.writer, 3ms);
  wait.drained = false;  // the first read drained the socket; a byte is there again
  Received again;
  wait.quiet_from_us = 2000.0;
  EXPECT_TRUE(receive_at_once(p.reader, buffer, wait, again));
  EXPECT_GE(again.stamp.lag_us, 3000);
  EXPECT_GE(again.stamp.quiet_us, 0) << "not asked at or over the threshold";
}

// Busy: while the byte waits the loop reads another socket over and over for 20 ms (a backlog of
// traffic): its longest quiet stretch is a small part of the wait. A pause of this machine (a
// virtual machine's host stops it for 3-18 ms at times) inside those 20 ms would make a long quiet
// stretch for real: up to three tries.
TEST(LoopReads, ALateReadAfterTheLoopWasBusyReadingWasQuietForLittleOfItsWait) {
  ASSERT_TRUE(kernel_stamps_on()) << "the kernel gave no receive timestamp in 2 s";
  asio::io_context io;
  SocketPair late(io), other(io);
  enable_rx_timestamps(late.reader.native_handle());
  double lag_us = 0, quiet_us = -1;
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait late_wait(co_await asio::this_coro::executor), other_wait(co_await asio::this_coro::executor);
    net::ReadBuffer late_buffer, other_buffer;
    for (int attempt = 0; attempt < 3; ++attempt) {
      asio::write(late.writer, asio::buffer("x", 1));
      const auto until = std::chrono::steady_clock::now() + 20ms;
      int reads = 0;
      while (std::chrono::steady_clock::now() < until) {
        asio::write(other.writer, asio::buffer("y", 1));
        const auto r = co_await receive_some(other.reader, other_buffer, other_wait, 1s);
        if (r.ec) break;
        other_buffer.consume(other_buffer.size());
        ++reads;
      }
      EXPECT_GT(reads, 20);
      const auto r = co_await receive_some(late.reader, late_buffer, late_wait, 1s);
      late_buffer.consume(late_buffer.size());
      if (r.ec || !r.stamp.kernel) break;
      lag_us = r.stamp.lag_us;
      quiet_us = r.stamp.quiet_us;
      if (quiet_us >= 0 && quiet_us < 0.5 * lag_us) break;
    }
  }());
  EXPECT_GE(lag_us, 20000);
  EXPECT_GE(quiet_us, 0) << "a read late by 1 ms or more is measured";
  EXPECT_LT(quiet_us, 0.5 * lag_us) << "lag " << lag_us;
}

TEST(ReadableWait, AfterAReadThatDrainsTheSocketTheNextWaitsAndSeesBytesThatCameMeanwhile) {
  // A read that drains the socket (the kernel says nothing is queued) makes the next read wait for
  // an edge before asking the kernel. The byte written after the first read is announced to the
  // loop while no read is queued (the pause below lets the loop's epoll_wait take that edge first);
  // the next read must still see it.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    co_await read_a_byte_that_drains(p, buffer, wait);
    asio::write(p.writer, asio::buffer("b", 1));
    asio::steady_timer pause(co_await asio::this_coro::executor, 20ms);
    co_await pause.async_wait(asio::use_awaitable);
    auto second = co_await receive_some(p.reader, buffer, wait, 2s);
    EXPECT_FALSE(second.ec) << second.ec.message();
    EXPECT_EQ(text(buffer), "ab");
  }());
}

TEST(ReadableWait, AnAcceptedSocketInheritsTheListenersQueueHints) {
  asio::io_context io;
  SocketPair p(io);
  int on = 0;
  socklen_t len = sizeof on;
  ASSERT_EQ(::getsockopt(p.reader.native_handle(), SOL_TCP, TCP_INQ, &on, &len), 0);
  EXPECT_EQ(on, 1);
}

TEST(ReadableWait, TheLastBytesAndThePeersEndQueuedTogetherAreReadToTheEnd) {
  // A backend that writes its last bytes and closes while the proxy's read waits: both come on
  // one edge, and the read that edge wakes is short. The peer's end is still queued behind it, so
  // the next read must find the end at once, not wait for an edge that has passed (a stream cut by
  // its backend waited for the client's timeout).
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    co_await read_a_byte_that_drains(p, buffer, wait);
    asio::steady_timer later(co_await asio::this_coro::executor, 5ms);
    later.async_wait([&](boost::system::error_code) {
      asio::write(p.writer, asio::buffer("last", 4));
      p.writer.close();
    });
    auto last = co_await receive_some(p.reader, buffer, wait, 2s);
    EXPECT_FALSE(last.ec) << last.ec.message();
    EXPECT_EQ(last.bytes, 4u);
    EXPECT_FALSE(wait.drained);
    auto end = co_await receive_some(p.reader, buffer, wait, 2s);
    EXPECT_EQ(end.ec, asio::error::eof) << end.ec.message();
  }());
}

TEST(ReadableWait, ReadsThatWaitLeaveTheSocketsRegistrationAsItIs) {
  // Twenty reads, each of a byte written after it started waiting: none re-registers the socket
  // with epoll (a readiness wait, Asio's async_wait, did: one epoll_ctl a wait, issue 43).
  asio::io_context io;
  SocketPair p(io);
  g_counted_fd = p.reader.native_handle();
  g_mods = 0;
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    asio::steady_timer pace(co_await asio::this_coro::executor);
    for (int i = 0; i < 20; ++i) {
      pace.expires_after(1ms);
      pace.async_wait([&](boost::system::error_code) { asio::write(p.writer, asio::buffer("x", 1)); });
      auto r = co_await receive_some(p.reader, buffer, wait, 2s);
      EXPECT_FALSE(r.ec) << r.ec.message();
    }
    EXPECT_EQ(buffer.size(), 20u);
  }());
  g_counted_fd = -1;
  EXPECT_EQ(g_mods.load(), 0);
}

TEST(ReadableWait, AReadThatFillsItsRoomReadsAgainAtOnce) {
  // 10 bytes with room for 4: reads that fill their room leave the socket undrained, and the next
  // read asks the kernel at once (the last, short, one drains it).
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    asio::write(p.writer, asio::buffer("0123456789", 10));
    std::size_t got = 0;
    while (got < 10) {
      auto r = co_await receive_some(p.reader, buffer, wait, 1s, 4);
      EXPECT_FALSE(r.ec);
      got += r.bytes;
      EXPECT_LE(r.bytes, 4u);
      EXPECT_EQ(wait.drained, got == 10);
    }
    EXPECT_EQ(text(buffer), "0123456789");
  }());
}

TEST(AwaitFirstEdge, AFirstReadAsksTheKernelOnlyOnceItsBytesCame) {
  // A connection accepted before its request comes: without await_first_edge the read asked the
  // kernel at once in vain, and so did Asio's reactor for the socket's first operation (one failed
  // recvmsg a new connection, issue 43). The byte comes 5 ms after the read began to wait.
  asio::io_context io;
  SocketPair p(io);
  g_counted_fd = p.reader.native_handle();
  g_reads_in_vain = 0;
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    await_first_edge(p.reader, wait);
    asio::steady_timer later(co_await asio::this_coro::executor, 5ms);
    later.async_wait([&](boost::system::error_code) { asio::write(p.writer, asio::buffer("GET", 3)); });
    const auto r = co_await receive_some(p.reader, buffer, wait, 2s);
    EXPECT_FALSE(r.ec) << r.ec.message();
    EXPECT_EQ(text(buffer), "GET");
  }());
  g_counted_fd = -1;
  EXPECT_EQ(g_reads_in_vain.load(), 0);
}

TEST(AwaitFirstEdge, BytesQueuedBeforeTheSocketWasRegisteredAreRead) {
  // The request came before the accept (the usual case under light load): the socket is ready when
  // the accept adds it to epoll, which reports it; the read waits for that report, not past it.
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket writer(io);
  writer.connect(acceptor.local_endpoint());
  asio::write(writer, asio::buffer("POST", 4));
  tcp::socket reader = acceptor.accept();
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    net::ReadBuffer buffer;
    await_first_edge(reader, wait);
    const auto r = co_await receive_some(reader, buffer, wait, 2s);
    EXPECT_FALSE(r.ec) << r.ec.message() << " (a timeout: the bytes there were waited past)";
    EXPECT_EQ(text(buffer), "POST");
  }());
}

TEST(OwnDescriptor, AnAcceptedSocketThatOwnsItsDescriptorClosesWithoutDeregistering) {
  // Closing removes a descriptor nobody shares from epoll: Asio's close skips its EPOLL_CTL_DEL
  // for it, as for a socket it opened itself (one system call a connection, issue 43). Reads after
  // it still work, and a socket that does not say so still deregisters.
  asio::io_context io;
  for (const bool owned : {true, false}) {
    SocketPair p(io);
    if (owned) own_descriptor(p.reader);
    g_counted_fd = p.reader.native_handle();
    g_dels = 0;
    run(io, [&]() -> asio::awaitable<void> {
      ReadableWait wait(co_await asio::this_coro::executor);
      net::ReadBuffer buffer;
      co_await read_a_byte_that_drains(p, buffer, wait);
      asio::write(p.writer, asio::buffer("b", 1));
      const auto r = co_await receive_some(p.reader, buffer, wait, 2s);
      EXPECT_FALSE(r.ec) << r.ec.message();
      EXPECT_EQ(text(buffer), "ab");
    }());
    io.restart();
    p.reader.close();
    g_counted_fd = -1;
    EXPECT_EQ(g_dels.load(), owned ? 0 : 1) << (owned ? "owned" : "not owned");
  }
}

TEST(SendAll, WritesAtOnceWhenTheSocketTakesItAndWaitsForASlowReaderOtherwise) {
  // 8 MiB, more than loopback's socket buffers hold: send_now takes what they hold, Asio's write
  // the rest as the peer (a thread of its own) reads. Every byte arrives, in order.
  asio::io_context io;
  SocketPair p(io);
  std::string big(8u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  std::string received;
  tcp::socket reader = std::move(p.reader);
  std::thread slow([&] {
    boost::system::error_code ec;
    char chunk[65536];
    while (received.size() < big.size()) {
      const std::size_t n = reader.read_some(asio::buffer(chunk), ec);
      if (ec) break;
      received.append(chunk, n);
    }
  });
  run(io, [&]() -> asio::awaitable<void> {
    boost::beast::tcp_stream stream(std::move(p.writer));
    const asio::const_buffer halves[] = {asio::buffer(big.data(), 1000),
                                         asio::buffer(big.data() + 1000, big.size() - 1000)};
    const auto ec = co_await send_all(stream, halves, 10s);
    EXPECT_FALSE(ec) << ec.message();
    stream.socket().shutdown(tcp::socket::shutdown_send);
  }());
  slow.join();
  EXPECT_EQ(received.size(), big.size());
  EXPECT_TRUE(received == big);
}

TEST(SendAll, APeerThatClosedIsAnErrorNotASignal) {
  asio::io_context io;
  SocketPair p(io);
  p.reader.close();
  run(io, [&]() -> asio::awaitable<void> {
    boost::beast::tcp_stream stream(std::move(p.writer));
    const std::string bytes(4096, 'x');
    boost::system::error_code ec;
    // The first write may still be taken (the peer's reset comes back with it); a later one fails.
    for (int i = 0; i < 50 && !ec; ++i) {
      const asio::const_buffer b = asio::buffer(bytes);
      ec = co_await send_all(stream, {&b, 1}, 1s);
    }
    EXPECT_TRUE(ec == asio::error::broken_pipe || ec == asio::error::connection_reset) << ec.message();
  }());
}

}  // namespace
}  // namespace mpo::proxy
