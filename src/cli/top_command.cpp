// `modelperfobs top LEDGER`: a live view of a running proxy, read from the ledger it is writing
// (followed as `tail -f` follows a file, across rotation) and the engine's scrapes beside it, or
// from the proxy's admin listener (`--admin URL`, its recent lines: no file access needed). Each
// refresh takes the last --window of lines through the report's analysis (by model) and draws the
// screen (live/top_view.*); off a terminal it prints plain lines. Written to the terminal directly
// (ANSI sequences and termios): docs/ARCHITECTURE.md says why.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/exit_codes.hpp"
#include "core/clock.hpp"
#include "core/duration.hpp"
#include "ledger/reader.hpp"
#include "live/engine_evidence.hpp"
#include "live/top_view.hpp"
#include "net/client.hpp"
#include "promtext/exposition.hpp"
#include "scrape/snapshot.hpp"
#include "scrape/snapshot_reader.hpp"

namespace mpo::cli {
namespace {

struct TopArgs {
  std::string ledger;
  std::string admin;    // the proxy's admin listener, read instead of a ledger file
  std::string scrapes;  // "" beside the ledger; "none"
  std::string window = "30s";
  std::string interval = "1s";
  bool plain = false;
  bool once = false;
};

volatile sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

// A file read as it grows: the complete lines appended since the last call, at most 64 MiB a call.
// Starts over when the file is replaced (another inode: SIGHUP rotation) or cut shorter.
class FollowedFile {
 public:
  explicit FollowedFile(std::string path) : path_(std::move(path)) {}
  std::vector<std::string> new_lines() {
    std::vector<std::string> out;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return out;
    if (st.st_ino != inode_ || st.st_size < offset_) {
      inode_ = st.st_ino;
      // A large file is read from its last kTail bytes (the recent lines), past the first cut line.
      offset_ = st.st_size > kTail ? st.st_size - kTail : 0;
      skip_first_ = offset_ > 0;
      partial_.clear();
    }
    if (st.st_size == offset_) return out;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return out;
    in.seekg(offset_);
    std::string chunk(static_cast<std::size_t>(std::min<off_t>(st.st_size - offset_, kTail)), '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    offset_ += static_cast<off_t>(chunk.size());
    partial_ += chunk;
    std::size_t start = 0;
    if (skip_first_) {
      const auto nl = partial_.find('\n');
      if (nl == std::string::npos) return out;
      start = nl + 1;
      skip_first_ = false;
    }
    for (std::size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (nl > start) out.emplace_back(partial_.substr(start, nl - start));
    }
    partial_.erase(0, start);
    return out;
  }
  bool exists() const {
    struct stat st {};
    return ::stat(path_.c_str(), &st) == 0;
  }

 private:
  static constexpr off_t kTail = 64 << 20;
  std::string path_;
  bool skip_first_ = false;
  ino_t inode_ = 0;
  off_t offset_ = 0;
  std::string partial_;
};

// What went wrong with a GET of an admin route, for a person: the connection's failure, or the
// status that came back instead of 200.
std::string answer_problem(const net::Exchange& x, const std::string& what) {
  if (x.failure) return fmt::format("GET {}: {}", what, x.failure->message);
  return fmt::format("GET {} answered HTTP {}, not 200 (is this the proxy's --admin-listen address?)", what, x.status);
}

// A proxy's recent lines from its admin listener (`GET /lines?after=N`, docs/FORMATS.md): for a
// ledger that is not at hand. Lines the ring dropped before they were read are counted.
class AdminLines {
 public:
  explicit AdminLines(net::BackendUrl url) : url_(std::move(url)) {}
  std::vector<std::string> new_lines() {
    std::vector<std::string> out;
    net::ExchangeOptions req;
    req.target = url_.target_for("/lines?after=" + std::to_string(after_));
    const auto x = net::exchange_blocking(url_, {}, std::move(req), 5);
    reachable_ = x.status == 200;
    problem_ = reachable_ ? std::string() : answer_problem(x, url_.origin + url_.target_for("/lines"));
    if (!reachable_) return out;
    std::size_t start = 0;
    bool header = true;
    for (std::size_t nl; (nl = x.body.find('\n', start)) != std::string::npos; start = nl + 1) {
      std::string_view line(x.body.data() + start, nl - start);
      if (header) {
        header = false;
        boost::system::error_code ec;
        const auto doc = boost::json::parse(line, ec);
        if (ec || !doc.is_object()) return out;
        const auto& o = doc.as_object();
        if (const auto* n = o.if_contains("next"); n && n->is_int64()) {
          after_ = static_cast<std::uint64_t>(n->as_int64());  // lower after a proxy restart: it counts anew
        }
        if (const auto* m = o.if_contains("missed"); m && m->is_int64())
          missed_ += static_cast<std::uint64_t>(m->as_int64());
        continue;
      }
      if (!line.empty()) out.emplace_back(line);
    }
    return out;
  }
  bool reachable() const { return reachable_; }
  // Why the last read got no lines; empty when it did.
  const std::string& problem() const { return problem_; }
  std::uint64_t missed() const { return missed_; }

