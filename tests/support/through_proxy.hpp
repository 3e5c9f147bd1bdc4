// One request through a real `modelperfobs proxy` in front of a scripted backend (CannedBackend):
// the pieces the proxy tests of every API share.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/process.hpp"

namespace mpo::test {

inline const std::string kSseHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// `s` as one chunk of a chunked body.
inline std::string http_chunk(const std::string& s) {
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", s.size());
  return size + s + "\r\n";
}

// POSTs `body` to `path` through a proxy in front of the backend on `backend_port`, stops the
// proxy, and returns its ledger lines (one is expected).
inline std::vector<std::string> ledger_through(std::uint16_t backend_port, const std::string& path,
                                               const std::string& body, HttpResponse* client = nullptr,
                                               std::vector<std::string> args = {},
                                               std::map<std::string, std::string> headers = {}) {
  const std::string dir = make_temp_dir();
  Proxy proxy("http://127.0.0.1:" + std::to_string(backend_port), dir + "/ledger.jsonl", std::move(args));
  auto r = http_post(proxy.port, path, body, std::move(headers));
  if (client) *client = r;
  EXPECT_EQ(proxy.process.terminate(), 0);
  auto lines = read_lines(dir + "/ledger.jsonl");
  EXPECT_EQ(lines.size(), 1u);
  return lines;
}

}  // namespace mpo::test
