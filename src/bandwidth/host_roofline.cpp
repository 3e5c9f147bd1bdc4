// The implementation of bandwidth/host_roofline.hpp. `bandwidth measure-host`: a host-memory
// roofline measured on the machine it runs on.
#include "bandwidth/host_roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "core/envelope.hpp"
#include "core/json.hpp"
#include "core/time.hpp"

namespace mpo::bandwidth {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<int> default_threads() {
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::vector<int> t;
  for (int n = 1; n <= std::max(4, cores); n *= 2) t.push_back(n);
  return t;
}

// Copies `iterations` times the working set with `threads` threads, each its own slice; returns
// the seconds from the moment all threads were released to the last one finishing.
double timed_copy(char* dst, const char* src, std::uint64_t bytes, int threads, std::uint64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  const std::uint64_t slice = bytes / static_cast<std::uint64_t>(threads);
  for (int t = 0; t < threads; ++t) {
    const std::uint64_t off = slice * static_cast<std::uint64_t>(t);
    const std::uint64_t len = t == threads - 1 ? bytes - off : slice;
    pool.emplace_back([&, off, len] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (std::uint64_t i = 0; i < iterations; ++i) std::memcpy(dst + off, src + off, len);
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  const auto t0 = Clock::now();
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

Status check_roofline_options(const RooflineOptions& o) {
  if (o.working_set_bytes < (1ull << 20) || o.working_set_bytes > (512ull << 20)) {
    return make_error(errc::kBandwidthRoofline, "--working-set must be between 1 MiB and 512 MiB");
  }
  if (o.trials < 3 || o.trials > 15) return make_error(errc::kBandwidthRoofline, "--trials must be between 3 and 15");
  if (!(o.target_trial_s >= 0.01 && o.target_trial_s <= 2)) {
    return make_error(errc::kBandwidthRoofline, "--trial-time must be between 10ms and 2s");
  }
  for (int t : o.threads) {
    if (t < 1 || t > 256) return make_error(errc::kBandwidthRoofline, "--threads values must be between 1 and 256");
  }
  if (!(o.knee_threshold > 0 && o.knee_threshold <= 1)) {
    return make_error(errc::kBandwidthRoofline, "--knee-threshold must be in (0, 1]");
  }
  return Ok{};
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

RooflineAnalysis analyse_roofline(const std::vector<RooflinePoint>& points, double threshold) {
  RooflineAnalysis a;
  if (points.size() < 2) {
    a.reason = "a sustainable figure needs at least two thread counts";
    return a;
  }
  double best = -1;
  for (std::size_t i = 0; i + 1 < points.size(); ++i) {
    best = std::max(best, std::min(points[i].median_gb_s, points[i + 1].median_gb_s));
  }
  if (!(best > 0) || !std::isfinite(best)) {
    a.reason = "no positive median";
    return a;
  }
  a.sustainable_gb_s = best;
  for (std::size_t i = 0; i < points.size(); ++i) {
    bool all = true;
    for (std::size_t k = i; k < points.size(); ++k) all = all && points[k].median_gb_s >= threshold * best;
    if (all) {
      a.knee_threads = points[i].threads;
      break;
    }
  }
  return a;
}

std::vector<RooflinePoint> measure_host_roofline(const RooflineOptions& o,
                                                 const std::function<void(const std::string&)>& progress) {
  const std::vector<int> threads = o.threads.empty() ? default_threads() : o.threads;
  const std::uint64_t bytes = o.working_set_bytes;
  std::unique_ptr<char[]> src(new char[bytes]);
  std::unique_ptr<char[]> dst(new char[bytes]);
  std::vector<RooflinePoint> out;
  for (int n : threads) {
    RooflinePoint p;
    p.threads = n;
    // First touch: fault both buffers in with this thread count before timing.
    {
      const auto t0 = Clock::now();
      std::memset(src.get(), 1, bytes);
      std::memset(dst.get(), 0, bytes);
      p.first_touch_s = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    // Calibration: grow the iteration count until one trial takes about the target time.
    const auto c0 = Clock::now();
    std::uint64_t iterations = 1;
    for (int round = 0; round < 8; ++round) {
      const double t = timed_copy(dst.get(), src.get(), bytes, n, iterations);
      if (t >= o.target_trial_s * 0.9) break;
      const double scale = t > 0 ? o.target_trial_s / t * 1.05 : 2.0;
      iterations = std::max<std::uint64_t>(
          iterations + 1, static_cast<std::uint64_t>(std::ceil(static_cast<double>(iterations) * scale)));
    }
    p.calibration_s = std::chrono::duration<double>(Clock::now() - c0).count();
    p.iterations = iterations;
    for (int trial = 0; trial < o.trials; ++trial) {
      const double t = timed_copy(dst.get(), src.get(), bytes, n, iterations);
      p.trial_gb_s.push_back(2.0 * static_cast<double>(bytes) * static_cast<double>(iterations) / t / 1e9);
    }
    p.median_gb_s = median(p.trial_gb_s);
    progress(fmt::format("{} thread(s): median {:.2f} GB/s over {} trials of {} copies of {} MiB", n, p.median_gb_s,
                         o.trials, iterations, bytes >> 20));
    out.push_back(std::move(p));
  }
  return out;
}

std::string host_roofline_receipt_json(const RooflineOptions& o, const std::vector<RooflinePoint>& points,
                                       const RooflineAnalysis& a, std::string_view host_cpu, std::int64_t created_at_us,
                                       std::string_view tool_version) {
  JsonObjectWriter w;
  put_envelope_head(w, "modelperfobs.host-roofline.v1", created_at_us, tool_version);
  JsonObjectWriter in;
  in.field("working_set_bytes", o.working_set_bytes)
      .field("trials", o.trials)
      .field("target_trial_s", o.target_trial_s)
      .field("knee_threshold", o.knee_threshold)
      .field("bytes_counted", "read + written: 2 bytes per copied byte")
      .field("host_cpu", host_cpu)
      .field("logical_cpus", static_cast<std::int64_t>(std::thread::hardware_concurrency()));
  w.raw_field("inputs", std::move(in).finish());
  JsonObjectWriter r;
  r.field("kind", "host-roofline");
  std::string pts = "[";
  for (std::size_t i = 0; i < points.size(); ++i) {
    const RooflinePoint& p = points[i];
    JsonObjectWriter po;
    po.field("threads", p.threads).field("iterations", p.iterations);
    std::string trials = "[";
    for (std::size_t k = 0; k < p.trial_gb_s.size(); ++k) {
      if (k) trials += ',';
      append_json_number(trials, p.trial_gb_s[k]);
    }
    po.raw_field("trial_gb_s", trials + "]")
        .field("median_gb_s", p.median_gb_s)
        .field("first_touch_s", p.first_touch_s)
        .field("calibration_s", p.calibration_s);
    pts += (i ? "," : "") + std::move(po).finish();
  }
  r.raw_field("points", pts + "]");
  if (a.sustainable_gb_s) r.field("sustainable_gb_s", *a.sustainable_gb_s);
  if (a.knee_threads) r.field("knee_threads", *a.knee_threads);
  w.raw_field("result", std::move(r).finish());
  Validity v{a.sustainable_gb_s.has_value(), {}, {}};
  if (!a.reason.empty()) v.reasons.push_back(a.reason);
  w.raw_field("validity", validity_json(v));
  return std::move(w).finish();
}

}  // namespace mpo::bandwidth
