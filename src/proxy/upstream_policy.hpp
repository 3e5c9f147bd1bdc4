// The rules of the upstream keep-alive pool, pure so they are unit tested without sockets:
// what a response's `Keep-Alive` header allows, whether a failed exchange is retried, and what the
// proxy has learned about when a backend closes its connections. docs/PROXY.md, "Upstream
// connections", states these rules for users.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mpo::proxy {

// `Keep-Alive: timeout=5, max=100` (RFC 2068 19.7.1.1, kept by Apache, cpp-httplib and others):
// how long the server keeps an idle connection, and how many more requests it takes on it.
// Unknown parameters are ignored; a malformed value leaves its field unset.
struct KeepAliveHint {
  std::optional<double> timeout_s;
  std::optional<std::int64_t> max;
};
KeepAliveHint parse_keep_alive(std::string_view header);

// Whether a connection may go back to the pool after a complete response, and for how long it
// may wait there: retired before the server would close it (1 s before its stated timeout, or at
// half of a timeout under 2 s), never longer than `pool_idle_s`; not pooled when the server takes
// at most one more request on it (`max` <= 1), so the proxy never races the server's own close.
struct PoolAdmission {
  bool pool = false;
  double idle_limit_s = 0;
};
PoolAdmission admit_to_pool(const KeepAliveHint& hint, double pool_idle_s);

// How an exchange with the backend failed before the response head was read.
enum class UpstreamFailure {
  kClosed,      // end of stream (the server's FIN)
  kReset,       // connection reset by the peer
  kBrokenPipe,  // the write found the connection already closed
  kTimeout,
  kOther,
};
std::string_view to_string(UpstreamFailure f);  // "eof", "reset", "broken_pipe", "timeout", "other"

struct RetryContext {
  bool retry_stale = true;         // --retry-stale on
  bool pooled_connection = false;  // the connection came from the pool (never a fresh one)
  int retries_so_far = 0;
  UpstreamFailure failure = UpstreamFailure::kOther;
  bool response_bytes_seen = false;  // any byte of a response arrived
  bool client_gone = false;
};
// End of stream, a reset or a broken pipe: the server closed the connection (not a timeout).
bool closed_by_server(UpstreamFailure f);

// A request that failed on a pooled connection with a close or a reset before any byte of the
// response arrived is retried once on a fresh connection: the server closed an idle connection
// while the request was on its way, so it never processed it. Never a fresh connection, never a
// timeout (the server may be working on it), never once response bytes arrived.
bool should_retry(const RetryContext& c);

// What the proxy learns about a backend that closes connections after some responses although
// it offers keep-alive (llama.cpp closes after every streamed response while its headers say
// `Keep-Alive: timeout=5, max=100`). For each kind of last response (streamed or not) it counts
// how pooled connections ended: closed by the backend before or at reuse, or reused. After
// kLearnAfter closes in a row with no reuse, connections after that kind of response are no
// longer pooled, except every kProbeEvery-th, which tests whether the backend changed; one
// successful reuse restores pooling.
class CloseAfterResponseLearner {
 public:
  static constexpr int kLearnAfter = 3;
  static constexpr int kProbeEvery = 32;

  void closed_before_reuse(bool after_stream) { ++slot(after_stream).closed_in_a_row; }
  void reused(bool after_stream) { slot(after_stream).closed_in_a_row = 0; }
  // Asked once per complete response whose connection could be pooled.
  bool should_pool(bool after_stream) {
    auto& s = slot(after_stream);
    if (s.closed_in_a_row < kLearnAfter) return true;
    return ++s.skipped % kProbeEvery == 0;
  }
  bool learned_close_after(bool after_stream) const { return slot(after_stream).closed_in_a_row >= kLearnAfter; }

 private:
  struct Slot {
    int closed_in_a_row = 0;
    std::uint64_t skipped = 0;
  };
  Slot& slot(bool after_stream) { return after_stream ? stream_ : other_; }
  const Slot& slot(bool after_stream) const { return after_stream ? stream_ : other_; }
  Slot stream_, other_;
};

}  // namespace mpo::proxy
