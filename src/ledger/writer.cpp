#include "ledger/writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/clock.hpp"
#include "ledger/observation.hpp"

namespace mpo::ledger {

Result<FsyncPolicy> parse_fsync_policy(std::string_view s) {
  if (s == "interval") return FsyncPolicy::kInterval;
  if (s == "always") return FsyncPolicy::kAlways;
  if (s == "never") return FsyncPolicy::kNever;
  return make_error("ledger.fsync", fmt::format("unknown fsync policy '{}': use interval, always or never", s));
}

LedgerWriter::LedgerWriter(Options opts) : opts_(std::move(opts)) {}

LedgerWriter::~LedgerWriter() { close(); }

Status LedgerWriter::open_fd() {
  const int fd = ::open(opts_.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error("ledger.open",
                      fmt::format("cannot open ledger '{}' for appending: {}", opts_.path, std::strerror(errno)));
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  return Ok{};
}

Status LedgerWriter::open() {
  std::error_code ec;
  const std::filesystem::path p(opts_.path);
  if (p.has_parent_path()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) {
      return make_error("ledger.mkdir", fmt::format("cannot create folder '{}' for the ledger: {}",
                                                    p.parent_path().string(), ec.message()));
    }
  }
  if (auto st = open_fd(); !st) return st;
  struct statvfs vfs {};
  if (fstatvfs(fd_, &vfs) == 0 && (geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) == 0) {
    return make_error("ledger.full", fmt::format("the disk holding '{}' is full", opts_.path));
  }
  thread_ = std::thread([this] { run(); });
  return Ok{};
}

bool LedgerWriter::submit(std::string line) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= opts_.queue_capacity) {
      dropped_.fetch_add(1);
      return false;
    }
    // Only a writer asleep is woken: while lines keep coming it naps between batches and takes
    // whatever queued meanwhile (no futex wake, no context switch per request on the request path).
    wake = asleep_;
    asleep_ = false;
    queue_.push_back(std::move(line));
  }
  if (wake) cv_.notify_one();
  return true;
}

bool LedgerWriter::write_line(const std::string& line) {
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      last_errno_.store(errno);
      // A line is in the ledger whole or not at all: cut the part that got in (a full disk
      // takes part of a write), so that the retry, or whatever comes next, starts a line.
      if (off > 0) {
        struct stat st {};
        if (::fstat(fd_, &st) == 0 && st.st_size >= static_cast<off_t>(off)) {
          (void)::ftruncate(fd_, st.st_size - static_cast<off_t>(off));
        }
      }
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

void LedgerWriter::run() {
  using Clock = std::chrono::steady_clock;
  auto last_sync = Clock::now();
  bool dirty = false;
  bool napping = false;
  const auto interval = std::chrono::duration<double>(opts_.fsync_interval_s);
  for (;;) {
    std::deque<std::string> batch;
    {
      std::unique_lock lock(mu_);
      if (napping) {
        // Lines came in the last turn: more are likely. Nap without asking to be woken, so the
        // request path never pays for a wake-up while the ledger is busy.
        cv_.wait_for(lock, opts_.batch_window, [&] { return stopping_; });
      }
      if (queue_.empty() && !stopping_) {
        asleep_ = true;
        cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_ || !queue_.empty(); });
        asleep_ = false;
      }
      batch.swap(queue_);
      if (batch.empty() && stopping_) break;
    }
    napping = !batch.empty() && opts_.batch_window.count() > 0;
    if (reopen_.exchange(false)) (void)open_fd();
    const std::uint64_t dropped = dropped_.load();
    if (dropped > gap_reported_ && !batch.empty()) {
      const std::string gap = render_gap(SystemClock::instance().wall_us(), dropped - gap_reported_);
      if (write_line(gap)) gap_reported_ = dropped;  // else: reported with the next batch
    }
    for (auto& line : batch) {
      // Retry a failing write (disk full, I/O error) until it succeeds or we are told to stop.
      bool ok = write_line(line);
      while (!ok) {
        write_errors_.fetch_add(1);
        std::unique_lock lock(mu_);
        if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; })) break;
        lock.unlock();
        ok = write_line(line);
      }
      if (!ok) {
        lost_.fetch_add(1);  // stopping while the disk still refuses: this line cannot be kept
        continue;
      }
      written_.fetch_add(1);
      dirty = true;
      if (opts_.fsync == FsyncPolicy::kAlways) ::fdatasync(fd_);
    }
    if (dirty && opts_.fsync == FsyncPolicy::kInterval && Clock::now() - last_sync >= interval) {
      ::fdatasync(fd_);
      last_sync = Clock::now();
      dirty = false;
    }
  }
  if (fd_ >= 0 && opts_.fsync != FsyncPolicy::kNever) ::fdatasync(fd_);
}

void LedgerWriter::close() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace mpo::ledger
