// The implementation of net/client.hpp. THE client for http and https peers (edge: Asio/Beast),
// used by the proxy's upstream pool, the load generator, the scraper, the probes and the demo.
#include "net/client.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/this_coro.hpp>

namespace mpo::net {

std::string_view to_string(FailureKind k) {
  switch (k) {
    case FailureKind::kResolve: return "resolve";
    case FailureKind::kRefused: return "refused";
    case FailureKind::kUnreachable: return "unreachable";
    case FailureKind::kTls: return "tls";
    case FailureKind::kTimeout: return "timeout";
    case FailureKind::kClosed: return "closed";
    case FailureKind::kReset: return "reset";
    case FailureKind::kOther: return "other";
  }
  return "other";
}

FailureKind classify(const boost::system::error_code& ec) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out) return FailureKind::kTimeout;
  if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::ssl::error::stream_truncated) {
    return FailureKind::kClosed;
  }
  if (ec == asio::error::connection_reset || ec == asio::error::broken_pipe) return FailureKind::kReset;
  if (ec == asio::error::connection_refused) return FailureKind::kRefused;
  if (ec == asio::error::host_unreachable || ec == asio::error::network_unreachable ||
      ec == asio::error::network_down) {
    return FailureKind::kUnreachable;
  }
  if (ec.category() == asio::error::get_ssl_category()) return FailureKind::kTls;
  return FailureKind::kOther;
}

Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void Connection::close() {
  boost::system::error_code ec;
  tcp().socket().close(ec);
  buffer_.clear();
}

mpo::Result<std::unique_ptr<Client>> Client::make(asio::any_io_executor ex, BackendUrl url, std::string ca_file,
                                                  std::string ca_option) {
  std::unique_ptr<Client> c(new Client(std::move(ex), std::move(url), std::move(ca_option)));
  if (c->url_.scheme == "https") {
    c->tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    c->tls_->set_verify_mode(asio::ssl::verify_peer);
    boost::system::error_code ec;
    if (ca_file.empty()) {
      c->tls_->set_default_verify_paths(ec);
    } else {
      c->tls_->load_verify_file(ca_file, ec);
    }
    if (ec) {
      return make_error(errc::kNetTls, fmt::format("cannot load CA certificates{}: {}",
                                                   ca_file.empty() ? std::string() : " from " + ca_file, ec.message()));
    }
  }
  return c;
}

std::string Client::describe(const boost::system::error_code& ec, std::string_view stage) const {
  switch (classify(ec)) {
    case FailureKind::kTimeout: return fmt::format("{} {}: no answer in time", url_.origin, stage);
    case FailureKind::kTls:
      return fmt::format("TLS handshake with {} failed: {} (pass {} FILE to trust a private CA)", url_.origin,
                         ec.message(), ca_option_);
    default: return fmt::format("{} {}: {}", url_.origin, stage, ec.message());
  }
}

