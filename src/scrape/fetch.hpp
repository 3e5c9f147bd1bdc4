// GET an engine's /metrics over http or https (net::Client: verified TLS, SNI), with one deadline
// for the whole exchange. The edge of the scrape module: the only file here that includes Asio/Beast.
#pragma once

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "net/backend_url.hpp"

namespace mpo::net {
class Client;
}
#include "scrape/snapshot.hpp"

namespace mpo::scrape {

struct FetchOptions {
  double timeout_s = 5.0;
  std::string ca_file;                         // CAs for https instead of the system's (net/client.hpp)
  std::uint64_t max_body_bytes = 64ull << 20;  // a larger /metrics is refused
};

class Fetcher {
 public:
  Fetcher(net::BackendUrl url, FetchOptions opts);
  ~Fetcher();
  Fetcher(const Fetcher&) = delete;
  Fetcher& operator=(const Fetcher&) = delete;

  // One scrape: fills started/ended times, http status, status and error, and the parsed body.
  boost::asio::awaitable<Snapshot> scrape(std::uint64_t seq, std::int64_t scheduled_at_us);
  // One GET, the body unparsed (an exporter page read for one family, such as DCGM's energy).
  struct Fetched {
    ScrapeStatus status = ScrapeStatus::kOk;  // kOk, kHttpError, kUnreachable or kTimeout
    std::optional<int> http_status;
    std::string body;
    std::string error;
  };
  boost::asio::awaitable<Fetched> fetch();
  const net::BackendUrl& url() const { return url_; }
  std::string source() const;  // the full URL scraped
  std::string target() const;  // the request target: the URL's path

 private:
  net::BackendUrl url_;
  FetchOptions opts_;
  std::unique_ptr<net::Client> client_;
  boost::asio::any_io_executor client_executor_;
};

struct ScheduleOptions {
  double interval_s = 1.0;
  std::uint64_t count = 0;  // 0: no limit
  double duration_s = 0;    // 0: no limit
};

// Scrapes on a fixed schedule (slot k starts at start + k * interval; a slot missed by a slow
// scrape is skipped, not bunched), handing each snapshot to `sink`. A snapshot that ended after
// the next slot began is marked stale. Returns when count or duration is reached or `stop` is set.
boost::asio::awaitable<void> scrape_on_schedule(Fetcher& fetcher, ScheduleOptions schedule,
                                                std::function<void(Snapshot&&)> sink,
                                                std::shared_ptr<std::atomic<bool>> stop);

// The blocking form for the CLI: its own event loop; SIGINT/SIGTERM end it at once (a scrape in
// flight is abandoned; every snapshot already handed to `sink` stays).
void run_scrapes(Fetcher& fetcher, ScheduleOptions schedule, std::function<void(Snapshot&&)> sink);

// Parses --url: a bare origin gets the path /metrics.
Result<net::BackendUrl> parse_metrics_url(std::string_view text);

}  // namespace mpo::scrape
