// An incremental Server-Sent Events framer (WHATWG "event stream" rules): LF, CRLF and CR line
// ends; events split across reads at any byte; multi-line `data:` joined with "\n"; comments
// (":" lines) counted and skipped; an event is dispatched at its blank line. Pure: bytes in,
// events out, no allocation per byte (nor per event that comes whole in one read).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace mpo::openai {

struct SseEvent {
  std::string_view event;  // the "event:" field, "" when absent
  std::string_view data;   // data lines joined with "\n"; valid during the on_event call
};

class SseFramer {
 public:
  // Longest line kept; longer lines are cut (and counted) so a hostile stream cannot exhaust memory.
  static constexpr std::size_t kMaxLine = 16 * 1024 * 1024;

  // Feeds the next bytes; calls on_event(const SseEvent&) for each event they complete. Lines are
  // found with memchr (the proxy's profile at 1,000 streams had this loop, a byte at a time, as its
  // largest cost). A line and an event's data that lie whole in `bytes` are read where they are;
  // only what goes on past the end of `bytes` is copied and kept (issue 43: a copy of every line,
  // and of every event's data, cost four allocations per response).
  template <typename F>
  void feed(std::string_view bytes, F&& on_event) {
    const char* p = bytes.data();
    const char* const end = p + bytes.size();
    while (p < end) {
      if (after_cr_) {
        after_cr_ = false;
        if (*p == '\n') {  // the LF of a CRLF split or not across reads
          ++p;
          continue;
        }
      }
      const char* eol = line_end(p, end);
      const auto n = static_cast<std::size_t>(eol - p);
      if (eol == end) {  // the line goes on in the next read
        append_to_line(p, n);
        break;
      }
      after_cr_ = *eol == '\r';
      const bool carried = !line_.empty();
      std::string_view line;
      if (carried) {
        append_to_line(p, n);
        line = line_;
      } else {
        line = std::string_view(p, n < kMaxLine ? n : kMaxLine);
        oversized_lines_ += n - line.size();
      }
      p = eol + 1;
      end_line(line, carried, on_event);
      line_.clear();
    }
    // Data waiting for its event's blank line is read from `bytes` no more after this call.
    if (has_data_ && !data_owned_) keep_data();
  }

  // At end of stream: true if an event or line was left unterminated (a truncated stream).
  bool has_partial() const { return !line_.empty() || has_data_ || !event_.empty(); }
  std::size_t events() const { return events_; }
  std::size_t comments() const { return comments_; }
  std::size_t oversized_lines() const { return oversized_lines_; }
  // Lines that are neither a known field, a comment nor blank ("garbage" in an SSE body).
  std::size_t unknown_lines() const { return unknown_lines_; }

 private:
  // The first CR or LF in [p, end), or end. A blank line (every event's end) is found without a search.
  static const char* line_end(const char* p, const char* end) {
    if (*p == '\n' || *p == '\r') return p;  // p < end
    const auto* lf = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    const char* limit = lf ? lf : end;
    const auto* cr = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(limit - p)));
    return cr ? cr : limit;
  }

  // Keeps at most kMaxLine bytes of a line; every byte past it is counted as oversized.
  void append_to_line(const char* p, std::size_t n) {
    const std::size_t room = kMaxLine - line_.size();
    const std::size_t kept = n < room ? n : room;
    line_.append(p, kept);
    oversized_lines_ += n - kept;
  }

  // The data so far into data_ (from a view into the bytes being fed).
  void keep_data() {
    data_.assign(data_view_);
    data_owned_ = true;
  }

  // One line; `carried`: it is line_ (it began in an earlier read), which is cleared after.
  template <typename F>
  void end_line(std::string_view line, bool carried, F&& on_event) {
    if (line.empty()) {
      if (has_data_) {
        ++events_;
        on_event(SseEvent{event_, data_owned_ ? std::string_view(data_) : data_view_});
      }
      data_.clear();
      data_view_ = {};
      data_owned_ = false;
      event_.clear();
      has_data_ = false;
      return;
    }
    if (line[0] == ':') {
      ++comments_;
      return;
    }
    // "data:", most lines of a stream, without a search for the colon.
    const std::size_t colon = line.size() >= 5 && std::memcmp(line.data(), "data:", 5) == 0 ? 4 : line.find(':');
    std::string_view field = line;
    std::string_view value = line.substr(line.size());  // empty, but in the line (never a null view)
    if (colon != std::string_view::npos) {
      field = line.substr(0, colon);
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (!has_data_ && !carried) {
        data_view_ = value;  // the usual event: one data line, read where it is
      } else {
        if (has_data_ && !data_owned_) keep_data();
        if (has_data_) data_.push_back('\n');
        data_.append(value);
        data_owned_ = true;
      }
      has_data_ = true;
    } else if (field == "event") {
      event_.assign(value);
    } else if (field != "id" && field != "retry") {
      ++unknown_lines_;
    }
  }

  std::string line_;
  std::string data_;            // the data, once copied (data_owned_) ...
  std::string_view data_view_;  // ... else where it lies in the bytes being fed
  bool data_owned_ = false;
  std::string event_;
  bool has_data_ = false;
  bool after_cr_ = false;
  std::size_t events_ = 0;
  std::size_t comments_ = 0;
  std::size_t oversized_lines_ = 0;
  std::size_t unknown_lines_ = 0;
};

}  // namespace mpo::openai
