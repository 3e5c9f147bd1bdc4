// The implementation of scrape/recorder.hpp. Scrapes an engine's /metrics on a schedule inside
// another program's event loop (the proxy's `--scrape`) and appends every snapshot, failed ones
// included, to a JSONL file beside the ledger.
#include "scrape/recorder.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include "scrape/fetch.hpp"

namespace mpo::scrape {

Recorder::Recorder(Options opts)
    : opts_(std::move(opts)),
      writer_({opts_.output, opts_.fsync, 1.0, 4096}),
      stop_(std::make_shared<std::atomic<bool>>(false)) {}

Recorder::~Recorder() { stop(); }

Status Recorder::open() {
  auto url = parse_metrics_url(opts_.url);
  if (!url) return make_error(url.error(), "--scrape: " + url.error().message);
  if (auto st = writer_.open(); !st) return make_error(st.error(), "--scrape-output: " + st.error().message);
  fetcher_ = std::make_unique<Fetcher>(*url, FetchOptions{opts_.timeout_s, {}});
  return Ok{};
}

void Recorder::start(boost::asio::io_context& io) {
  if (!fetcher_) return;
  auto stop = stop_;
  boost::asio::co_spawn(io,
                        scrape_on_schedule(
                            *fetcher_, ScheduleOptions{opts_.interval_s, 0, 0},
                            [this, stop](Snapshot&& s) {
                              if (!stop->load()) writer_.submit(snapshot_json_line(s) + "\n");
                            },
                            stop),
                        boost::asio::detached);
}

void Recorder::stop() {
  if (stop_->exchange(true)) return;
  writer_.close();
}

}  // namespace mpo::scrape
