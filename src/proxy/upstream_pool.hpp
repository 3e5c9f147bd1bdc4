// The proxy's connections to its backend (edge: Asio/Beast): fresh ones from net::Client, with
// kernel receive timestamps on plain connections, and the keep-alive pool whose rules live in
// upstream_policy.hpp (how long a connection may wait, what the backend is learned to close).
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <cstdint>
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
  // cancellation (a byte nobody asked for, the backend's end, an error) makes it unusable.
  std::uint64_t idle_watch = 0;   // the number of the latest watch; 0 when none was started
  bool idle_watch_ended = false;  // the latest watch ended: the connection is unusable
  boost::beast::tcp_stream& tcp() { return conn->tcp(); }
  net::ReadBuffer& buffer() { return conn->buffer(); }
};

class UpstreamPool {
 public:
  // `kernel_timestamps`: plain connections read with the kernel's receive timestamps.
  UpstreamPool(net::Client& client, double connect_timeout_s, double pool_idle_s, bool kernel_timestamps)
      : client_(client),
        connect_timeout_s_(connect_timeout_s),
        pool_idle_s_(pool_idle_s),
        kernel_timestamps_(kernel_timestamps) {}

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
  net::Client& client_;
  double connect_timeout_s_, pool_idle_s_;
  bool kernel_timestamps_;
  std::vector<std::shared_ptr<Upstream>> idle_;
  CloseAfterResponseLearner learner_;
};

// How a read or write on an upstream connection failed, in the retry rule's words.
UpstreamFailure failure_of(const boost::system::error_code& ec);

}  // namespace mpo::proxy
