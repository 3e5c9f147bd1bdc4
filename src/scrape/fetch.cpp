// The implementation of scrape/fetch.hpp. GET an engine's /metrics over http or https (net::Client:
// verified TLS, SNI), with one deadline for the whole exchange.
#include "scrape/fetch.hpp"

#include <fmt/format.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <optional>

#include "core/clock.hpp"
#include "net/client.hpp"

namespace mpo::scrape {

namespace asio = boost::asio;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

Fetcher::Fetcher(net::BackendUrl url, FetchOptions opts) : url_(std::move(url)), opts_(std::move(opts)) {}

Fetcher::~Fetcher() = default;

std::string Fetcher::source() const { return url_.origin + target(); }

std::string Fetcher::target() const { return url_.base_path.empty() ? "/" : url_.base_path; }

Result<net::BackendUrl> parse_metrics_url(std::string_view text) {
  auto u = net::parse_backend_url(text, "metrics URL", "http://127.0.0.1:8000/metrics");
  if (!u) return u.error();
  if (u->base_path.empty()) u->base_path = "/metrics";
  return u;
}

asio::awaitable<Fetcher::Fetched> Fetcher::fetch() {
  Fetched f;
  auto ex = co_await asio::this_coro::executor;
  if (!client_ || client_executor_ != ex) {  // one client per event loop the fetcher runs on
    auto made = net::Client::make(ex, url_, opts_.ca_file);
    if (!made) {
      f.status = ScrapeStatus::kUnreachable;
      f.error = made.error().message;
      co_return f;
    }
    client_ = std::move(*made);
    client_executor_ = ex;
  }
  net::ExchangeOptions req;
  req.target = target();
  req.user_agent = "modelperfobs-scrape";
  req.headers = {{"Accept", "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"}};
  req.max_body = opts_.max_body_bytes;
  auto x = co_await net::exchange(*client_, std::move(req), net::deadline_after(opts_.timeout_s));
  if (x.failure) {
    const bool timed_out = x.failure->kind == net::FailureKind::kTimeout;
    f.status = timed_out ? ScrapeStatus::kTimeout : ScrapeStatus::kUnreachable;
    f.error = timed_out ? fmt::format("{} did not answer within {} s", source(), opts_.timeout_s) : x.failure->message;
    co_return f;
  }
  f.http_status = x.status;
  f.body = std::move(x.body);
  if (x.status < 200 || x.status > 299) {
    f.status = ScrapeStatus::kHttpError;
    f.error = fmt::format("{} answered HTTP {}", source(), x.status);
  }
  co_return f;
}

asio::awaitable<Snapshot> Fetcher::scrape(std::uint64_t seq, std::int64_t scheduled_at_us) {
  const Clock& clock = SystemClock::instance();
  Snapshot s;
  s.seq = seq;
  s.source = source();
  s.scheduled_at_us = scheduled_at_us;
  s.started_at_us = clock.wall_us();
  Fetched f = co_await fetch();
  s.ended_at_us = clock.wall_us();
  s.http_status = f.http_status;
  if (f.status != ScrapeStatus::kOk) {
    s.status = f.status;
    s.error = std::move(f.error);
    if (f.status == ScrapeStatus::kHttpError) s.bytes = f.body.size();
    co_return s;
  }
  absorb_body(s, f.body);
  co_return s;
}

asio::awaitable<void> scrape_on_schedule(Fetcher& fetcher, ScheduleOptions schedule,
                                         std::function<void(Snapshot&&)> sink,
                                         std::shared_ptr<std::atomic<bool>> stop) {
  const Clock& clock = SystemClock::instance();
  auto ex = co_await asio::this_coro::executor;
  asio::steady_timer timer(ex);
  const auto interval_us = static_cast<std::int64_t>(schedule.interval_s * 1e6);
  const std::int64_t start_steady = clock.steady_us();
  const std::int64_t start_wall = clock.wall_us();
  std::uint64_t seq = 0;
  std::int64_t slot = 0;
  while (!stop->load()) {
    if (schedule.count && seq >= schedule.count) break;
    const std::int64_t offset = slot * interval_us;
    if (schedule.duration_s > 0 && offset > static_cast<std::int64_t>(schedule.duration_s * 1e6)) break;
    const std::int64_t wait = start_steady + offset - clock.steady_us();
    if (wait > 0) {
      timer.expires_after(std::chrono::microseconds(wait));
      co_await timer.async_wait(kNoThrow);
      if (stop->load()) break;
    }
    Snapshot s = co_await fetcher.scrape(++seq, start_wall + offset);
    const std::int64_t elapsed = clock.steady_us() - start_steady;
    if (s.status == ScrapeStatus::kOk && interval_us > 0 && elapsed > offset + interval_us) {
      s.status = ScrapeStatus::kStale;
      s.error = fmt::format(
          "the scrape ended {:.1f} ms after the next one was due; its values describe a later moment "
          "than scheduled",
          static_cast<double>(elapsed - offset - interval_us) / 1e3);
    }
    sink(std::move(s));
    // The next slot that has not begun yet: a slow scrape skips slots instead of bunching them.
    slot = interval_us > 0 ? std::max(slot + 1, (clock.steady_us() - start_steady) / interval_us + 1) : slot + 1;
  }
}

void run_scrapes(Fetcher& fetcher, ScheduleOptions schedule, std::function<void(Snapshot&&)> sink) {
  asio::io_context io;
  auto stop = std::make_shared<std::atomic<bool>>(false);
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) stop->store(true);
    io.stop();
  });
  asio::co_spawn(io, scrape_on_schedule(fetcher, schedule, std::move(sink), stop),
                 [&](std::exception_ptr) { signals.cancel(); });
  io.run();
}

}  // namespace mpo::scrape
