// ReadableWait's lazy timeout (issue 43): a wait moves its deadline forward instead of setting and
// cancelling a timer around every read. Over loopback, with Asio timers standing in for a backend.
#include "proxy/receive.hpp"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core/error.hpp>

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

}  // namespace
}  // namespace mpo::proxy
