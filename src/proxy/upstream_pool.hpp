// The proxy's connections to its backend (edge: Asio/Beast): fresh ones from net::Client, with
// kernel receive timestamps on plain connections, and the keep-alive pool whose rules live in
// upstream_policy.hpp (how long a connection may wait, what the backend is learned to close).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "net/client.hpp"
#include "proxy/socket_io.hpp"
#include "proxy/upstream_policy.hpp"

namespace mpo::proxy {

// One connection to the backend (net::Connection: plain or TLS) and what the pool knows of it.
struct Upstream {
  std::shared_ptr<net::Connection> conn;
  std::unique_ptr<ReadableWait> wait;  // plain connections: reads with kernel receive timestamps
  std::chrono::steady_clock::time_point idle_since;
  double idle_limit_s = 0;    // how long it may wait in the pool (the backend's Keep-Alive timeout)
  bool after_stream = false;  // its last response was an event stream
  // A plain connection in the pool is watched by a peek of Asio's reactor, which waits on the
  // socket's edge-triggered registration without a system call (issue 43: a peek of each pooled
  // connection on its way out was one recvfrom a request). Any end of the peek but its
  // cancellation (a byte nobody asked for, the backend's end, an error) makes it unusable, and
  // closes it then: a connection the backend closed is not held open (CLOSE_WAIT) until the pool
  // reaches it.
  std::uint64_t idle_watch = 0;   // the number of the latest watch; 0 when none was started
  bool idle_watch_ended = false;  // the latest watch ended: the connection is unusable
  boost::beast::tcp_stream& tcp() { return conn->tcp(); }
  net::ReadBuffer& buffer() { return conn->buffer(); }
};

// Connections wait newest last and are taken from there (the hot ones stay hot); those left idle
// past their limit are closed when it passes (a timer at the oldest one's limit), not when a
// request would have reached them: after a burst of 1,000 at once a steady 64 never reaches the
// rest, which stayed open for good (issue 43's 49th session).
class UpstreamPool {
 public:
  // `kernel_timestamps`: plain connections read with the kernel's receive timestamps.
  UpstreamPool(net::Client& client, const boost::asio::any_io_executor& ex, double connect_timeout_s,
               double pool_idle_s, bool kernel_timestamps)
      : client_(client),
        connect_timeout_s_(connect_timeout_s),
        pool_idle_s_(pool_idle_s),
        kernel_timestamps_(kernel_timestamps),
        retire_timer_(ex) {}

  // A pooled connection still open and within its idle limit, or nullptr.
  std::shared_ptr<Upstream> take();
  // A fresh connection, or the connect error.
  boost::asio::awaitable<std::pair<std::shared_ptr<Upstream>, boost::system::error_code>> connect();
  // After a complete response the backend offered to keep open: pooled for as long as its
  // Keep-Alive header allows, unless it takes no more requests or is known to close after this
  // kind of response.
  void give_back(std::shared_ptr<Upstream> u, const KeepAliveHint& hint, bool after_stream);
  CloseAfterResponseLearner& learner() { return learner_; }

 private:
  // Closes the oldest connections while they are past their limit or their watch has ended.
  void retire_oldest();
  // Sets the timer for the oldest connection's limit (none when the pool is empty).
  void arm_retire_timer();

  net::Client& client_;
  double connect_timeout_s_, pool_idle_s_;
  bool kernel_timestamps_;
  std::deque<std::shared_ptr<Upstream>> idle_;
  CloseAfterResponseLearner learner_;
  boost::asio::steady_timer retire_timer_;
  bool retire_armed_ = false;
  // Outlives no handler that reads the pool: the timer's handler holds it weakly.
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

// How a read or write on an upstream connection failed, in the retry rule's words.
UpstreamFailure failure_of(const boost::system::error_code& ec);

}  // namespace mpo::proxy
