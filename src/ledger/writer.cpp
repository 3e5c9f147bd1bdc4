// The implementation of ledger/writer.hpp. Appends ledger lines off the request path: a writer
// thread fed by a bounded queue, taking lines that come close together in batches; O_APPEND and one
// write(2) per batch (whole lines: a write the disk took part of is cut back to the last whole
// line); fsync by policy; reopened on request (SIGHUP, for logrotate).
#include "ledger/writer.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
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
  return make_error(errc::kLedgerFsync, fmt::format("unknown fsync policy '{}': use interval, always or never", s));
}

LedgerWriter::LedgerWriter(Options opts) : opts_(std::move(opts)) {}

LedgerWriter::~LedgerWriter() { close(); }

Status LedgerWriter::open_fd() {
  const int fd = ::open(opts_.path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return make_error(errc::kLedgerOpen,
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
      return make_error(errc::kLedgerMkdir, fmt::format("cannot create folder '{}' for the ledger: {}",
                                                        p.parent_path().string(), ec.message()));
    }
  }
  if (auto st = open_fd(); !st) return st;
  struct statvfs vfs {};
  if (fstatvfs(fd_, &vfs) == 0 && (geteuid() == 0 ? vfs.f_bfree : vfs.f_bavail) == 0) {
    return make_error(errc::kLedgerFull, fmt::format("the disk holding '{}' is full", opts_.path));
  }
  thread_ = std::thread([this] { run(); });
  return Ok{};
}

template <class Fill>
bool LedgerWriter::enqueue(Fill&& fill) {
  bool wake = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= opts_.queue_capacity) {
      dropped_.fetch_add(1);
      return false;
    }
    fill(queue_.emplace_back());
    // Only a writer asleep is woken, or a napping one once a full batch waits: while lines keep
    // coming it naps between batches and takes whatever queued meanwhile (no futex wake, no context
    // switch per request on the request path).
    wake = asleep_ || (napping_ && opts_.batch_lines > 0 && queue_.size() == opts_.batch_lines);
    asleep_ = false;
  }
  if (wake) cv_.notify_one();
  return true;
}

bool LedgerWriter::submit(std::string line) {
  return enqueue([&line](Entry& e) { e.line = std::move(line); });
}

bool LedgerWriter::submit(std::unique_ptr<Observation> observation) {
  return enqueue([&observation](Entry& e) { e.observation = std::move(observation); });
}

std::unique_ptr<Observation> LedgerWriter::take_observation() {
  {
    std::lock_guard lock(mu_);
    if (!kept_.empty()) {
      auto o = std::move(kept_.back());
      kept_.pop_back();
      return o;
    }
  }
  return std::make_unique<Observation>();
}

std::size_t LedgerWriter::observations_kept() {
  std::lock_guard lock(mu_);
  return kept_.size();
}

std::size_t LedgerWriter::append(std::string_view data) {
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd_, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      last_errno_.store(errno);
      break;
    }
    off += static_cast<std::size_t>(n);
  }
  return off;
}

void LedgerWriter::cut_back(std::size_t bytes) {
  if (bytes == 0) return;
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && st.st_size >= static_cast<off_t>(bytes)) {
    (void)::ftruncate(fd_, st.st_size - static_cast<off_t>(bytes));
  }
}

bool LedgerWriter::write_line(const std::string& line) {
  const std::size_t got = append(line);
  if (got == line.size()) return true;
  // A line is in the ledger whole or not at all: cut the part that got in (a full disk takes part
  // of a write), so that the retry, or whatever comes next, starts a line.
  cut_back(got);
  return false;
}

LedgerWriter::Written LedgerWriter::write_lines(std::span<const std::string_view> lines, std::size_t first) {
  // As many whole lines as fit in 1 MiB: one write(2) for a batch instead of one per line, straight
  // from the buffer the batch was rendered into.
  constexpr std::size_t kMaxWrite = 1 << 20;
  std::size_t end = first, size = 0;
  while (end < lines.size() && (size == 0 || size + lines[end].size() <= kMaxWrite)) size += lines[end++].size();
  const std::size_t got = append({lines[first].data(), size});
  if (got == size) return {end - first, false};
  // Failed part way: keep the lines that got in whole, cut the part of the next one.
  std::size_t whole = 0, at = 0;
  for (std::size_t i = first; i < end && at + lines[i].size() <= got; ++i, ++whole) at += lines[i].size();
  cut_back(got - at);
  return {whole, true};
}

