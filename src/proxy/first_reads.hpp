// Whether a new client connection's first read asks the kernel at once or waits for the socket's
// first readiness edge (pure; issue 43). Asking at once saves a turn of the loop when the request
// is already there (a client that connected and wrote before the proxy accepted it: the usual case
// under light load); waiting saves a read in vain when it is not (a burst of connections accepted
// as their handshakes end, before their requests come: at 500 connections at once nearly every
// first read failed, one `recvmsg` in vain a request). nginx always waits, unless its listener
// defers accepts.
//
// Each first read says which would have been right: one at once that found nothing, or one that
// waited for bytes the kernel received after the accept, says "wait"; one at once that found the
// request, or one that waited for bytes already there at the accept, says "at once". A two-bit
// saturating counter, as a branch predictor's: a choice that held for a while takes two contrary
// first reads in a row to flip.
#pragma once

#include <cstdint>

namespace mpo::proxy {

class FirstReads {
 public:
  // Whether the next connection's first read waits for its first edge.
  bool wait() const { return score_ >= 2; }
  // A first read at once found the request (`found`), or found nothing.
  void read_at_once(bool found) { found ? at_once_was_right() : wait_was_right(); }
  // A first read waited for the edge: its bytes reached the kernel at `arrived_us` and the
  // connection was accepted at `accepted_us` (one clock).
  void waited(std::int64_t arrived_us, std::int64_t accepted_us) {
    arrived_us > accepted_us ? wait_was_right() : at_once_was_right();
  }

 private:
  void wait_was_right() {
    if (score_ < 3) ++score_;
  }
  void at_once_was_right() {
    if (score_ > 0) --score_;
  }
  int score_ = 0;
};

}  // namespace mpo::proxy