 private:
  net::BackendUrl url_;
  std::string problem_;
  std::uint64_t after_ = 0, missed_ = 0;
  bool reachable_ = false;
};

// The terminal in the mode a full-screen view needs, restored however the view ends.
class Screen {
 public:
  Screen() {
    if (::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 0;
      raw.c_cc[VTIME] = 0;
      keys_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    std::cout << "\033[?1049h\033[?25l" << std::flush;  // alternate screen, cursor hidden
  }
  ~Screen() {
    std::cout << "\033[?25h\033[?1049l" << std::flush;
    if (keys_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  bool keys() const { return keys_; }
  static std::pair<int, int> size() {
    winsize ws{};
    if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) return {ws.ws_col, ws.ws_row};
    return {80, 24};
  }
  static void draw(const std::vector<std::string>& lines) {
    std::string out = "\033[H";
    for (std::size_t i = 0; i < lines.size(); ++i) {
      out += lines[i];
      out += "\033[K";
      if (i + 1 < lines.size()) out += "\r\n";
    }
    std::cout << out << std::flush;
  }

 private:
  termios saved_{};
  bool keys_ = false;
};

class Top {
 public:
  Top(const TopArgs& a, double window_s, std::optional<net::BackendUrl> admin)
      : a_(a), ledger_(a.ledger), scrapes_(scrapes_path(a)) {
    opts_.window_s = window_s;
    if (admin) {
      admin_url_ = *admin;
      if (a.ledger.empty()) admin_.emplace(std::move(*admin));
    }
  }

  // Reads what was appended, then builds the frame of the window ending now.
  live::TopFrame frame() {
    read_new();
    const std::int64_t now = SystemClock::instance().wall_us();
    live::TopFrame f;
    f.now_us = now;
    if (admin_) {
      f.source = "proxy " + a_.admin + (admin_->reachable() ? "" : " (not answering)");
      f.lines_problem = admin_->problem();
    } else {
      f.source = "ledger " + a_.ledger + (ledger_.exists() ? "" : " (waiting for it)");
      if (!ledger_.exists()) f.lines_problem = "ledger " + a_.ledger + " does not exist (yet): is a proxy writing it?";
    }
    f.lines = lines_;
    f.unreadable_lines = unreadable_ + (admin_ ? admin_->missed() : 0);
    const std::int64_t since = now - static_cast<std::int64_t>(opts_.window_s * 1e6);
    std::vector<ledger::LedgerRecord> window;
    for (const auto& r : records_) {
      if (r.started_at_us < since) continue;
      window.push_back(r);
      if (r.outcome != "ok" && r.model) {
        f.latest_error[*r.model] = r.outcome + (r.http_status ? " " + std::to_string(*r.http_status) : "") +
                                   (r.error_message ? ": " + *r.error_message : "");
      }
    }
    report::Options ro;
    ro.by = report::GroupBy::kModel;
    ro.since_us = since;
    std::vector<scrape::Snapshot> snaps;
    for (const auto& s : snapshots_) {
      if (s.started_at_us >= since) snaps.push_back(s);
    }
    if (!snaps.empty()) {
      f.engine = live::engine_window(snaps);
      ro.engine = f.engine->evidence;
    }
    f.groups = report::analyse(window, ro);
    if (admin_url_) f.in_flight = in_flight_by_model(*admin_url_, admin_ ? nullptr : &f.gauge_problem);
    // Rates over the window as a live view means them (requests finished in the last N seconds / N),
    // not over the span of the requests themselves as a report does; a window longer than what has
    // been read so far is cut to it.
    if (first_started_us_) {
      const double span_s = static_cast<double>(now - *first_started_us_) / 1e6;
      const double seconds = std::max(1.0, std::min(opts_.window_s, span_s));
      for (auto& g : f.groups) {
        g.requests_per_s = static_cast<double>(g.requests) / seconds;
        if (g.output_tokens_per_s) g.output_tokens_per_s = static_cast<double>(g.completion_tokens_total) / seconds;
      }
    }
    return f;
  }

  int run_plain(double interval_s) {
    for (;;) {
      const live::TopFrame f = frame();
      for (const auto& line : live::render_lines(f, opts_)) std::cout << line << "\n";
      std::cout << std::flush;
      if (a_.once) return once_exit(f);
      if (sleep_or_signal(interval_s)) return 128 + g_signal;
    }
  }

  int run_screen(double interval_s) {
    Screen screen;
    live::History history;
    live::TopFrame f = frame();
    history.add(f);
    for (;;) {
      const auto [w, h] = Screen::size();
      Screen::draw(live::render_screen(f, opts_, history, w, h));
      if (a_.once) return once_exit(f);
      // Wait for a key or the next refresh.
      pollfd p{STDIN_FILENO, POLLIN, 0};
      const int ready = ::poll(&p, screen.keys() ? 1 : 0, static_cast<int>(interval_s * 1000));
      if (g_signal) return 128 + g_signal;
      if (ready > 0) {
        char c = 0;
        if (::read(STDIN_FILENO, &c, 1) == 1 && !key(c, f)) return exit_code::kOk;
        continue;  // redraw at once, same data
      }
      if (!opts_.paused) {
        f = frame();
        history.add(f);
      }
    }
  }

 private:
  // Handles a key; false: quit.
  bool key(char c, const live::TopFrame& f) {
    switch (c) {
      case 'q':
      case 'Q': return false;
      case 'p':
      case ' ': opts_.paused = !opts_.paused; break;
      case 's': opts_.sort = live::next(opts_.sort); break;
      case 'm': {  // the next model in the screen's order, then all again
        const auto groups = live::sorted_groups(f, opts_.sort);
        std::size_t i = 0;
        while (i < groups.size() && groups[i]->key != opts_.focus) ++i;
        opts_.focus = opts_.focus.empty()     ? (groups.empty() ? "" : groups.front()->key)
                      : i + 1 < groups.size() ? groups[i + 1]->key
                                              : "";
        break;
      }
      case '+': opts_.window_s = std::min(opts_.window_s * 2, 3600.0); break;
      case '-': opts_.window_s = std::max(opts_.window_s / 2, 5.0); break;
      default: break;
    }
    return true;
  }

  // The engine's snapshots: --scrapes, else the file beside the ledger (none without one).
  static std::string scrapes_path(const TopArgs& a) {
    if (!a.scrapes.empty()) return a.scrapes;
    return a.ledger.empty() ? std::string() : scrape::snapshots_path_for(a.ledger);
  }

  // The proxy's in-flight gauge by model, from its admin listener's /metrics; empty when it does not
  // answer (then why, in `problem` where given) or has no such gauge.
  static std::map<std::string, double> in_flight_by_model(const net::BackendUrl& admin, std::string* problem) {
    std::map<std::string, double> out;
    net::ExchangeOptions req;
    req.target = admin.target_for("/metrics");
    const auto x = net::exchange_blocking(admin, {}, std::move(req), 5);
    if (x.status != 200) {
      if (problem) *problem = answer_problem(x, admin.origin + admin.target_for("/metrics"));
      return out;
    }
    constexpr std::string_view kGauge = "modelperfobs_requests_in_flight_by_model";
    auto page = promtext::parse_exposition(x.body);
    const auto* family = page ? page->family(kGauge) : nullptr;
    if (!family) {
      if (problem)
        *problem = fmt::format("{}{} has no {} (is this the proxy's --admin-listen address?)", admin.origin,
                               admin.target_for("/metrics"), kGauge);
      return out;
    }
    for (const auto& sample : family->samples) {
      const std::string* model = promtext::find_label(sample.labels, "model");
      out[model ? *model : std::string()] += sample.value;
    }
    return out;
  }

  // --once: 1 when the lines could not be read (nothing was judged), else 0.
  static int once_exit(const live::TopFrame& f) {
    return f.lines_problem.empty() ? exit_code::kOk : exit_code::kFailed;
  }

  static bool sleep_or_signal(double s) {
    ::poll(nullptr, 0, static_cast<int>(s * 1000));
    return g_signal != 0;
  }

  void read_new() {
    if (opts_.paused) return;
    ledger::LineDecoder decoder;
    decoder.set_sink([this](ledger::LedgerRecord&& r) {
      if (!first_started_us_ || r.started_at_us < *first_started_us_) first_started_us_ = r.started_at_us;
      records_.push_back(std::move(r));
    });
    for (const auto& line : admin_ ? admin_->new_lines() : ledger_.new_lines()) decoder.line(line, ++lines_, false);
    unreadable_ += std::move(decoder).take().invalid_lines;
    if (a_.scrapes != "none" && !(a_.ledger.empty() && a_.scrapes.empty())) {
      std::string text;
      for (const auto& line : scrapes_.new_lines()) text += line + "\n";
      if (!text.empty()) {
        auto read = scrape::read_snapshots(text);
        for (auto& s : read.snapshots) snapshots_.push_back(std::move(s));
      }
    }
    // Only the window is kept (a wider one, after '+', fills as lines arrive), and at most
    // kMaxRecords lines of it: memory stays bounded at any request rate.
    const std::int64_t keep_from = SystemClock::instance().wall_us() - static_cast<std::int64_t>(opts_.window_s * 1e6);
    while (!records_.empty() && (records_.front().started_at_us < keep_from || records_.size() > kMaxRecords)) {
      records_.pop_front();
    }
    while (!snapshots_.empty() && snapshots_.front().started_at_us < keep_from) snapshots_.pop_front();
  }

  static constexpr std::size_t kMaxRecords = 500'000;
  const TopArgs& a_;
  live::TopOptions opts_;
  FollowedFile ledger_, scrapes_;
  std::optional<AdminLines> admin_;           // the lines' source when no ledger file was given
  std::optional<net::BackendUrl> admin_url_;  // the proxy's admin listener, for its gauges
  std::deque<ledger::LedgerRecord> records_;
  std::deque<scrape::Snapshot> snapshots_;
  std::uint64_t lines_ = 0, unreadable_ = 0;
  std::optional<std::int64_t> first_started_us_;  // the earliest line read: how far back the ledger goes
};

int run(const TopArgs& a) {
  auto window = parse_duration_s(a.window);
  if (!window || *window <= 0) {
    std::cerr << "modelperfobs top: --window: give a duration such as 30s or 2m\n";
    return 2;
  }
  auto interval = parse_duration_s(a.interval);
  if (!interval || *interval <= 0) {
    std::cerr << "modelperfobs top: --interval: give a duration such as 1s\n";
    return 2;
  }
  if (a.ledger.empty() && a.admin.empty()) {
    std::cerr << "modelperfobs top: give the ledger a proxy is writing, or --admin URL of its admin listener "
                 "(e.g. http://127.0.0.1:9464), or both (the lines from the file, the in-flight gauge from the "
                 "listener)\n";
    return 2;
  }
  std::optional<net::BackendUrl> admin;
  if (!a.admin.empty()) {
    auto url = net::parse_backend_url(a.admin);
    if (!url) {
      std::cerr << "modelperfobs top: --admin: " << url.error().message << "\n";
      return 2;
    }
    admin = *url;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: the wait returns at once
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  Top top(a, *window, std::move(admin));
  const bool screen = !a.plain && ::isatty(STDOUT_FILENO);
  return screen ? top.run_screen(*interval) : top.run_plain(*interval);
}

}  // namespace

std::function<int()> setup_top(CLI::App& app) {
  auto a = std::make_shared<TopArgs>();
  app.add_option("ledger", a->ledger, "the ledger a proxy is writing (followed as it grows, across rotation)");
  app.add_option("--admin", a->admin,
                 "the proxy's admin listener (http://127.0.0.1:9464): requests in flight per model from its /metrics, "
                 "and, without a ledger file, the lines from its /lines (the engine's snapshots then only with "
                 "--scrapes)");
  app.add_option("--scrapes", a->scrapes,
                 "the engine's snapshots (proxy --scrape): default the file beside the ledger; 'none' to leave them "
                 "out");
  app.add_option("--window", a->window,
                 "the last stretch of time the figures cover (+ and - change it; a wider one fills as lines arrive)")
      ->capture_default_str();
  app.add_option("--interval", a->interval, "time between refreshes")->capture_default_str();
  app.add_flag("--plain", a->plain, "plain lines, one per model per refresh, even on a terminal");
  app.add_flag("--once", a->once, "one refresh, then exit");
  app.footer(
      "Keys: q quit, p pause, s sort (req/s, TTFT p99, errors, model), m the model whose bottleneck and "
      "sparklines are shown, + and - the window. Off a terminal (or with --plain) it prints plain lines.");
  return [a] { return run(*a); };
}

}  // namespace mpo::cli
