// THE client for http and https peers (edge: Asio/Beast), used by the proxy's upstream pool, the
// load generator, the scraper, the probes and the demo. One TLS rule, one way to connect, one
// error vocabulary:
//   - https: the peer's certificate chain is verified against the system's CAs, or, when a CA
//     file is given (`--ca`, `--backend-ca`), against that PEM file instead (as curl --cacert);
//     SNI is sent and the certificate must name the URL's host. kCaFileHelp says so in --help.
//   - connect: the host is resolved once per Client and cached; TCP_NODELAY; the TLS handshake;
//     all within one deadline.
//   - failures: FailureKind (resolve, refused, unreachable, tls, timeout, closed, reset, other),
//     with a message that names the origin and, for TLS, what to do.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "core/result.hpp"
#include "net/backend_url.hpp"
#include "net/ca_rule.hpp"
#include "net/read_buffer.hpp"

namespace mpo::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

inline constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

enum class FailureKind {
  kResolve,      // the host name did not resolve
  kRefused,      // nothing listens there (connection refused)
  kUnreachable,  // other connect failures (no route, network down)
  kTls,          // the handshake failed: an unverified certificate, a wrong host name, no TLS there
  kTimeout,      // the deadline passed
  kClosed,       // the peer closed the connection (end of stream, TLS truncation)
  kReset,        // the peer reset the connection, or a write found it closed (broken pipe)
  kOther,
};
std::string_view to_string(FailureKind k);
// The kind of a read/write/connect error code.
FailureKind classify(const boost::system::error_code& ec);

struct Failure {
  FailureKind kind = FailureKind::kOther;
  boost::system::error_code ec;
  std::string message;  // names the origin; for TLS, says how to trust a private CA
};

using Clock = std::chrono::steady_clock;
Clock::time_point deadline_after(double seconds);

// One open connection, plain or TLS, with its read buffer. Operations never throw: they return
// (error_code, bytes) as Asio's as_tuple does.
class Connection {
 public:
  using Plain = beast::tcp_stream;
  using Tls = beast::ssl_stream<beast::tcp_stream>;
  using Result = std::tuple<boost::system::error_code, std::size_t>;

  explicit Connection(Plain plain) : stream_(std::in_place_type<Plain>, std::move(plain)) {}
  Connection(Plain plain, asio::ssl::context& tls) : stream_(std::in_place_type<Tls>, std::move(plain), tls) {}

  bool tls() const { return std::holds_alternative<Tls>(stream_); }
  beast::tcp_stream& tcp() {
    if (auto* p = std::get_if<Plain>(&stream_)) return *p;
    return std::get<Tls>(stream_).next_layer();
  }
  Tls* tls_stream() { return std::get_if<Tls>(&stream_); }
  ReadBuffer& buffer() { return buffer_; }
  void expires_at(Clock::time_point t) { tcp().expires_at(t); }
  // No per-operation deadline: each read and write then arms no timer (a caller that watches many
  // requests' deadlines itself, as the load generator does, closes the connection instead).
  void expires_never() { tcp().expires_never(); }
  void close();

  template <class Message>
  asio::awaitable<Result> write(Message& m) {
    return std::visit([&](auto& s) { return http::async_write(s, m, kNoThrow); }, stream_);
  }
  // Bytes already framed, in pieces (a request's head as text, then its body where it lies); the
  // pieces' bytes stay alive until the write completes.
  asio::awaitable<Result> write_bytes(std::span<const asio::const_buffer> pieces) {
    return std::visit([&](auto& s) { return asio::async_write(s, pieces, kNoThrow); }, stream_);
  }
  // Appends what the peer sends next, at most `max` bytes, to buffer(); for callers that parse it
  // themselves. The end of the stream is asio::error::eof (TLS: as the stream reports it).
  asio::awaitable<Result> read_more(std::size_t max = 16 * 1024) {
    auto result =
        co_await std::visit([&](auto& s) { return s.async_read_some(buffer_.prepare(max), kNoThrow); }, stream_);
    buffer_.commit(std::get<1>(result));
    co_return result;
  }
  template <class Parser>
  asio::awaitable<Result> read_header(Parser& p) {
    return std::visit([&](auto& s) { return http::async_read_header(s, buffer_, p, kNoThrow); }, stream_);
  }
  template <class Parser>
  asio::awaitable<Result> read_some(Parser& p) {
    return std::visit([&](auto& s) { return http::async_read_some(s, buffer_, p, kNoThrow); }, stream_);
  }
  template <class Parser>
  asio::awaitable<Result> read(Parser& p) {
    return std::visit([&](auto& s) { return http::async_read(s, buffer_, p, kNoThrow); }, stream_);
  }

 private:
  std::variant<Plain, Tls> stream_;
  ReadBuffer buffer_;
};

// Connections to one origin (an http or https URL).
class Client {
 public:
  // Loads the CA rule for an https URL; the error says which file could not be read and why.
  // `ca_option`: the flag that takes the CA file, named in the advice of a failed handshake.
  static mpo::Result<std::unique_ptr<Client>> make(asio::any_io_executor ex, BackendUrl url, std::string ca_file = {},
                                                   std::string ca_option = "--ca");

  const BackendUrl& url() const { return url_; }
  // Resolves (once), connects and, for https, completes the handshake, before `deadline`.
  asio::awaitable<std::pair<std::shared_ptr<Connection>, std::optional<Failure>>> connect(Clock::time_point deadline);
  // The connect step's failure message for an error code (for callers with their own stages).
  std::string describe(const boost::system::error_code& ec, std::string_view stage) const;

 private:
  Client(asio::any_io_executor ex, BackendUrl url, std::string ca_option)
      : ex_(std::move(ex)), url_(std::move(url)), ca_option_(std::move(ca_option)) {}
  asio::any_io_executor ex_;
  BackendUrl url_;
  std::string ca_option_;
  std::unique_ptr<asio::ssl::context> tls_;
  std::vector<asio::ip::tcp::endpoint> endpoints_;
};

// One whole exchange on a new connection that is closed afterwards: identity probes, admin
// routes, a /metrics page. `target` is sent as is (callers put the URL's base path in it).
struct Exchange {
  int status = 0;
  std::string body;
  std::optional<std::string> retry_after;  // the response's Retry-After, when it sent one
  std::optional<Failure> failure;          // set when no complete response arrived (also: a body over max_body)
};
struct ExchangeOptions {
  http::verb method = http::verb::get;
  std::string target;
  std::string body;  // sent with Content-Length when method is POST
  std::vector<std::pair<std::string, std::string>> headers;
  std::string user_agent = "modelperfobs";
  std::uint64_t max_body = 8ull << 20;
};
asio::awaitable<Exchange> exchange(Client& client, ExchangeOptions opts, Clock::time_point deadline);

// The blocking form, on an event loop of its own: for command-line code outside any loop.
Exchange exchange_blocking(const BackendUrl& url, const std::string& ca_file, ExchangeOptions opts, double timeout_s);

}  // namespace mpo::net
