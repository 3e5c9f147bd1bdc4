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
  char c = 0;
  const ssize_t n = ::recv(u.tcp().socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK);
  if (n == 0) return true;
  return !u.conn->tls();
}

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

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
    watch_reads_only(u->tcp().socket());
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
  idle_.push_back(std::move(u));
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