asio::awaitable<std::pair<std::shared_ptr<Connection>, std::optional<Failure>>> Client::connect(
    Clock::time_point deadline) {
  using Out = std::pair<std::shared_ptr<Connection>, std::optional<Failure>>;
  auto fail = [&](const boost::system::error_code& ec, FailureKind kind, std::string message) {
    return Out{nullptr, Failure{kind, ec, std::move(message)}};
  };
  if (endpoints_.empty()) {
    asio::ip::tcp::resolver resolver(ex_);
    auto [rec, results] = co_await resolver.async_resolve(url_.host, std::to_string(url_.port), kNoThrow);
    if (rec) co_return fail(rec, FailureKind::kResolve, fmt::format("cannot resolve {}: {}", url_.host, rec.message()));
    for (const auto& e : results) endpoints_.push_back(e.endpoint());
  }
  beast::tcp_stream plain(ex_);
  plain.expires_at(deadline);
  auto [connect_ec, ep] = co_await plain.async_connect(endpoints_, kNoThrow);
  auto cec = connect_ec;
  if (cec && cec != asio::error::connection_refused && classify(cec) != FailureKind::kTimeout) {
    // A socket the range connect could not open (no descriptors left) comes back as "Operation
    // canceled": open one here to name the real cause (EMFILE, ENFILE, ENOBUFS).
    boost::system::error_code oec;
    asio::ip::tcp::socket probe(ex_);
    probe.open(endpoints_.front().protocol(), oec);
    if (oec) cec = oec;
  }
  if (cec) {
    const auto kind = classify(cec) == FailureKind::kTimeout   ? FailureKind::kTimeout
                      : cec == asio::error::connection_refused ? FailureKind::kRefused
                                                               : FailureKind::kUnreachable;
    co_return fail(cec, kind,
                   kind == FailureKind::kTimeout ? fmt::format("no connection to {} in time", url_.origin)
                                                 : fmt::format("cannot connect to {}: {}", url_.origin, cec.message()));
  }
  boost::system::error_code nec;
  plain.socket().set_option(asio::ip::tcp::no_delay(true), nec);
  if (!tls_) co_return Out{std::make_shared<Connection>(std::move(plain)), std::nullopt};

  auto conn = std::make_shared<Connection>(std::move(plain), *tls_);
  auto& tls = *conn->tls_stream();
  // SNI and host-name verification against the URL's host.
  if (!SSL_set_tlsext_host_name(tls.native_handle(), url_.host.c_str())) {
    const boost::system::error_code sni(static_cast<int>(::ERR_get_error()), asio::error::get_ssl_category());
    co_return fail(sni, FailureKind::kTls,
                   fmt::format("cannot send the TLS server name {}: {}", url_.host, sni.message()));
  }
  tls.set_verify_callback(asio::ssl::host_name_verification(url_.host));
  auto [hec] = co_await tls.async_handshake(asio::ssl::stream_base::client, kNoThrow);
  if (hec) {
    const auto kind = classify(hec) == FailureKind::kTimeout ? FailureKind::kTimeout : FailureKind::kTls;
    co_return fail(hec, kind, describe(hec, "TLS handshake"));
  }
  co_return Out{conn, std::nullopt};
}

asio::awaitable<Exchange> exchange(Client& client, ExchangeOptions opts, Clock::time_point deadline) {
  Exchange out;
  auto [conn, failure] = co_await client.connect(deadline);
  if (failure) {
    out.failure = std::move(failure);
    co_return out;
  }
  http::request<http::string_body> req{opts.method, opts.target, 11};
  req.set(http::field::host, client.url().host_header);
  req.set(http::field::user_agent, opts.user_agent);
  for (const auto& [name, value] : opts.headers) req.set(name, value);
  req.keep_alive(false);
  if (opts.method == http::verb::post || !opts.body.empty()) {
    req.body() = std::move(opts.body);
    req.prepare_payload();
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(opts.max_body);
  conn->expires_at(deadline);
  auto [wec, wn] = co_await conn->write(req);
  boost::system::error_code ec = wec;
  if (!ec) {
    auto [rec, rn] = co_await conn->read(parser);
    ec = rec;
  }
  conn->close();
  if (ec) {
    std::string message = ec == http::error::body_limit ? fmt::format("{}{} sent more than {} bytes",
                                                                      client.url().origin, opts.target, opts.max_body)
                                                        : client.describe(ec, "exchange");
    out.failure = Failure{classify(ec), ec, std::move(message)};
    co_return out;
  }
  out.status = static_cast<int>(parser.get().result_int());
  if (auto it = parser.get().find(http::field::retry_after); it != parser.get().end()) {
    out.retry_after = std::string(it->value());
  }
  out.body = std::move(parser.get().body());
  co_return out;
}

Exchange exchange_blocking(const BackendUrl& url, const std::string& ca_file, ExchangeOptions opts, double timeout_s) {
  asio::io_context io;
  Exchange out;
  auto client = Client::make(io.get_executor(), url, ca_file);
  if (!client) {
    out.failure = Failure{FailureKind::kTls, {}, client.error().message};
    return out;
  }
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> { out = co_await exchange(**client, std::move(opts), deadline_after(timeout_s)); },
      [](std::exception_ptr) {});
  io.run();
  return out;
}

}  // namespace mpo::net
