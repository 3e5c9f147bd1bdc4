#include "proxy/upstream_policy.hpp"

#include <gtest/gtest.h>

namespace mpo::proxy {
namespace {

TEST(KeepAliveHeader, TimeoutAndMaxAsServersWriteThem) {
  const auto llama = parse_keep_alive("timeout=5, max=100");  // llama.cpp b10309 (cpp-httplib)
  EXPECT_EQ(llama.timeout_s, 5.0);
  EXPECT_EQ(llama.max, 100);
  const auto spaced = parse_keep_alive(" Timeout = 2 ,MAX=\"7\", foo=bar, flag");
  EXPECT_EQ(spaced.timeout_s, 2.0);
  EXPECT_EQ(spaced.max, 7);
  const auto bad = parse_keep_alive("timeout=-1, max=many, timeout");
  EXPECT_FALSE(bad.timeout_s);
  EXPECT_FALSE(bad.max);
  EXPECT_FALSE(parse_keep_alive("").timeout_s);
  EXPECT_FALSE(parse_keep_alive("timeout=nan").timeout_s);  // from_chars reads these; a header must not
  EXPECT_FALSE(parse_keep_alive("timeout=inf").timeout_s);
  EXPECT_EQ(parse_keep_alive("timeout=0.5").timeout_s, 0.5);
}

TEST(KeepAliveHeader, AConnectionIsRetiredBeforeTheServerWouldCloseIt) {
  EXPECT_DOUBLE_EQ(admit_to_pool({5.0, 100}, 4).idle_limit_s, 4);           // our 4 s is shorter than 5 - 1
  EXPECT_DOUBLE_EQ(admit_to_pool({3.0, std::nullopt}, 4).idle_limit_s, 2);  // 1 s before the server's 3 s
  EXPECT_DOUBLE_EQ(admit_to_pool({1.0, std::nullopt}, 4).idle_limit_s, 0.5);
  EXPECT_TRUE(admit_to_pool({}, 4).pool);
  EXPECT_DOUBLE_EQ(admit_to_pool({}, 4).idle_limit_s, 4);
  EXPECT_FALSE(admit_to_pool({5.0, 1}, 4).pool);  // the server takes at most one more request
  EXPECT_FALSE(admit_to_pool({5.0, 0}, 4).pool);
  EXPECT_TRUE(admit_to_pool({5.0, 2}, 4).pool);
  EXPECT_FALSE(admit_to_pool({0.0, std::nullopt}, 4).pool);  // timeout=0: no idle time at all
}

TEST(KeepAliveHeader, APoolIdleTimeLongerThanTheServersStatedOneYieldsToIt) {
  // --pool-idle 60 (a backend that keeps idle connections as long as nginx does): the server's
  // own Keep-Alive still wins where it states one.
  EXPECT_DOUBLE_EQ(admit_to_pool({}, 60).idle_limit_s, 60);
  EXPECT_DOUBLE_EQ(admit_to_pool({5.0, 100}, 60).idle_limit_s, 4);
  // --pool-idle 0: nothing is pooled, whatever the server offers.
  EXPECT_FALSE(admit_to_pool({}, 0).pool);
  EXPECT_FALSE(admit_to_pool({30.0, 100}, 0).pool);
}

RetryContext stale_close() {
  RetryContext c;
  c.pooled_connection = true;
  c.failure = UpstreamFailure::kClosed;
  return c;
}

TEST(RetryRule, APooledConnectionClosedBeforeAnyResponseByteIsRetriedOnce) {
  for (auto f : {UpstreamFailure::kClosed, UpstreamFailure::kReset, UpstreamFailure::kBrokenPipe}) {
    auto c = stale_close();
    c.failure = f;
    EXPECT_TRUE(should_retry(c)) << to_string(f);
  }
  auto twice = stale_close();
  twice.retries_so_far = 1;
  EXPECT_FALSE(should_retry(twice));
}

TEST(RetryRule, NeverAFreshConnectionATimeoutResponseBytesAGoneClientOrRetryStaleOff) {
  auto fresh = stale_close();
  fresh.pooled_connection = false;
  EXPECT_FALSE(should_retry(fresh));
  for (auto f : {UpstreamFailure::kTimeout, UpstreamFailure::kOther}) {
    auto c = stale_close();
    c.failure = f;
    EXPECT_FALSE(should_retry(c)) << to_string(f);
  }
  auto answered = stale_close();
  answered.response_bytes_seen = true;
  EXPECT_FALSE(should_retry(answered));
  auto gone = stale_close();
  gone.client_gone = true;
  EXPECT_FALSE(should_retry(gone));
  auto off = stale_close();
  off.retry_stale = false;
  EXPECT_FALSE(should_retry(off));
}

TEST(CloseAfterResponse, ABackendThatClosesAfterStreamsIsLearnedAndProbedAgain) {
  CloseAfterResponseLearner l;
  for (int i = 0; i < CloseAfterResponseLearner::kLearnAfter - 1; ++i) l.closed_before_reuse(true);
  EXPECT_TRUE(l.should_pool(true));
  l.closed_before_reuse(true);
  EXPECT_TRUE(l.learned_close_after(true));
  EXPECT_FALSE(l.learned_close_after(false));  // the other kind is not affected
  EXPECT_TRUE(l.should_pool(false));
  int pooled = 0;
  for (int i = 0; i < 2 * CloseAfterResponseLearner::kProbeEvery; ++i) pooled += l.should_pool(true) ? 1 : 0;
  EXPECT_EQ(pooled, 2);  // one probe in every kProbeEvery
  l.reused(true);        // a probe that was reused: the backend keeps them now
  EXPECT_FALSE(l.learned_close_after(true));
  EXPECT_TRUE(l.should_pool(true));
}

}  // namespace
}  // namespace mpo::proxy
