#include "scrape/fetch.hpp"

#include <chrono>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

#include "core/clock.hpp"

namespace mpo::scrape {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

struct Fetcher::Tls {
  asio::ssl::context ctx{asio::ssl::context::tls_client};
};

Fetcher::Fetcher(net::BackendUrl url, FetchOptions opts) : url_(std::move(url)), opts_(std::move(opts)) {
  if (url_.scheme == "https") {
    tls_ = std::make_unique<Tls>();
    tls_->ctx.set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    tls_->ctx.set_default_verify_paths(ec);
    if (!opts_.ca_file.empty()) tls_->ctx.load_verify_file(opts_.ca_file, ec);
  }
}

Fetcher::~Fetcher() = default;

std::string Fetcher::source() const { return url_.origin + target(); }

std::string Fetcher::target() const { return url_.base_path.empty() ? "/" : url_.base_path; }

Result<net::BackendUrl> parse_metrics_url(std::string_view text) {
  auto u = net::parse_backend_url(text);
  if (!u) {
    std::string message = u.error().message;
    if (auto at = message.find("--backend"); at != std::string::npos) message.replace(at, 9, "metrics URL");
    if (auto at = message.find("http://127.0.0.1:8000"); at != std::string::npos) message.insert(at + 21, "/metrics");
    return make_error(u.error().code, message);
  }
  if (u->base_path.empty()) u->base_path = "/metrics";
  return u;
}

namespace {

template <typename Stream>
asio::awaitable<boost::system::error_code> exchange(Stream& stream, const http::request<http::empty_body>& req,
                                                    http::response_parser<http::string_body>& parser) {
  auto [wec, wn] = co_await http::async_write(stream, req, kNoThrow);
  if (wec) co_return wec;
  beast::flat_buffer buf;
  auto [rec, rn] = co_await http::async_read(stream, buf, parser, kNoThrow);
  co_return rec;
}

}  // namespace

asio::awaitable<Fetcher::Fetched> Fetcher::fetch() {
  Fetched f;
  auto ex = co_await asio::this_coro::executor;
  const auto deadline = std::chrono::milliseconds(static_cast<std::int64_t>(opts_.timeout_s * 1000));
  const std::string src = source();

  http::request<http::empty_body> req{http::verb::get, target(), 11};
  req.set(http::field::host, url_.host_header);
  req.set(http::field::user_agent, "modelperfobs-scrape");
  req.set(http::field::accept, "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1");
  req.set(http::field::connection, "close");
  http::response_parser<http::string_body> parser;
  parser.body_limit(opts_.max_body_bytes);

  auto fail = [&](ScrapeStatus status, std::string message) {
    f.status = status;
    f.error = std::move(message);
  };

  tcp::resolver resolver(ex);
  auto [rec, endpoints] = co_await resolver.async_resolve(url_.host, std::to_string(url_.port), kNoThrow);
  if (rec) {
    fail(ScrapeStatus::kUnreachable, fmt::format("cannot resolve {}: {}", url_.host, rec.message()));
    co_return f;
  }
  beast::tcp_stream plain(ex);
  plain.expires_after(deadline);
  auto [cec, ep] = co_await plain.async_connect(endpoints, kNoThrow);
  if (cec) {
    if (cec == beast::error::timeout) fail(ScrapeStatus::kTimeout, fmt::format("no connection to {} within {} s", url_.origin, opts_.timeout_s));
    else fail(ScrapeStatus::kUnreachable, fmt::format("cannot connect to {}: {}", url_.origin, cec.message()));
    co_return f;
  }
  plain.socket().set_option(tcp::no_delay(true));
  boost::system::error_code ec;
  if (tls_) {
    beast::ssl_stream<beast::tcp_stream> tls(std::move(plain), tls_->ctx);
    if (!SSL_set_tlsext_host_name(tls.native_handle(), url_.host.c_str())) {
      fail(ScrapeStatus::kUnreachable, "cannot set TLS SNI");
      co_return f;
    }
    tls.set_verify_callback(asio::ssl::host_name_verification(url_.host));
    auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, kNoThrow);
    if (hec) {
      fail(hec == beast::error::timeout ? ScrapeStatus::kTimeout : ScrapeStatus::kUnreachable,
           fmt::format("TLS handshake with {} failed: {} (pass --ca FILE for a private CA)", url_.origin, hec.message()));
      co_return f;
    }
    ec = co_await exchange(tls, req, parser);
  } else {
    ec = co_await exchange(plain, req, parser);
  }
  if (ec) {
    if (ec == beast::error::timeout) fail(ScrapeStatus::kTimeout, fmt::format("{} did not answer within {} s", src, opts_.timeout_s));
    else if (ec == http::error::body_limit) fail(ScrapeStatus::kUnreachable, fmt::format("{} sent more than {} bytes", src, opts_.max_body_bytes));
    else fail(ScrapeStatus::kUnreachable, fmt::format("reading {} failed: {}", src, ec.message()));
    co_return f;
  }
  auto& res = parser.get();
  f.http_status = static_cast<int>(res.result_int());
  f.body = std::move(res.body());
  if (res.result_int() < 200 || res.result_int() > 299) {
    fail(ScrapeStatus::kHttpError, fmt::format("{} answered HTTP {}", src, res.result_int()));
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
                                         std::function<void(Snapshot&&)> sink, std::shared_ptr<std::atomic<bool>> stop) {
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
      s.error = fmt::format("the scrape ended {:.1f} ms after the next one was due; its values describe a later moment "
                            "than scheduled", static_cast<double>(elapsed - offset - interval_us) / 1e3);
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
