// A Prometheus-style histogram (fixed upper bounds, non-cumulative counts, sum, count) and the
// bucket bounds vLLM 0.29.0 publishes, shared by the simulator and the proxy's own metrics. Written
// out by promtext::TextWriter (the project's one exposition writer).
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mpo {

// Where v falls among sorted upper bounds: std::lower_bound's index (the first bound >= v), found
// from v's binary exponent, which names the first bound it can be, and a step or two from there
// (issue 43: the binary search was ~50 instructions an observation, and a streamed chunk makes
// three or four). Exact for any sorted bounds; NaN, infinities and v <= 0 take the binary search.
class BucketFinder {
 public:
  explicit BucketFinder(std::span<const double> bounds);
  std::size_t index(std::span<const double> bounds, double v) const {
    if (!(v > 0) || !(v <= std::numeric_limits<double>::max())) return lower_bound_index(bounds, v);
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    const int exponent = static_cast<int>(bits >> 52) - 1023;  // v in [2^exponent, 2^(exponent + 1))
    std::size_t i = first_[static_cast<std::size_t>(std::clamp(exponent + kBelow, 0, kSlots - 1))];
    while (i < bounds.size() && bounds[i] < v) ++i;
    return i;
  }

 private:
  static constexpr int kSlots = 64, kBelow = 32;  // exponents -32 to 31 have a slot of their own
  static std::size_t lower_bound_index(std::span<const double> bounds, double v);
  // first_[k]: the first bound >= 2^(k - kBelow) (0 for k = 0, which holds every smaller v too).
  std::array<std::uint16_t, kSlots> first_{};
};

class Histogram {
 public:
  explicit Histogram(std::span<const double> upper_bounds)
      : bounds_(upper_bounds.begin(), upper_bounds.end()), finder_(bounds_), counts_(bounds_.size() + 1, 0) {}
  void observe(double v);
  // Adds another histogram's counts, sum and count (its bounds must be these).
  void merge(std::span<const std::uint64_t> counts, double sum, std::uint64_t count);
  const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative counts; the last is the +Inf overflow bucket.
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  double sum() const { return sum_; }
  std::uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  BucketFinder finder_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// The same, observed from one thread only, without a lock, and read from another (relaxed atomics: a
// reader may see an observation's bucket before its sum, never a torn number). For a hot path such
// as the proxy's lag per read: each event loop its own, merged into a Histogram when read. With one
// writer an observation is plain loads and stores, no locked read-modify-write (issue 43: three a
// read, each tens of cycles, and the sum's a compare-and-swap loop).
class AtomicHistogram {
 public:
  explicit AtomicHistogram(std::span<const double> upper_bounds)
      : bounds_(upper_bounds.begin(), upper_bounds.end()), finder_(bounds_), counts_(bounds_.size() + 1) {}
  void observe(double v);
  void add_to(Histogram& h) const;

 private:
  std::vector<double> bounds_;
  BucketFinder finder_;
  std::vector<std::atomic<std::uint64_t>> counts_;
  std::atomic<double> sum_{0};
};

// Bucket bounds of vLLM 0.29.0 (tests/fixtures/vllm/vllm-v1_0.29.0_*.prom).
namespace vllm_buckets {
inline constexpr double kTokenBuckets[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
// Token-count buckets as vLLM builds them (build_1_2_5_buckets): 1, 2, 5, 10, ... up to
// max_model_len. kTokenBuckets is this for a max_model_len of 2048 (the capture's).
inline std::vector<double> token_buckets(int max_model_len) {
  std::vector<double> out;
  for (double mantissa = 1;; mantissa *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * mantissa > max_model_len) return out;
      out.push_back(m * mantissa);
    }
  }
}
inline constexpr double kIterationBuckets[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};
inline constexpr double kNBuckets[] = {1, 2, 5, 10, 20};
inline constexpr double kTtftBuckets[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
inline constexpr double kItlBuckets[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
inline constexpr double kLatencyBuckets[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}  // namespace vllm_buckets

}  // namespace mpo
