#include "support/http_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <stdexcept>

namespace mpo::test {
namespace {

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Decodes a chunked body; returns whether the terminating zero-size chunk was seen.
bool dechunk(const std::string& in, std::string& out) {
  std::size_t pos = 0;
  while (pos < in.size()) {
    const auto eol = in.find("\r\n", pos);
    if (eol == std::string::npos) return false;
    const std::size_t size = std::stoul(in.substr(pos, eol - pos), nullptr, 16);
    if (size == 0) return true;
    if (eol + 2 + size > in.size()) {
      out += in.substr(eol + 2);
      return false;
    }
    out += in.substr(eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return false;
}

}  // namespace

std::int64_t HttpResponse::us_until(const std::string& needle) const {
  const auto at = raw.find(needle);
  if (at == std::string::npos) return -1;
  for (const auto& [t, total] : arrivals) {
    if (total > at) return t - sent_us;
  }
  return -1;
}

std::vector<std::string> HttpResponse::sse_data() const {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const auto end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    out.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end + 2;
  }
  return out;
}

HttpResponse http(std::uint16_t port, const HttpRequest& req, int timeout_ms) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (req.read_at_most > 0) {  // before connect: the window the peer is offered follows it
    const int size = static_cast<int>(req.read_at_most);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    throw std::runtime_error("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::string head = req.method + " " + req.path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                     "\r\nConnection: close\r\n";
  bool has_type = false;
  for (const auto& [k, v] : req.headers) {
    head += k + ": " + v + "\r\n";
    std::string lk = k;
    std::transform(lk.begin(), lk.end(), lk.begin(), [](unsigned char c) { return std::tolower(c); });
    has_type = has_type || lk == "content-type";
  }
  if (!req.body.empty() && !has_type) head += "Content-Type: application/json\r\n";
  if (!req.body.empty() || req.method == "POST") head += "Content-Length: " + std::to_string(req.body.size()) + "\r\n";
  head += "\r\n" + req.body;
  if (!req.raw.empty()) head = req.raw;
  HttpResponse res;
  res.sent_us = now_us();
  for (std::size_t off = 0; off < head.size();) {
    const ssize_t n = send(fd, head.data() + off, head.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      throw std::runtime_error("send failed");
    }
    off += static_cast<std::size_t>(n);
  }
  const std::int64_t deadline = res.sent_us + static_cast<std::int64_t>(timeout_ms) * 1000;
  std::size_t body_start = std::string::npos;
  for (;;) {
    const auto left = (deadline - now_us()) / 1000;
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[16384];
    const ssize_t n = recv(fd, buf, req.read_at_most > 0 ? std::min(sizeof buf, req.read_at_most) : sizeof buf, 0);
    if (n <= 0) break;
    res.raw.append(buf, static_cast<std::size_t>(n));
    res.arrivals.emplace_back(now_us(), res.raw.size());
    if (body_start == std::string::npos) {
      if (auto e = res.raw.find("\r\n\r\n"); e != std::string::npos) body_start = e + 4;
    }
    if (req.disconnect_after_body_bytes > 0 && body_start != std::string::npos &&
        res.raw.size() - body_start >= req.disconnect_after_body_bytes) {
      break;
    }
    if (!req.disconnect_after_text.empty() && body_start != std::string::npos &&
        res.raw.find(req.disconnect_after_text, body_start) != std::string::npos) {
      break;
    }
    if (!req.raw.empty() && body_start != std::string::npos && res.raw.compare(0, 10, "HTTP/1.1 1") != 0) {
      std::string lower_head = res.raw.substr(0, body_start);
      std::transform(lower_head.begin(), lower_head.end(), lower_head.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      const auto cl = lower_head.find("\r\ncontent-length:");
      if (cl != std::string::npos && res.raw.size() - body_start >= std::stoull(lower_head.substr(cl + 17))) break;
    }
  }
  close(fd);
  if (body_start == std::string::npos) return res;
  std::size_t head_start = 0;
  while (res.raw.compare(head_start, 10, "HTTP/1.1 1") == 0) {  // interim 1xx responses
    ++res.interim_responses;
    head_start = body_start;
    const auto e = res.raw.find("\r\n\r\n", head_start);
    if (e == std::string::npos) return res;
    body_start = e + 4;
  }
  const std::string head_text = res.raw.substr(head_start, body_start - head_start);
  res.status = std::stoi(head_text.substr(9, 3));
  std::size_t pos = head_text.find("\r\n") + 2;
  while (pos < head_text.size()) {
    const auto eol = head_text.find("\r\n", pos);
    if (eol == pos || eol == std::string::npos) break;
    const std::string line = head_text.substr(pos, eol - pos);
    const auto colon = line.find(':');
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    const auto value = line.find_first_not_of(' ', colon + 1);  // llama.cpp sends empty values
    res.headers[name] = value == std::string::npos ? std::string() : line.substr(value);
    pos = eol + 2;
  }
  const std::string payload = res.raw.substr(body_start);
  if (res.headers["transfer-encoding"] == "chunked") {
    res.complete = dechunk(payload, res.body);
  } else {
    res.body = payload;
    res.complete = true;
  }
  return res;
}

HttpResponse http_get(std::uint16_t port, const std::string& path) {
  HttpRequest r;
  r.path = path;
  return http(port, r);
}

HttpResponse http_post(std::uint16_t port, const std::string& path, const std::string& body,
                       std::map<std::string, std::string> headers) {
  HttpRequest r;
  r.method = "POST";
  r.path = path;
  r.body = body;
  r.headers = std::move(headers);
  return http(port, r);
}

HttpResponse chat_leaving_after(std::uint16_t port, const std::string& body, const std::string& leave_after) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.body = body;
  r.disconnect_after_text = leave_after;
  return http(port, r);
}

HttpResponse chat_giving_up_after(std::uint16_t port, const std::string& body, int leave_after_ms) {
  HttpRequest r;
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.headers = {{"Content-Type", "application/json"}};
  r.body = body;
  return http(port, r, leave_after_ms);
}

}  // namespace mpo::test
