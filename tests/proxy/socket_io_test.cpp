// proxy/socket_io.hpp over loopback (issue 43): ReadableWait's lazy timeout (a wait moves its
// deadline forward instead of setting and cancelling a timer around every read), reads that wait
// first after a short read, writes at once with Asio's write for the rest, and a connected socket
// registered for reads alone. Asio timers stand in for a backend.
#include "proxy/socket_io.hpp"

#include <dirent.h>
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace mpo::proxy {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

struct SocketPair {
  explicit SocketPair(asio::io_context& io) : reader(io), writer(io) {
    tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
    writer.connect(acceptor.local_endpoint());
    reader = acceptor.accept();
  }
  tcp::socket reader, writer;
};

// What `buffer` holds, as text.
std::string text(const boost::beast::flat_buffer& buffer) {
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
    int reads = 0;
    while (std::chrono::steady_clock::now() < until) {
      pace.expires_after(5ms);
      pace.async_wait([&](boost::system::error_code) { asio::write(p.writer, asio::buffer("x", 1)); });
      const auto ec = co_await wait.wait(p.reader, 100ms);
      EXPECT_FALSE(ec) << ec.message() << " after " << reads << " reads";
      char c = 0;
      p.reader.read_some(asio::buffer(&c, 1));
      ++reads;
    }
    EXPECT_GT(reads, 10);
    EXPECT_EQ(co_await wait.wait(p.reader, 50ms), boost::beast::error::timeout);
  }());
}

TEST(ReadableWait, AShorterTimeoutThanTheArmedOneStillTimesOut) {
  // A wait with a long timeout arms the timer far ahead; a later wait with a short one must not
  // wait for that far arming.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    asio::write(p.writer, asio::buffer("x", 1));
    EXPECT_FALSE(co_await wait.wait(p.reader, 3600s));
    char c = 0;
    p.reader.read_some(asio::buffer(&c, 1));
    const auto started = std::chrono::steady_clock::now();
    EXPECT_EQ(co_await wait.wait(p.reader, 30ms), boost::beast::error::timeout);
    EXPECT_LT(std::chrono::steady_clock::now() - started, 3600s);
  }());
}

TEST(ReadableWait, ReceiveSomeStampsWhatItReads) {
  asio::io_context io;
  SocketPair p(io);
  enable_rx_timestamps(p.reader.native_handle());
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    boost::beast::flat_buffer buffer;
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

TEST(ReadableWait, AfterAShortReadTheNextReadWaitsAndSeesBytesThatCameMeanwhile) {
  // A short read marks the socket drained, so the next read waits before asking the kernel. The
  // byte written after the first read is announced to the loop while no wait is in progress (the
  // pause below lets the loop's epoll_wait take that edge first); the wait must still see it.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    boost::beast::flat_buffer buffer;
    asio::write(p.writer, asio::buffer("a", 1));
    auto first = co_await receive_some(p.reader, buffer, wait, 1s);
    EXPECT_FALSE(first.ec);
    EXPECT_EQ(first.bytes, 1u);
    EXPECT_TRUE(wait.drained);
    asio::write(p.writer, asio::buffer("b", 1));
    asio::steady_timer pause(co_await asio::this_coro::executor, 20ms);
    co_await pause.async_wait(asio::use_awaitable);
    auto second = co_await receive_some(p.reader, buffer, wait, 2s);
    EXPECT_FALSE(second.ec) << second.ec.message();
    EXPECT_EQ(text(buffer), "ab");
  }());
}

TEST(ReadableWait, AReadThatFillsItsRoomReadsAgainAtOnce) {
  // 10 bytes with room for 4: not drained, so the next read asks the kernel at once.
  asio::io_context io;
  SocketPair p(io);
  run(io, [&]() -> asio::awaitable<void> {
    ReadableWait wait(co_await asio::this_coro::executor);
    boost::beast::flat_buffer buffer;
    asio::write(p.writer, asio::buffer("0123456789", 10));
    std::size_t got = 0;
    while (got < 10) {
      auto r = co_await receive_some(p.reader, buffer, wait, 1s, 4);
      EXPECT_FALSE(r.ec);
      got += r.bytes;
      EXPECT_EQ(wait.drained, r.bytes < 4);
    }
    EXPECT_EQ(text(buffer), "0123456789");
  }());
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

// The events the process's epoll instances watch `fd` for (from /proc/self/fdinfo), or -1.
long epoll_events_of(int fd) {
  DIR* d = ::opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  long events = -1;
  while (const dirent* e = ::readdir(d)) {
    std::ifstream info(std::string("/proc/self/fdinfo/") + e->d_name);
    std::string line;
    while (std::getline(info, line)) {
      std::istringstream words(line);
      std::string tag, tfd, ev;
      int target = -1;
      std::string hex;
      if (words >> tag >> target >> ev >> hex && tag == "tfd:" && target == fd && ev == "events:")
        events = std::stol(hex, nullptr, 16);
    }
  }
  ::closedir(d);
  return events;
}

TEST(WatchReadsOnly, AConnectedSocketIsWatchedForReadsAloneAndStillWorks) {
  // Asio's connect leaves the socket registered for writability, which every later read wait
  // re-arms: an empty wake-up each time. After watch_reads_only the registration has EPOLLIN and
  // not EPOLLOUT, and the socket reads and writes as before.
  asio::io_context io;
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  tcp::socket server(io);
  run(io, [&]() -> asio::awaitable<void> {
    tcp::socket client(co_await asio::this_coro::executor);
    co_await client.async_connect(acceptor.local_endpoint(), asio::use_awaitable);
    server = acceptor.accept();
    constexpr long kIn = 0x001, kOut = 0x004;
    EXPECT_EQ(epoll_events_of(client.native_handle()) & kOut, kOut) << "Asio's connect no longer registers EPOLLOUT";
    watch_reads_only(client);
    EXPECT_TRUE(client.is_open());
    const long events = epoll_events_of(client.native_handle());
    EXPECT_EQ(events & kIn, kIn);
    EXPECT_EQ(events & kOut, 0);
    ReadableWait wait(co_await asio::this_coro::executor);
    boost::beast::flat_buffer buffer;
    asio::write(server, asio::buffer("ping", 4));
    auto r = co_await receive_some(client, buffer, wait, 1s);
    EXPECT_FALSE(r.ec);
    EXPECT_EQ(r.bytes, 4u);
    co_await asio::async_write(client, asio::buffer("pong", 4), asio::use_awaitable);
    char back[4];
    asio::read(server, asio::buffer(back));
    EXPECT_EQ(std::string(back, 4), "pong");
  }());
}

}  // namespace
}  // namespace mpo::proxy
