// Appends ledger lines off the request path: a writer thread fed by a bounded queue, taking lines
// that come close together in batches, and rendering the observations it is given (a proxy's event
// loop then does not spend its time on JSON, issue 43); O_APPEND and one write(2) per batch (whole lines: a write
// the disk took part of is cut back to the last whole line); fsync by policy;
// reopened on request (SIGHUP, for logrotate). A stalled disk never blocks the caller: a full
// queue drops the new line and counts it, and a `modelperfobs.ledger-gap.v1` line with the count
// is written once writing resumes. A line that was accepted is never dropped: a failing write is
// retried until it succeeds or the writer stops.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "ledger/observation.hpp"

namespace mpo::ledger {

enum class FsyncPolicy { kInterval, kAlways, kNever };
Result<FsyncPolicy> parse_fsync_policy(std::string_view s);

class LedgerWriter {
 public:
  struct Options {
    std::string path;
    FsyncPolicy fsync = FsyncPolicy::kInterval;
    double fsync_interval_s = 1.0;
    std::size_t queue_capacity = 65536;  // lines
    // After writing a batch the writer naps this long before looking again, so that lines of a
    // busy proxy are written in batches without a wake-up per line; 0 wakes it for every line.
    // The most a line waits before its write(2) when the ledger is busy. A turn of the writer (its
    // wake-up from a timed wait, its write(2), its first touch of lines another core filled) costs
    // about 100 us of CPU on this project's 2-vCPU virtual machine: at 64 kept-alive clients
    // (1,600 requests a second) napping 2 ms cost 5.7 us a request, 20 ms 4.0-6.4, 100 ms 2.0-3.4
    // (docs/BENCHMARKS.md, forty-seventh and fiftieth sessions).
    std::chrono::microseconds batch_window{100000};
    // A nap ends early once this many lines wait (0: never early), so that a very busy proxy writes
    // every `batch_lines` lines instead of queueing a window's worth (memory, and the observations
    // the writer keeps for reuse: kKeptObservations).
    std::size_t batch_lines = 256;
    // Called on the writer thread with each batch's lines, rendered, in order, before they are
    // written (a proxy keeps the last ones for its admin listener's /lines).
    std::function<void(std::span<const std::string_view>)> on_lines;
  };
  explicit LedgerWriter(Options opts);
  ~LedgerWriter();
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;

  // Creates parent folders, opens the file for appending, checks it can be written (a full disk
  // or unwritable path is an error that says so), and starts the writer thread.
  Status open();
  // Never blocks on I/O. False (and counted as dropped) when the queue is full.
  bool submit(std::string line);
  // The same for an observation, rendered (render_observation) on the writer thread; its block is
  // passed along (no move of its ~80 members), and once its line is written the writer clears it
  // (clear_for_reuse) and keeps it for take_observation (issue 43).
  bool submit(std::unique_ptr<Observation> observation);
  // A cleared observation whose line was written, its strings' buffers kept (a proxy's next request
  // fills them without allocating, and nothing is freed on the writer's thread for them), or a new one.
  std::unique_ptr<Observation> take_observation();
  // Observations kept for take_observation now (for tests).
  std::size_t observations_kept();
  // Asks the writer to reopen the path before its next write (SIGHUP).
  void request_reopen() { reopen_.store(true); }
  // Writes everything queued, fsyncs, closes; returns when done.
  void close();

  // Submitted lines written (gap lines are not counted).
  std::uint64_t lines_written() const { return written_.load(); }
  std::uint64_t lines_dropped() const { return dropped_.load(); }
  std::uint64_t write_errors() const { return write_errors_.load(); }
  // Accepted lines that could not be written before close() (the disk still refused them).
  std::uint64_t lines_lost() const { return lost_.load(); }
  // errno of the last failed write (0: none), for the message that says why.
  int last_write_errno() const { return last_errno_.load(); }

 private:
  void run();
  // write(2)s `data` until done or a failure; returns the bytes that got in.
  std::size_t append(std::string_view data);
  // Truncates the file by `bytes` (the part of a line a failed write left).
  void cut_back(std::size_t bytes);
  bool write_line(const std::string& line);
  // Writes lines from `first` on in one write(2) (up to 1 MiB of them; `lines` lie end to end in
  // one buffer); returns how many got in whole.
  struct Written {
    std::size_t lines = 0;
    bool failed = false;  // a write failed: the lines after these did not get in
  };
  Written write_lines(std::span<const std::string_view> lines, std::size_t first);
  // A line as given, or an observation to render.
  struct Entry {
    std::string line;
    std::unique_ptr<Observation> observation;
  };
  // At most this many written observations are kept for take_observation (~1.2 KB each).
  static constexpr std::size_t kKeptObservations = 512;
  // Queues an entry that `fill` fills in place (an observation is moved once, not passed along).
  template <class Fill>
  bool enqueue(Fill&& fill);
  Status open_fd();

  Options opts_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Entry> queue_;
  std::vector<std::unique_ptr<Observation>> kept_;  // cleared, for take_observation
  bool stopping_ = false;
  bool asleep_ = false;   // the writer waits for a notification (else it naps and looks by itself)
  bool napping_ = false;  // the writer naps: woken only once batch_lines lines wait
  std::thread thread_;
  std::atomic<bool> reopen_{false};
  std::atomic<std::uint64_t> written_{0}, dropped_{0}, write_errors_{0}, lost_{0};
  std::atomic<int> last_errno_{0};
  std::uint64_t gap_reported_ = 0;  // dropped count already written as a gap line
};

}  // namespace mpo::ledger
