// What a client connection needs beyond its descriptor (its Beast stream, with the stream's three
// timers, and its reads' timeout) kept by the connection's loop for its next connection (issue 43).
// Made new for each connection they cost ~2k instructions a connection (an allocation each, a
// lookup of the timer service under the service registry's mutex for every timer, their release);
// nginx keeps its connection structures the same way. The next connection is accepted straight
// into a kept stream's socket.
//
// The kits live as long as the loop's io_context, not the Proxy: a session's coroutine frame (and
// the lease in it) can outlive the Proxy, destroyed with the io_context at exit. The pool is an Asio
// service of that io_context for this reason: it stops keeping kits when the io_context shuts
// down, before the io_context's other services go.
#pragma once

#include <boost/asio/execution_context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <cstddef>
#include <memory>
#include <vector>

#include "proxy/socket_io.hpp"

namespace mpo::proxy {

struct ClientKit {
  explicit ClientKit(const boost::asio::any_io_executor& ex) : stream(ex), wait(ex) {}
  boost::beast::tcp_stream stream;  // its socket closed while the kit is kept
  ReadableWait wait;
};

class ClientKits : public boost::asio::execution_context::service {
 public:
  static inline boost::asio::execution_context::id id;

  explicit ClientKits(boost::asio::execution_context& context);

  // Gives the kit back to its pool when it goes: its socket closed (the client sees the FIN then),
  // its timers' expiry cleared, its wait's flags cleared, as a new kit's.
  struct GiveBack {
    ClientKits* pool = nullptr;
    void operator()(ClientKit* kit) const noexcept;
  };
  using Lease = std::unique_ptr<ClientKit, GiveBack>;

  // A kept kit, or a new one on `io`'s executor (`io` is this pool's io_context).
  Lease take(boost::asio::io_context& io);

  std::size_t kept_now() const { return kept_.size(); }

  // At most this many kept (a loop's idle kits after a burst of connections: ~0.6 KB each).
  static constexpr std::size_t kKeep = 1024;

 private:
  void shutdown() override;

  std::vector<std::unique_ptr<ClientKit>> kept_;
  bool open_ = true;
};

}  // namespace mpo::proxy