void LedgerWriter::run() {
  using Clock = std::chrono::steady_clock;
  auto last_sync = Clock::now();
  bool dirty = false;
  bool napping = false;
  const auto interval = std::chrono::duration<double>(opts_.fsync_interval_s);
  // A batch as queued, and its lines rendered end to end into `text` (its bytes past the last line
  // are room; kept from batch to batch, so a busy ledger allocates nothing per line).
  std::vector<Entry> entries;
  std::string text;
  std::vector<std::size_t> ends;
  std::vector<std::string_view> batch;
  for (;;) {
    ends.clear();
    batch.clear();
    {
      std::unique_lock lock(mu_);
      // The last batch's observations, cleared, go back for the next requests (under the lock
      // this turn takes anyway).
      for (auto& e : entries) {
        if (e.observation && kept_.size() < kKeptObservations) kept_.push_back(std::move(e.observation));
      }
      entries.clear();
      if (napping) {
        // Lines came in the last turn: more are likely. Nap without asking to be woken before a
        // full batch waits, so the request path seldom pays for a wake-up while the ledger is busy.
        napping_ = true;
        cv_.wait_for(lock, opts_.batch_window,
                     [&] { return stopping_ || (opts_.batch_lines > 0 && queue_.size() >= opts_.batch_lines); });
        napping_ = false;
      }
      if (queue_.empty() && !stopping_) {
        asleep_ = true;
        cv_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_ || !queue_.empty(); });
        asleep_ = false;
      }
      entries.swap(queue_);
      if (entries.empty() && stopping_) break;
    }
    std::size_t used = 0;
    for (const auto& e : entries) {
      if (e.observation) {
        used = render_observation_into(text, used, *e.observation);
      } else {
        if (text.size() < used + e.line.size()) text.resize(std::max(text.size() * 2, used + e.line.size()));
        std::memcpy(text.data() + used, e.line.data(), e.line.size());
        used += e.line.size();
      }
      ends.push_back(used);
    }
    for (std::size_t i = 0, begin = 0; i < ends.size(); begin = ends[i++])
      batch.emplace_back(text.data() + begin, ends[i] - begin);
    if (opts_.on_lines && !batch.empty()) opts_.on_lines(batch);
    napping = !batch.empty() && opts_.batch_window.count() > 0;
    if (reopen_.exchange(false)) (void)open_fd();
    const std::uint64_t dropped = dropped_.load();
    if (dropped > gap_reported_ && !batch.empty()) {
      const std::string gap = render_gap(SystemClock::instance().wall_us(), dropped - gap_reported_);
      if (write_line(gap)) gap_reported_ = dropped;  // else: reported with the next batch
    }
    for (std::size_t next = 0; next < batch.size();) {
      const auto w = write_lines(batch, next);
      next += w.lines;
      if (w.lines > 0) {
        written_.fetch_add(w.lines);
        dirty = true;
        if (opts_.fsync == FsyncPolicy::kAlways) ::fdatasync(fd_);
      }
      if (!w.failed) continue;
      // A failing write (disk full, I/O error) is retried until it succeeds or we are told to stop.
      write_errors_.fetch_add(1);
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stopping_; })) {
        lock.unlock();
        // Stopping while the disk refuses: every line left gets one more try; one that fails cannot
        // be kept.
        while (next < batch.size()) {
          const auto last = write_lines(batch, next);
          next += last.lines;
          written_.fetch_add(last.lines);
          if (last.failed && next < batch.size()) {
            lost_.fetch_add(1);
            ++next;
          }
        }
        break;
      }
    }
    // A burst's buffer is not kept for the quiet that follows.
    if (text.size() > (std::size_t{8} << 20) && used < text.size() / 4) std::string().swap(text);
    for (auto& e : entries) {
      if (e.observation) clear_for_reuse(*e.observation);
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
