// proxy/client_kits.hpp over loopback (issue 43): a client connection's Beast stream and read
// timeout go back to their loop when the connection ends (closed: the client sees the end), come
// out again for the next connection as a new kit's (no stale timeout, no stale read flags), and
// are freed with their loop.
#include "proxy/client_kits.hpp"

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <string>
#include <vector>

namespace mpo::proxy {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

TEST(ClientKits, AKitGoesBackClosedAndServesTheNextConnectionAsANewOne) {
  asio::io_context io;
  auto& kits = asio::use_service<ClientKits>(io);
  tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});

  tcp::socket first_client(io);
  first_client.connect(acceptor.local_endpoint());
  ClientKits::Lease kit = kits.take(io);
  const ClientKit* const first = kit.get();
  acceptor.accept(kit->stream.socket());
  // What the first connection leaves behind: a timeout long past, a wait that found its socket
  // drained.
  kit->stream.expires_after(1ms);
  kit->wait.drained = true;
  kit->wait.found_empty = true;
  kit->wait.quiet_from_us = 5000;
  kit.reset();
  EXPECT_EQ(kits.kept_now(), 1u);
  char byte = 0;
  boost::system::error_code ec;
  first_client.non_blocking(true);  // loopback: the FIN is there as soon as the kit closed its end
  EXPECT_EQ(first_client.read_some(asio::buffer(&byte, 1), ec), 0u);
  EXPECT_EQ(ec, asio::error::eof) << "the kit went back with its socket open: " << ec.message();

  kit = kits.take(io);
  EXPECT_EQ(kit.get(), first) << "a new kit was made while one was kept";
  EXPECT_EQ(kits.kept_now(), 0u);
  EXPECT_FALSE(kit->stream.socket().is_open());
  EXPECT_FALSE(kit->wait.drained);
  EXPECT_FALSE(kit->wait.found_empty);
  EXPECT_EQ(kit->wait.quiet_from_us, kQuietFromUs);

  // The next connection, accepted into the same stream: a read with no timeout of its own waits for
  // the client's bytes (sent 50 ms later) instead of timing out on the first connection's.
  tcp::socket second_client(io);
  second_client.connect(acceptor.local_endpoint());
  acceptor.accept(kit->stream.socket());
  std::string got(2, '\0');
  boost::system::error_code read_ec = asio::error::would_block;
  kit->stream.async_read_some(asio::buffer(got), [&](boost::system::error_code e, std::size_t n) {
    read_ec = e;
    got.resize(n);
  });
  asio::steady_timer later(io, 50ms);
  later.async_wait([&](boost::system::error_code) { asio::write(second_client, asio::buffer("hi", 2)); });
  io.run();
  EXPECT_FALSE(read_ec) << read_ec.message();
  EXPECT_EQ(got, "hi");
}

TEST(ClientKits, ALoopKeepsAtMostItsShareOfIdleKits) {
  asio::io_context io;
  auto& kits = asio::use_service<ClientKits>(io);
  std::vector<ClientKits::Lease> leases;
  for (std::size_t i = 0; i < ClientKits::kKeep + 5; ++i) leases.push_back(kits.take(io));
  leases.clear();
  EXPECT_EQ(kits.kept_now(), ClientKits::kKeep);
}

TEST(ClientKits, SessionsDestroyedWithTheirLoopFreeTheirKits) {
  // A session's frame that holds a kit is destroyed with the io_context (the proxy's exit): the
  // kit is freed while the io_context's services are shutting down, after the pool stopped keeping
  // kits (under AddressSanitizer a kit kept past its timer service, or a pool gone before its
  // leases, is a use after free).
  auto io = std::make_unique<asio::io_context>();
  auto& kits = asio::use_service<ClientKits>(*io);
  kits.take(*io).reset();  // one kept when the loop goes
  bool started = false;
  asio::co_spawn(
      *io,
      [&]() -> asio::awaitable<void> {
        ClientKits::Lease kit = kits.take(*io);
        started = true;
        asio::steady_timer never(co_await asio::this_coro::executor, 1h);
        co_await never.async_wait(asio::use_awaitable);
      },
      asio::detached);
  io->poll();
  EXPECT_TRUE(started);
  io.reset();
}

}  // namespace
}  // namespace mpo::proxy
