// Scrapes an engine's /metrics on a schedule inside another program's event loop (the proxy's
// `--scrape`) and appends every snapshot, failed ones included, to a JSONL file beside the ledger.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/result.hpp"
#include "ledger/writer.hpp"
#include "scrape/snapshot.hpp"

namespace boost::asio {
class io_context;
}

namespace mpo::scrape {

class Fetcher;

class Recorder {
 public:
  struct Options {
    std::string url;
    double interval_s = 1.0;
    double timeout_s = 5.0;
    std::string output;
    ledger::FsyncPolicy fsync = ledger::FsyncPolicy::kInterval;
  };
  explicit Recorder(Options opts);
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  Status open();                            // checks the URL, opens the output
  void start(boost::asio::io_context& io);  // first scrape at once, then every interval
  void stop();                              // no snapshot after this; flushes and closes the file
  void request_reopen() { writer_.request_reopen(); }
  std::uint64_t snapshots_written() const { return writer_.lines_written(); }
  const std::string& output() const { return opts_.output; }

 private:
  Options opts_;
  ledger::LedgerWriter writer_;
  std::unique_ptr<Fetcher> fetcher_;
  std::shared_ptr<std::atomic<bool>> stop_;
};

}  // namespace mpo::scrape
