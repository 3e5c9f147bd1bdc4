// An incremental Server-Sent Events framer (WHATWG "event stream" rules): LF, CRLF and CR line
// ends; events split across reads at any byte; multi-line `data:` joined with "\n"; comments
// (":" lines) counted and skipped; an event is dispatched at its blank line. Pure: bytes in,
// events out, no allocation per byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace mpo::openai {

struct SseEvent {
  std::string_view event;  // the "event:" field, "" when absent
  std::string_view data;   // data lines joined with "\n"; valid until the next feed()/finish()
};

class SseFramer {
 public:
  // Longest line kept; longer lines are cut (and counted) so a hostile stream cannot exhaust memory.
  static constexpr std::size_t kMaxLine = 16 * 1024 * 1024;

  // Feeds the next bytes; calls on_event(const SseEvent&) for each event they complete.
  template <typename F>
  void feed(std::string_view bytes, F&& on_event) {
    for (char c : bytes) {
      if (after_cr_) {
        after_cr_ = false;
        if (c == '\n') continue;  // the LF of a CRLF split or not across reads
      }
      if (c == '\r' || c == '\n') {
        after_cr_ = c == '\r';
        end_line(on_event);
      } else if (line_.size() < kMaxLine) {
        line_.push_back(c);
      } else {
        ++oversized_lines_;
      }
    }
  }

  // At end of stream: true if an event or line was left unterminated (a truncated stream).
  bool has_partial() const { return !line_.empty() || has_data_ || !event_.empty(); }
  std::size_t events() const { return events_; }
  std::size_t comments() const { return comments_; }
  std::size_t oversized_lines() const { return oversized_lines_; }
  // Lines that are neither a known field, a comment nor blank ("garbage" in an SSE body).
  std::size_t unknown_lines() const { return unknown_lines_; }

 private:
  template <typename F>
  void end_line(F&& on_event) {
    if (line_.empty()) {
      if (has_data_) {
        ++events_;
        on_event(SseEvent{event_, data_});
      }
      data_.clear();
      event_.clear();
      has_data_ = false;
      return;
    }
    if (line_[0] == ':') {
      ++comments_;
      line_.clear();
      return;
    }
    const std::size_t colon = line_.find(':');
    std::string_view field(line_);
    std::string_view value;
    if (colon != std::string::npos) {
      field = std::string_view(line_).substr(0, colon);
      value = std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    } else if (field == "event") {
      event_.assign(value);
    } else if (field != "id" && field != "retry") {
      ++unknown_lines_;
    }
    line_.clear();
  }

  std::string line_;
  std::string data_;
  std::string event_;
  bool has_data_ = false;
  bool after_cr_ = false;
  std::size_t events_ = 0;
  std::size_t comments_ = 0;
  std::size_t oversized_lines_ = 0;
  std::size_t unknown_lines_ = 0;
};

}  // namespace mpo::openai
