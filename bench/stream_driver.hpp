// Drives many HTTP streams from one thread with epoll(7), for benchmarks: opens N connections at
// once, sends one request on each, and records when each stream's events arrive.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mpo::bench {

struct StreamRecord {
  std::int64_t sent_us = 0;
  std::int64_t first_content_us = -1;    // first text event (chat, Responses or Messages)
  std::vector<std::int64_t> content_us;  // every content event's arrival
  bool done = false;                     // saw data: [DONE] (or response.completed, message_stop)
  std::string observation_id;            // from the X-Fak-Observation-ID response header, if any
};

struct DriveResult {
  std::vector<StreamRecord> streams;
  double wall_s = 0;
  long events = 0;
  int completed = 0;
};

std::int64_t now_us();

// `on_all_started` runs once, when every stream has received its first content event.
// `id_prefix` non-empty: stream i sends X-Fak-Observation-ID: <id_prefix><i>. `path`: the API.
DriveResult drive_streams(std::uint16_t port, int n, const std::string& json_body,
                          const std::function<void()>& on_all_started = {}, const std::string& id_prefix = "",
                          int timeout_s = 300, const std::string& path = "/v1/chat/completions");

// As drive_streams, with each of the `n` connections kept alive for `per_connection` requests one
// after the other (an SDK client's pattern): the next is sent once the last response is read whole.
// Stream i * per_connection + k is connection i's k-th request.
DriveResult drive_kept_streams(std::uint16_t port, int n, int per_connection, const std::string& json_body,
                               const std::function<void()>& on_all_started = {}, const std::string& id_prefix = "",
                               int timeout_s = 300, const std::string& path = "/v1/chat/completions");

// One persistent (keep-alive) connection, as an SDK client keeps: streams one request at a time.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(std::uint16_t port);
  ~KeepAliveClient();
  KeepAliveClient(const KeepAliveClient&) = delete;
  KeepAliveClient& operator=(const KeepAliveClient&) = delete;
  StreamRecord stream(const std::string& json_body, const std::string& observation_id = "");

 private:
  int fd_ = -1;
};

// Resident set (current) and its peak, KiB, of a process and its direct children.
struct Rss {
  long current_kib = 0;
  long peak_kib = 0;
};
Rss rss_of(int pid);
// CPU seconds of a process and its direct children (live threads, from schedstat).
double cpu_seconds_of(int pid);

// Raises this process's open-file limit to its hard limit (children inherit it).
void raise_fd_limit();

}  // namespace mpo::bench
