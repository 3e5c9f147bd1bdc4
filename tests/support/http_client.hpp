// A small blocking HTTP/1.1 client for tests, over loopback: sends one request with
// "Connection: close", reads to EOF, records when each read arrived (so tests can time the first
// token of a stream), and decodes chunked bodies.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mpo::test {

struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;                  // lower-case names
  std::string body;                                            // de-chunked
  std::string raw;                                             // bytes as received
  std::vector<std::pair<std::int64_t, std::size_t>> arrivals;  // (steady us, raw bytes so far)
  std::int64_t sent_us = 0;                                    // steady us when the request was written
  bool complete = false;                                       // chunked body ended with its last chunk
  int interim_responses = 0;                                   // 1xx responses before the final one
  // Microseconds from sending to the arrival of the first raw byte of `needle`; -1 if absent.
  std::int64_t us_until(const std::string& needle) const;
  // The JSON payloads of the body's SSE "data:" lines.
  std::vector<std::string> sse_data() const;
};

struct HttpRequest {
  std::string method = "GET";
  std::string path = "/";
  std::string body;
  std::map<std::string, std::string> headers;
  // Close the connection after this many body bytes arrived (simulates a client that leaves).
  std::size_t disconnect_after_body_bytes = 0;
  // Close the connection as soon as the bytes received contain this text (a client that stops
  // reading at `data: [DONE]`, as many SSE clients do); "" = read to the end.
  std::string disconnect_after_text;
  // A slow client: a receive buffer this small and reads of at most this many bytes (0: 16 KiB
  // reads, the kernel's buffer).
  std::size_t read_at_most = 0;
  // Bytes sent as they are instead of a request built from the fields above (hostile requests);
  // the response is read until its Content-Length is complete or the connection closes.
  std::string raw;
};

HttpResponse http(std::uint16_t port, const HttpRequest& req, int timeout_ms = 60000);
HttpResponse http_get(std::uint16_t port, const std::string& path);
HttpResponse http_post(std::uint16_t port, const std::string& path, const std::string& body,
                       std::map<std::string, std::string> headers = {});
// POST /v1/chat/completions, closing the connection as soon as `leave_after` has arrived (a client
// that stops reading at `data: [DONE]`, or one that leaves mid-stream).
HttpResponse chat_leaving_after(std::uint16_t port, const std::string& body, const std::string& leave_after);
// POST /v1/chat/completions as JSON, closing the connection `leave_after_ms` after sending it
// whatever has arrived by then (a client that gives up waiting).
HttpResponse chat_giving_up_after(std::uint16_t port, const std::string& body, int leave_after_ms);

}  // namespace mpo::test
