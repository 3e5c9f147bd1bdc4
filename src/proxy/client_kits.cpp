// The implementation of proxy/client_kits.hpp.
#include "proxy/client_kits.hpp"

namespace mpo::proxy {

ClientKits::ClientKits(boost::asio::execution_context& context) : service(context) { kept_.reserve(kKeep); }

ClientKits::Lease ClientKits::take(boost::asio::io_context& io) {
  if (kept_.empty()) return Lease(new ClientKit(io.get_executor()), GiveBack{this});
  Lease kit(kept_.back().release(), GiveBack{this});
  kept_.pop_back();
  return kit;
}

void ClientKits::GiveBack::operator()(ClientKit* kit) const noexcept {
  std::unique_ptr<ClientKit> owned(kit);
  boost::system::error_code ec;
  kit->stream.socket().close(ec);
  if (!pool->open_ || pool->kept_.size() >= kKeep) return;
  kit->stream.expires_never();
  kit->wait.clear();
  pool->kept_.push_back(std::move(owned));  // reserved: never allocates
}

// The io_context is shutting down (its destructor, at exit): the kits kept go now, while the timer
// service their timers belong to is still there; kits given back later (sessions' frames destroyed
// by the shutdown) are freed, not kept.
void ClientKits::shutdown() {
  open_ = false;
  kept_.clear();
}

}  // namespace mpo::proxy
