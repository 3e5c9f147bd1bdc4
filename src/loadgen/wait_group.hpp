// Waiting for a set of coroutines on one Asio thread: add() before each starts, done() as each
// ends, co_await wait() returns when none is left.
#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace mpo::loadgen {

class WaitGroup {
 public:
  explicit WaitGroup(boost::asio::any_io_executor ex) : timer_(ex) {}
  void add() { ++pending_; }
  void done() {
    if (--pending_ == 0) timer_.cancel();
  }
  boost::asio::awaitable<void> wait() {
    while (pending_ > 0) {
      timer_.expires_at(boost::asio::steady_timer::time_point::max());
      co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    }
  }

 private:
  int pending_ = 0;
  boost::asio::steady_timer timer_;
};

}  // namespace mpo::loadgen
