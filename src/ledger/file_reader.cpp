// read_ledger_file: a ledger read in 8 MiB chunks by a few threads, each owning a range of whole
// lines, merged in order. Memory is the records plus one chunk per thread, not the file.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "ledger/reader.hpp"

namespace mpo::ledger {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// pread until `len` bytes or end of file; -1 on error.
ssize_t read_at(int fd, char* buf, std::size_t len, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < len) {
    const ssize_t n = ::pread(fd, buf + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  return static_cast<ssize_t>(got);
}

// The first line start at or after `offset` (just past a newline), or `size`.
Result<std::uint64_t> line_start_after(int fd, std::uint64_t offset, std::uint64_t size) {
  if (offset == 0) return std::uint64_t{0};
  char buf[65536];
  std::uint64_t pos = offset - 1;  // the byte before `offset` may itself be the newline
  while (pos < size) {
    const ssize_t n = read_at(fd, buf, sizeof buf, pos);
    if (n < 0) return make_error(errc::kLedgerRead, std::strerror(errno));
    if (n == 0) break;
    if (const void* nl = std::memchr(buf, '\n', static_cast<std::size_t>(n))) {
      return pos + static_cast<std::uint64_t>(static_cast<const char*>(nl) - buf) + 1;
    }
    pos += static_cast<std::uint64_t>(n);
  }
  return size;
}

struct RangeResult {
  LedgerRead read;
  std::uint64_t lines = 0;  // every line of the range, blank ones included (for numbering)
  std::string error;
};

// One thread's read buffer, kept across the ranges it reads (left uninitialised: a fresh 8 MiB of
// zeroes per range cost more than reading it).
struct Buffer {
  std::unique_ptr<char[]> bytes;
  std::size_t size = 0;
  void grow(std::size_t at_least, std::size_t keep) {
    if (at_least <= size) return;
    auto bigger = std::make_unique_for_overwrite<char[]>(at_least);
    if (keep > 0) std::memcpy(bigger.get(), bytes.get(), keep);
    bytes = std::move(bigger);
    size = at_least;
  }
};

void read_range(int fd, std::uint64_t begin, std::uint64_t end, bool is_file_end, Buffer& buffer,
                const std::function<void(LedgerRecord&&)>& sink,
                const std::function<void(const LedgerRecordView&)>& view_sink, RangeResult& out) {
  LineDecoder d;
  if (sink) {
    d.set_sink(sink);
  } else if (view_sink) {
    d.set_view_sink(view_sink);
  } else {
    d.reserve(static_cast<std::size_t>((end - begin) / 512));  // ledger lines are 0.5-2 KB
  }
  std::size_t carry = 0;  // bytes of an unfinished line kept at the front of the buffer
  std::uint64_t pos = begin;
  std::uint64_t line_no = 1;
  while (pos < end) {
    if (carry == buffer.size) buffer.grow(buffer.size * 2, carry);  // a line longer than the buffer
    char* const buf = buffer.bytes.get();
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size - carry, end - pos));
    const ssize_t n = read_at(fd, buf + carry, want, pos);
    if (n <= 0) {
      out.error = n < 0 ? std::strerror(errno) : "the file shrank while it was read";
      return;
    }
    pos += static_cast<std::uint64_t>(n);
    const std::size_t filled = carry + static_cast<std::size_t>(n);
    const std::string_view text(buf, filled);
    const std::size_t last_nl = text.rfind('\n');
    if (last_nl == std::string_view::npos) {
      carry = filled;
      continue;
    }
    // Whole lines, the final newline included: text() numbers them without a second scan. What
    // follows them in the buffer is readable, so most lines are parsed in place.
    line_no += d.text(text.substr(0, last_nl + 1), line_no, false, buffer.size - (last_nl + 1));
    carry = filled - (last_nl + 1);
    std::memmove(buf, buf + last_nl + 1, carry);
  }
  if (carry > 0) {
    d.line(std::string_view(buffer.bytes.get(), carry), line_no, is_file_end, buffer.size - carry);
    ++line_no;
  }
  out.lines = line_no - 1;
  out.read = std::move(d).take();
}

}  // namespace

Result<LedgerRead> read_ledger_file(const std::string& path, const FileReadOptions& opts) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return make_error(errc::kLedgerOpen, fmt::format("cannot read '{}': {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    return make_error(errc::kLedgerOpen, fmt::format("cannot stat '{}': {}", path, std::strerror(errno)));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  // Ranges of at least min_bytes_per_thread, up to threads x parts_per_thread of them; the threads
  // take them in turn, so one slow range does not leave the other threads idle.
  const unsigned threads = std::max(1u, opts.threads);
  const std::uint64_t max_parts = static_cast<std::uint64_t>(threads) * std::max(1u, opts.parts_per_thread);
  const std::uint64_t by_size = opts.min_bytes_per_thread ? size / opts.min_bytes_per_thread : max_parts;
  const unsigned n = static_cast<unsigned>(std::clamp<std::uint64_t>(by_size, 1, max_parts));
  std::vector<std::uint64_t> bounds{0};
  for (unsigned k = 1; k < n; ++k) {
    auto b = line_start_after(f.fd, size * k / n, size);
    if (!b) return make_error(errc::kLedgerRead, fmt::format("reading '{}' failed: {}", path, b.error().message));
    bounds.push_back(std::max(*b, bounds.back()));
  }
  bounds.push_back(size);
  std::vector<RangeResult> parts(n);
  std::vector<std::function<void(LedgerRecord &&)>> sinks(n);
  std::vector<std::function<void(const LedgerRecordView&)>> view_sinks(n);
  for (unsigned k = 0; k < n; ++k) {
    if (opts.sink) {
      sinks[k] = [&opts, k](LedgerRecord&& r) { opts.sink(k, std::move(r)); };
    } else if (opts.view_sink) {
      view_sinks[k] = [&opts, k](const LedgerRecordView& r) { opts.view_sink(k, r); };
    }
  }
  std::atomic<unsigned> next{0};
  auto worker = [&] {
    Buffer buffer;
    buffer.grow(std::max<std::size_t>(opts.chunk_bytes, 64), 0);
    for (unsigned k = next++; k < n; k = next++) {
      read_range(f.fd, bounds[k], bounds[k + 1], k == n - 1, buffer, sinks[k], view_sinks[k], parts[k]);
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min(threads, n); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  LedgerRead out;
  std::size_t total = 0;
  for (const RangeResult& p : parts) total += p.read.records.size();
  if (parts.size() > 1) out.records.reserve(total);  // one allocation; each part is moved in once
  std::uint64_t offset = 0;
  for (RangeResult& p : parts) {
    if (!p.error.empty()) return make_error(errc::kLedgerRead, fmt::format("reading '{}' failed: {}", path, p.error));
    const std::uint64_t lines = p.lines;
    merge_into(out, std::move(p.read), offset);
    offset += lines;
  }
  return out;
}

}  // namespace mpo::ledger
