// The implementation of proxy/upstream_pool.hpp. The proxy's connections to its backend (edge:
// Asio/Beast): fresh ones from net::Client, with kernel receive timestamps on plain connections,
// and the keep-alive pool whose rules live in upstream_policy.hpp (how long a connection may wait,
// what the backend is learned to close).
#include "proxy/upstream_pool.hpp"

#include <errno.h>
#include <sys/socket.h>

namespace mpo::proxy {
namespace {

namespace asio = boost::asio;

// An idle pooled connection the backend closed reads EOF or an error. On plain HTTP any
// unexpected byte also means it is unusable; on TLS pending bytes are normal (TLS 1.3 session
// tickets arrive after the handshake) and are left for the TLS layer.
bool is_stale(Upstream& u) {
  if (u.idle_watch != 0) {
    // Cancelled now whatever its end: the connection's next read must not find it queued first.
    boost::system::error_code ec;
    u.tcp().socket().cancel(ec);
    return u.idle_watch_ended;
  }
  char c = 0;
  const ssize_t n = ::recv(u.tcp().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK);
  if (n == 0) return true;
  return !u.conn->tls();
}

// Starts the idle watch of a plain connection given back to the pool (Upstream::idle_watch). The
// last read of its response found the socket drained (receive_some), so the reactor queues the
// peek without asking the kernel; it runs when the socket's next edge comes.
void watch_idle(const std::shared_ptr<Upstream>& u) {
  // Where the peeked byte goes, read by nobody: the loop's own, so it outlives every watch.
  thread_local char peeked = 0;
  const std::uint64_t number = ++u->idle_watch;
  u->idle_watch_ended = false;
  u->tcp().socket().async_receive(
      asio::buffer(&peeked, 1), asio::ip::tcp::socket::message_peek,
      [weak = std::weak_ptr<Upstream>(u), number](boost::system::error_code ec, std::size_t) {
        if (ec == asio::error::operation_aborted) return;
        const auto up = weak.lock();
        if (!up || up->idle_watch != number) return;
        up->idle_watch_ended = true;
        boost::system::error_code ignored;
        up->tcp().socket().close(ignored);  // the backend's end: its descriptor goes now
      });
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::chrono::steady_clock::time_point limit_of(const Upstream& u) { return u.idle_since + seconds(u.idle_limit_s); }

}  // namespace

std::shared_ptr<Upstream> UpstreamPool::take() {
  const auto now = std::chrono::steady_clock::now();
  while (!idle_.empty()) {
    auto u = std::move(idle_.back());
    idle_.pop_back();
    if (now - u->idle_since >= seconds(u->idle_limit_s)) continue;  // retired before the backend closes it
    if (!is_stale(*u)) return u;
    learner_.closed_before_reuse(u->after_stream);
  }
  return nullptr;
}

asio::awaitable<std::pair<std::shared_ptr<Upstream>, boost::system::error_code>> UpstreamPool::connect() {
  auto [conn, failure] = co_await client_.connect(net::deadline_after(connect_timeout_s_));
  if (failure) co_return std::make_pair(nullptr, failure->ec);
  auto u = std::make_shared<Upstream>();
  u->conn = std::move(conn);
  if (kernel_timestamps_ && !u->conn->tls() && enable_rx_timestamps(u->tcp().socket().native_handle())) {
    u->wait = std::make_unique<ReadableWait>(u->tcp().get_executor());
    // Nothing comes before the request is sent: the first read waits for the socket's first edge
    // rather than asking the kernel in vain (ours at once, and the reactor's own try, which a
    // socket's registration allows: one failed recvmsg a new upstream connection).
    await_first_edge(u->tcp().socket(), *u->wait);
    enable_queue_hints(u->tcp().socket().native_handle());
  }
  co_return std::make_pair(u, boost::system::error_code{});
}

void UpstreamPool::give_back(std::shared_ptr<Upstream> u, const KeepAliveHint& hint, bool after_stream) {
  const auto admission = admit_to_pool(hint, pool_idle_s_);
  if (!admission.pool || !learner_.should_pool(after_stream)) return;
  u->idle_since = std::chrono::steady_clock::now();
  u->idle_limit_s = admission.idle_limit_s;
  u->after_stream = after_stream;
  u->buffer().clear();
  net::release_if_empty(u->buffer());  // an idle connection holds no read block
  if (u->wait) watch_idle(u);
  idle_.push_back(std::move(u));
  if (!retire_armed_) arm_retire_timer();
}

void UpstreamPool::retire_oldest() {
  const auto now = std::chrono::steady_clock::now();
  while (!idle_.empty()) {
    const Upstream& oldest = *idle_.front();
    const bool expired = now >= limit_of(oldest);
    if (!expired && !oldest.idle_watch_ended) break;
    // Closed by the backend within its limit: the learner hears of it as when a request finds it.
    if (!expired) learner_.closed_before_reuse(oldest.after_stream);
    idle_.pop_front();
  }
}

void UpstreamPool::arm_retire_timer() {
  retire_armed_ = false;
  if (idle_.empty()) return;
  retire_armed_ = true;
  retire_timer_.expires_at(limit_of(*idle_.front()));
  retire_timer_.async_wait([this, alive = std::weak_ptr<int>(alive_)](boost::system::error_code ec) {
    if (ec || alive.expired()) return;
    retire_oldest();
    arm_retire_timer();
  });
}

UpstreamFailure failure_of(const boost::system::error_code& ec) {
  switch (net::classify(ec)) {
    case net::FailureKind::kClosed: return UpstreamFailure::kClosed;
    case net::FailureKind::kReset:
      return ec == asio::error::broken_pipe ? UpstreamFailure::kBrokenPipe : UpstreamFailure::kReset;
    case net::FailureKind::kTimeout: return UpstreamFailure::kTimeout;
    default: return UpstreamFailure::kOther;
  }
}

}  // namespace mpo::proxy
