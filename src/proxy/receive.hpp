// Reads from a plain TCP socket with the kernel's receive timestamp (edge: Asio, recvmsg). The
// proxy's upstream reads and the first read of each client request come through here, so every
// piece of a response, and the request's arrival, carry the time its bytes reached the socket
// (proxy/timing.hpp), not the time the event loop got round to them.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

#include "proxy/timing.hpp"

namespace mpo::proxy {

// Asks the kernel for software receive timestamps on `fd` (SO_TIMESTAMPNS). Sockets accepted from
// a listener that has it inherit it. false when refused (reads then stand on the loop basis).
bool enable_rx_timestamps(int fd);

// Waits for a socket to become readable, at most a timeout. One per socket; reused by every wait,
// so a wait costs no allocation once the loop's handler memory is warm.
class ReadableWait {
 public:
  explicit ReadableWait(const boost::asio::any_io_executor& ex);
  ~ReadableWait();
  ReadableWait(const ReadableWait&) = delete;
  ReadableWait& operator=(const ReadableWait&) = delete;
  // {} when readable (or closed: the read tells), beast::error::timeout when `timeout` passed
  // first, operation_aborted when the socket was cancelled or closed meanwhile.
  boost::asio::awaitable<boost::system::error_code> wait(boost::asio::ip::tcp::socket& socket,
                                                         std::chrono::steady_clock::duration timeout);

  struct State;  // receive.cpp's (public for its timer's handler there)

 private:
  std::shared_ptr<State> state_;
};

struct Received {
  boost::system::error_code ec;  // asio::error::eof when the peer closed
  std::size_t bytes = 0;
  RxStamp stamp;
};

// One read of up to `max_bytes` appended to `buffer`, waiting for data as needed (at most
// `timeout` for each wait), stamped with the kernel's receive time of the bytes read (the last
// segment's, when several were queued) or, without one, the loop's clock.
boost::asio::awaitable<Received> receive_some(boost::asio::ip::tcp::socket& socket, boost::beast::flat_buffer& buffer,
                                              ReadableWait& wait, std::chrono::steady_clock::duration timeout,
                                              std::size_t max_bytes = 16 * 1024);

}  // namespace mpo::proxy
