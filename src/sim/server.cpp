// The implementation of sim/server.hpp. `modelperfobs simulate`: the HTTP shell around the engine
// (edge: Asio/Beast, one thread).
#include "sim/server.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "core/uuid.hpp"
#include "otel/config.hpp"
#include "otel/engine_span.hpp"
#include "otel/exporter.hpp"
#include "sim/engine.hpp"
#include "sim/openai_api.hpp"
#include "sim/request_plan.hpp"
#include "sim/response_store.hpp"
#include "sim/scenario.hpp"
#include "sim/truth.hpp"
#include "sim/vllm_metrics.hpp"

namespace mpo::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;
constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
using Clock = std::chrono::steady_clock;
// --stream-end llamacpp: how far apart [DONE], the chunked terminator and the close come.
constexpr auto kLlamaCppTerminatorGap = std::chrono::milliseconds(5);
constexpr auto kLlamaCppCloseDelay = std::chrono::milliseconds(2);
// --stream-end llamacpp: requests a connection serves before llama.cpp closes it (cpp-httplib's
// keep-alive max count, b10309).
constexpr int kLlamaCppMaxRequests = 100;

// Where the engine's output for one sequence of a client request (one choice) waits for its
// connection to write it. The choices of one request share the timer their connection waits on.
struct Sink {
  explicit Sink(asio::steady_timer& waker) : notify(&waker) {}
  std::deque<Emission> pending;
  std::vector<TokenId> output;  // every token generated, in order (a stored response's own)
  std::optional<FinishedRequest> finished;
  asio::steady_timer* notify;
  TruthContext truth;
  // A streamed response's truth line waits until its tokens are written (first_token_sent_at),
  // and is written before the last chunk, so a client that saw [DONE] finds its line.
  bool defer_truth = false;
  bool truth_pending = false;
  bool started = false;  // the engine scheduled the request (a llama.cpp slot started it)
  void wake() { notify->cancel(); }
};

class Simulator {
 public:
  Simulator(asio::io_context& io, const Profile& profile, const ServerOptions& opts)
      : io_(io),
        profile_(profile),
        opts_(opts),
        engine_(profile.engine),
        scenario_(profile_, opts.seed),
        acceptor_(io),
        step_timer_(io),
        wake_timer_(io, Clock::time_point::max()),
        start_(read_clocks_together()),
        origin_(start_.steady),
        wall_origin_us_(start_.wall_us()),
        ids_(opts.seed == 0 ? 0 : opts.seed ^ 0x1d5ULL) {}

  ~Simulator() {
    if (truth_ != nullptr) std::fclose(truth_);
  }

  bool open(std::string& error) {
    if (!opts_.otlp_traces_endpoint.empty()) {
      otel::ExportFlags flags;
      flags.traces_endpoint = opts_.otlp_traces_endpoint;
      flags.metrics = false;
      flags.default_service_name = "modelperfobs-simulate";
      auto config = otel::resolve_export_config(
          flags,
          [](std::string_view name) -> std::optional<std::string> {
            const char* v = std::getenv(std::string(name).c_str());
            return v ? std::optional<std::string>(v) : std::nullopt;
          },
          "sim", fmt::format("simulate:{}", getpid()));
      if (!config) {
        error = config.error().message;
        return false;
      }
      otel::Origin origin{config->resource, "modelperfobs-simulate", ""};
      exporter_ = std::make_unique<otel::Exporter>(std::move(*config), std::move(origin));
      if (auto st = exporter_->start(); !st) {
        error = st.error().message;
        return false;
      }
    }
    if (!opts_.truth_path.empty()) {
      const std::filesystem::path parent = std::filesystem::path(opts_.truth_path).parent_path();
      std::error_code mkdir_ec;
      if (!parent.empty()) std::filesystem::create_directories(parent, mkdir_ec);
      truth_ = std::fopen(opts_.truth_path.c_str(), "a");
      if (truth_ == nullptr) {
        error = fmt::format("cannot open truth file '{}' for appending: {}", opts_.truth_path, std::strerror(errno));
        return false;
      }
    }
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(opts_.host, ec);
    if (ec) {
      error = fmt::format("invalid listen address '{}': {}", opts_.host, ec.message());
      return false;
    }
    const tcp::endpoint ep(addr, opts_.port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec && opts_.reuse_port) {
      const int on = 1;
      if (::setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0)
        ec.assign(errno, boost::system::system_category());
    }
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      error = fmt::format(
          "cannot listen on {}:{}: {} (is the port in use? pass --listen "
          "127.0.0.1:0 for any free port)",
          opts_.host, opts_.port, ec.message());
      return false;
    }
    return true;
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void start() {
    asio::co_spawn(io_, accept_loop(), asio::detached);
    asio::co_spawn(io_, drive(), asio::detached);
  }

  void begin_shutdown() {
    if (stopping_) return;
    stopping_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    for (const auto& f : scenario_.set(Scenario::kNormal, now_s(), engine_)) record_finished(f, nullptr);
    asio::co_spawn(io_, drain(), asio::detached);
  }

 private:
  double now_s() const { return std::chrono::duration<double>(Clock::now() - origin_).count(); }
  Clock::time_point at(double t) const {
    return origin_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(t));
  }
  void wake_engine() { wake_timer_.cancel(); }

  awaitable<void> drain() {
    asio::steady_timer t(io_);
    const double deadline = now_s() + opts_.shutdown_grace_s;
    // In-flight requests finish in the engine, then their connections write the last bytes.
    while ((engine_.num_active() > 0 || !sinks_.empty()) && now_s() < deadline) {
      t.expires_after(std::chrono::milliseconds(20));
      co_await t.async_wait(kNoThrow);
    }
    if (truth_ != nullptr) std::fflush(truth_);
    if (exporter_) exporter_->stop(5.0);
    io_.stop();
  }

  // The engine loop: step while there is work, sleeping until each step's end; otherwise wait to
  // be woken by an arrival, an abort, a scenario change or a deferred request becoming ready.
  awaitable<void> drive() {
    for (;;) {
      const double now = now_s();
      scenario_.tick(now, engine_);
      if (engine_.has_work(now)) {
        StepResult r = engine_.step(now);
        if (opts_.llamacpp_head_and_timings) note_started();
        if (r.scheduled_tokens > 0) {
          step_timer_.expires_at(at(r.end_s));
          co_await step_timer_.async_wait(kNoThrow);
          deliver(r);
          continue;
        }
      }
      std::optional<double> next = engine_.next_deferred_ready_s();
      if (scenario_.wants_ticks()) next = std::min(next.value_or(now + 0.1), now + 0.1);
      wake_timer_.expires_at(next ? at(*next) : Clock::time_point::max());
      co_await wake_timer_.async_wait(kNoThrow);
    }
  }

  // Wakes the streams whose requests the step just scheduled: as llama.cpp, they send their head
  // when a slot starts them, at the step's start.
  void note_started() {
    for (auto& [id, sink] : sinks_) {
      if (!sink->started && engine_.cached_prompt_tokens(id).has_value()) {
        sink->started = true;
        sink->wake();
      }
    }
  }

  void deliver(StepResult& r) {
    for (auto& e : r.emissions) {
      if (auto it = sinks_.find(e.id); it != sinks_.end()) {
        it->second->output.push_back(e.token);
        it->second->pending.push_back(std::move(e));
      }
    }
    for (const auto& f : r.finished) {
      scenario_.on_finished(f);
      auto it = sinks_.find(f.id);
      Sink* sink = it != sinks_.end() ? it->second : nullptr;
      record_finished(f, sink);
    }
    for (const auto& e : r.emissions) {
      if (auto it = sinks_.find(e.id); it != sinks_.end()) it->second->wake();
    }
  }

  void record_finished(const FinishedRequest& f, Sink* sink) {
    if (sink != nullptr) {
      sink->finished = f;
      sink->wake();
      if (sink->defer_truth) {
        sink->truth_pending = true;
        return;
      }
    }
    write_truth(f, sink);
  }

  // The deferred truth line of a streamed response, once (before the last chunk or as the
  // connection ends, whichever comes first).
  void flush_truth(Sink& sink) {
    if (!sink.truth_pending) return;
    sink.truth_pending = false;
    write_truth(*sink.finished, &sink);
  }

  void write_truth(const FinishedRequest& f, const Sink* sink) {
    if (exporter_ && sink != nullptr) export_span(f, sink->truth);
    if (truth_ == nullptr) return;
    TruthContext ctx = sink != nullptr ? sink->truth : TruthContext{};
    ctx.wall_origin_us = wall_origin_us_;
    ctx.model = profile_.model;
    const std::string line = render_truth_line(f, ctx);
    if (std::fwrite(line.data(), 1, line.size(), truth_) != line.size() || std::fflush(truth_) != 0) {
      if (!truth_error_reported_) {
        std::cerr << "modelperfobs simulate: writing the truth file failed: " << std::strerror(errno)
                  << " (serving continues; later truth lines may be lost)\n";
        truth_error_reported_ = true;
      }
    }
  }

  awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor_.async_accept(kNoThrow);
      if (ec) {
        if (ec == asio::error::operation_aborted || stopping_) co_return;
        continue;  // e.g. EMFILE: keep serving the connections we have
      }
      socket.set_option(tcp::no_delay(true), ec);
      asio::co_spawn(io_, session(beast::tcp_stream(std::move(socket))), asio::detached);
    }
  }

  using Request = http::request<http::string_body>;
  using Response = http::response<http::string_body>;

  static Response make_response(const Request& req, http::status status, std::string body,
                                std::string_view content_type = "application/json") {
    Response res(status, req.version());
    res.set(http::field::server, "modelperfobs-simulate");
    res.set(http::field::content_type, content_type);
    if (auto it = req.find("X-Request-Id"); it != req.end()) res.set("X-Request-Id", it->value());
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
  }

  Response error_response(const Request& req, http::status status, std::string_view type, std::string_view message,
                          std::string_view param = {}) {
    return make_response(req, status, render_error(static_cast<int>(status), type, message, param));
  }

  // An error in the shape of the endpoint's API: Anthropic's for /v1/messages, OpenAI's otherwise.
  Response api_error(const Request& req, Endpoint endpoint, http::status status, std::string_view type,
                     std::string_view message, std::string_view param = {}) {
    if (endpoint != Endpoint::kMessages) return error_response(req, status, type, message, param);
    const std::string_view anthropic_type = status == http::status::not_found               ? "not_found_error"
                                            : status == http::status::internal_server_error ? "api_error"
                                                                                            : "invalid_request_error";
    return make_response(req, status, render_messages_error(anthropic_type, message));
  }

  awaitable<void> session(beast::tcp_stream stream) {
    beast::flat_buffer buffer;
    // Between requests, wait for the next one's first bytes at most the keep-alive time, then
    // close without a word, as uvicorn does (vLLM's and SGLang's server): a client or proxy that
    // reuses the connection later finds it closed. llama.cpp's cpp-httplib waits as long for a new
    // connection's first request too (measured against b10309: an unused connection closed 5.0 s
    // after it opened); uvicorn arms its wait only when a response completes.
    const double keep_alive = opts_.keep_alive_timeout_s;
    int served = 0;
    for (bool answered = false;; answered = true) {
      if (answered && keep_alive <= 0 && buffer.size() == 0) break;
      if ((answered || opts_.llamacpp_head_and_timings) && keep_alive > 0 && buffer.size() == 0) {
        stream.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(keep_alive)));
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kNoThrow);
        if (ec) break;  // timed out (the stream closed the socket), or the client left
        buffer.commit(n);
      }
      http::request_parser<http::string_body> parser;
      parser.body_limit(64 * 1024 * 1024);
      stream.expires_after(std::chrono::seconds(300));
      auto [ec, n] = co_await http::async_read(stream, buffer, parser, kNoThrow);
      if (ec) break;  // closed, timed out, or unparsable: nothing to answer
      Request req = parser.release();
      // llama.cpp answers a connection's 100th request with `Connection: close` and closes it
      // (measured against b10309; the 99 before say `Keep-Alive: timeout=5, max=100`).
      if (opts_.llamacpp_stream_end && ++served == kLlamaCppMaxRequests) req.keep_alive(false);
      bool keep = req.keep_alive();
      std::string failure;
      try {
        keep = co_await handle(stream, req);
      } catch (const std::exception& e) {
        // The per-request handler is one of the two places exceptions are caught.
        failure = e.what();
      }
      if (!failure.empty()) {
        auto res = error_response(req, http::status::internal_server_error, "InternalServerError",
                                  fmt::format("simulator error: {}", failure));
        stream.expires_after(std::chrono::seconds(30));
        co_await http::async_write(stream, res, kNoThrow);
        keep = false;
      }
      if (!keep || stopping_) break;
    }
    boost::system::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
  }

  // llama.cpp's Keep-Alive header (cpp-httplib: its keep-alive wait and its 100 requests a
  // connection), on every response it keeps the connection after.
  std::string llamacpp_keep_alive() const {
    return fmt::format("timeout={}, max={}", static_cast<long>(std::ceil(opts_.keep_alive_timeout_s)),
                       kLlamaCppMaxRequests);
  }

  awaitable<bool> write(beast::tcp_stream& stream, Response res) {
    if (opts_.llamacpp_stream_end && res.keep_alive()) res.set(http::field::keep_alive, llamacpp_keep_alive());
    stream.expires_after(std::chrono::seconds(60));
    auto [ec, n] = co_await http::async_write(stream, res, kNoThrow);
    co_return !ec && res.keep_alive();
  }

  // Returns whether the connection may be kept open.
  awaitable<bool> handle(beast::tcp_stream& stream, Request& req) {
    const auto url = boost::urls::parse_origin_form(req.target());
    if (!url)
      co_return co_await write(
          stream, error_response(req, http::status::bad_request, "BadRequestError", "invalid request target"));
    const std::string path(url->path());
    const bool get = req.method() == http::verb::get;
    const bool post = req.method() == http::verb::post;

    if (const auto endpoint = endpoint_of_path(path)) {
      if (!post)
        co_return co_await write(stream,
                                 error_response(req, http::status::method_not_allowed, "MethodNotAllowed", "use POST"));
      co_return co_await completion(stream, req, *endpoint);
    }
    if (path == "/v1/models" && get)
      co_return co_await write(stream, make_response(req, http::status::ok,
                                                     render_models(profile_.model, wall_origin_us_ / 1'000'000,
                                                                   opts_.llamacpp_head_and_timings ? "llamacpp"
                                                                   : opts_.sglang_server_info      ? "sglang"
                                                                                                   : "vllm",
                                                                   profile_.engine.max_model_len)));
    if (path == "/metrics" && get) {
      MetricsContext ctx{profile_.model, now_s(), wall_origin_us_ / 1e6, wall_origin_us_ / 1e6};
      co_return co_await write(stream, make_response(req, http::status::ok, render_vllm_metrics(engine_, ctx),
                                                     "text/plain; version=0.0.4; charset=utf-8"));
    }
    if (path == "/tokenize" && post) {  // vLLM's tokenizer route (sweep fits prompt lengths with it)
      auto out = render_tokenize(req.body(), profile_.engine.max_model_len);
      if (!out) {
        co_return co_await write(
            stream, error_response(req, http::status::bad_request, "BadRequestError", out.error().message));
      }
      co_return co_await write(stream, make_response(req, http::status::ok, *out));
    }
    if (path == "/props" && get && opts_.llamacpp_head_and_timings)  // llama.cpp's own description
      co_return co_await write(stream, make_response(req, http::status::ok,
                                                     render_llamacpp_props(profile_.model, profile_.engine.max_num_seqs,
                                                                           profile_.engine.max_model_len)));
    if (((path == "/server_info" && !opts_.sglang_legacy_route) || path == "/get_server_info") && get &&
        opts_.sglang_server_info)
      co_return co_await write(
          stream, make_response(req, http::status::ok,
                                render_sglang_server_info(profile_.model, profile_.engine.max_num_seqs,
                                                          static_cast<std::int64_t>(profile_.engine.num_gpu_blocks) *
                                                              profile_.engine.block_size)));
    if (path == "/health" && get)
      co_return co_await write(stream, make_response(req, http::status::ok, "", "text/plain"));
    if (path == "/reset_prefix_cache" && post) {
      engine_.reset_prefix_cache();
      co_return co_await write(stream, make_response(req, http::status::ok, "", "text/plain"));
    }
    if (path == "/scenario" && (get || post)) {
      if (post) {
        std::string name;
        if (auto it = url->params().find("name"); it != url->params().end()) name = (*it).value;
        auto s = parse_scenario(name);
        if (!s)
          co_return co_await write(
              stream, error_response(req, http::status::bad_request, "BadRequestError", s.error().message, "name"));
        for (const auto& f : scenario_.set(*s, now_s(), engine_)) record_finished(f, nullptr);
        wake_engine();
      }
      co_return co_await write(stream, make_response(req, http::status::ok, scenario_body()));
    }
    co_return co_await write(stream, error_response(req, http::status::not_found, "NotFoundError",
                                                    fmt::format("no route for {} {}", req.method_string(), path)));
  }

  std::string scenario_body() const {
    return std::move(JsonObjectWriter()
                         .field("scenario", to_string(scenario_.current()))
                         .field("since_s", scenario_.since_s())
                         .field("background_in_flight", scenario_.background_in_flight())
                         .field("num_requests_running", engine_.num_running())
                         .field("num_requests_waiting", engine_.num_waiting()))
               .finish() +
           "\n";
  }

  // Waits for output, or notices a client that went away. Returns false on disconnect.
  awaitable<bool> wait_for_output(beast::tcp_stream& stream, asio::steady_timer& notify, bool& watch_client) {
    notify.expires_at(Clock::time_point::max());
    if (!watch_client) {
      co_await notify.async_wait(kNoThrow);
      co_return true;
    }
    auto which = co_await (notify.async_wait(kNoThrow) || stream.socket().async_wait(tcp::socket::wait_read, kNoThrow));
    if (which.index() == 1) {
      boost::system::error_code ec;
      const std::size_t avail = stream.socket().available(ec);
      if (ec || avail == 0) co_return false;  // readable with nothing to read: the peer closed
      watch_client = false;                   // pipelined bytes: stop watching, keep serving
    }
    co_return true;
  }

  static void take_all(Sink& sink, ResponseBuilder& builder) {
    const std::vector<Emission> all(std::make_move_iterator(sink.pending.begin()),
                                    std::make_move_iterator(sink.pending.end()));
    sink.pending.clear();
    builder.stream_tokens(all);
  }

  awaitable<bool> completion(beast::tcp_stream& stream, Request& req, Endpoint endpoint) {
    auto parsed = parse_completion_request(req.body(), endpoint);
    if (!parsed)
      co_return co_await write(stream, api_error(req, endpoint, http::status::bad_request, "BadRequestError",
                                                 parsed.error().message, parsed.error().subject));
    CompletionRequest& creq = *parsed;
    // vLLM answers 404 for a model it does not serve; llama.cpp b10309 (one model) answers whatever
    // the request names, its own name in the response.
    if (creq.model && *creq.model != profile_.model && !opts_.llamacpp_head_and_timings) {
      co_return co_await write(stream, api_error(req, endpoint, http::status::not_found, "NotFoundError",
                                                 fmt::format("The model `{}` does not exist.", *creq.model), "model"));
    }
    if (creq.previous_response_id) {  // the stored conversation, then the new input
      const auto* earlier = stored_.find(*creq.previous_response_id);
      if (earlier == nullptr) {
        co_return co_await write(stream,
                                 api_error(req, endpoint, http::status::not_found, "NotFoundError",
                                           response_not_found_message(*creq.previous_response_id), "response_id"));
      }
      creq.prompt.insert(creq.prompt.begin(), earlier->begin(), earlier->end());
    }
    const Fault fault = scenario_.draw_fault();
    if (fault == Fault::kError) {
      co_return co_await write(stream, api_error(req, endpoint, http::status::internal_server_error,
                                                 "InternalServerError", "simulated engine fault (scenario 'faults')"));
    }

    const int prompt_len = static_cast<int>(creq.prompt.size());
    ResponseBuilder::Options ro;
    const std::string hex = ids_.next(SystemClock::instance().wall_us() / 1000);
    ro.id = fmt::format("{}{}", response_id_prefix(endpoint, opts_.llamacpp_head_and_timings), hex);
    ro.created = SystemClock::instance().wall_us() / 1'000'000;
    ro.model = profile_.model;
    ro.llamacpp = opts_.llamacpp_head_and_timings;
    // One engine sequence a choice (vLLM fans a request of n out to n sequences), each with its
    // sink and builder; a deque, so that a choice stays where sinks_ points.
    asio::steady_timer notify(io_.get_executor(), Clock::time_point::max());
    std::deque<Choice> choices;
    for (int i = 0; i < creq.n; ++i) {
      RequestPlan plan = plan_request(creq, profile_, fault, opts_.seed, i);
      const int truncate_after = plan.truncate_after;
      ro.reasoning_tokens = plan.reasoning_tokens;
      ro.choice = i;
      auto id = engine_.add_request(std::move(plan.spec), now_s());
      if (!id) {
        abort_choices(choices);
        co_return co_await write(
            stream, api_error(req, endpoint, http::status::bad_request, "BadRequestError", id.error().message,
                              endpoint == Endpoint::kCompletions ? "prompt" : "messages"));
      }
      Choice& c = choices.emplace_back(this, *id, notify, ResponseBuilder(creq, ro, prompt_len), truncate_after);
      c.sink.defer_truth = creq.stream;
      if (auto it = req.find("X-Request-Id"); it != req.end()) c.sink.truth.x_request_id = std::string(it->value());
      if (auto it = req.find("traceparent"); it != req.end()) c.sink.truth.traceparent = std::string(it->value());
      if (auto it = req.find("X-Fak-Observation-ID"); it != req.end())
        c.sink.truth.observation_id = std::string(it->value());
      c.sink.truth.response_id = ro.id;
      if (creq.n > 1) c.sink.truth.choice = i;
    }
    wake_engine();
    Choice& first = choices.front();
    // A finished Responses response is stored for a later previous_response_id (vLLM's store).
    struct Store {
      Simulator* self;
      Sink& sink;
      const std::vector<TokenId>& prompt;
      const std::string& id;
      bool responses;
      ~Store() {
        if (!responses || !sink.finished) return;
        std::vector<TokenId> conversation = prompt;
        conversation.insert(conversation.end(), sink.output.begin(), sink.output.end());
        self->stored_.put(id, std::move(conversation));
      }
    } store{this, first.sink, creq.prompt, ro.id, endpoint == Endpoint::kResponses};
    bool watch_client = true;
    const auto all_finished = [&choices] {
      return std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.sink.finished.has_value(); });
    };

    if (!creq.stream) {
      for (;;) {
        for (auto& c : choices) take_all(c.sink, c.builder);  // accumulate the text
        if (all_finished()) break;
        if (!co_await wait_for_output(stream, notify, watch_client)) {
          abort_choices(choices);
          co_return false;
        }
      }
      std::vector<const ResponseBuilder*> others;
      for (std::size_t i = 1; i < choices.size(); ++i) others.push_back(&choices[i].builder);
      if (!opts_.llamacpp_head_and_timings) {
        co_return co_await write(
            stream, make_response(req, http::status::ok,
                                  first.builder.full_body(first.sink.finished->cached_prompt_tokens, others)));
      }
      // llama.cpp b10309's body: the first choice's timings, and its head's JSON type and (empty) CORS
      // origin, its own server name aside.
      first.builder.set_timings(llamacpp_timings(*first.sink.finished));
      Response res = make_response(req, http::status::ok,
                                   first.builder.full_body(first.sink.finished->cached_prompt_tokens, others),
                                   "application/json; charset=utf-8");
      res.set(http::field::access_control_allow_origin, "");
      co_return co_await write(stream, std::move(res));
    }

    if (opts_.llamacpp_head_and_timings) {
      // The head waits for a slot (a request that finished or failed before one started it goes on).
      while (!first.sink.started && !first.sink.finished && !engine_.cached_prompt_tokens(first.id).has_value()) {
        if (!co_await wait_for_output(stream, notify, watch_client)) {
          abort_choices(choices);
          co_return false;
        }
      }
    }
    http::response<http::empty_body> head(http::status::ok, req.version());
    head.set(http::field::server, "modelperfobs-simulate");
    if (opts_.llamacpp_head_and_timings) {  // b10309's stream head, its own server name aside
      head.set(http::field::access_control_allow_origin, "");
      head.set("X-Accel-Buffering", "no");
      head.set(http::field::content_type, "text/event-stream");
    } else {
      head.set(http::field::content_type, "text/event-stream; charset=utf-8");
      head.set(http::field::cache_control, "no-cache");
    }
    if (auto it = req.find("X-Request-Id"); it != req.end()) head.set("X-Request-Id", it->value());
    head.chunked(true);
    head.keep_alive(req.keep_alive());
    if (opts_.llamacpp_stream_end && req.keep_alive()) head.set(http::field::keep_alive, llamacpp_keep_alive());
    http::response_serializer<http::empty_body> sr(head);
    stream.expires_after(std::chrono::seconds(60));
    if (auto [ec, n] = co_await http::async_write_header(stream, sr, kNoThrow); ec) {
      abort_choices(choices);
      co_return false;
    }
    auto send = [&](std::string data) -> awaitable<bool> {
      if (data.empty()) co_return true;
      stream.expires_after(std::chrono::seconds(60));
      auto [ec, n] = co_await asio::async_write(stream, http::make_chunk(asio::buffer(data)), kNoThrow);
      co_return !ec;
    };
    // Chat's role chunk, one a choice; llama.cpp sends each with its choice's first token, vLLM all
    // of them at once.
    for (auto& c : choices) c.start = c.builder.stream_start();
    if (!opts_.llamacpp_head_and_timings) {
      std::string start;
      for (auto& c : choices) start += std::exchange(c.start, {});
      if (!co_await send(std::move(start))) {
        abort_choices(choices);
        co_return false;
      }
    }
    const auto per_chunk = static_cast<std::size_t>(profile_.output.tokens_per_chunk);
    // A choice has something to write: a chunk's worth of tokens, its last ones, or its end.
    const auto to_write = [per_chunk](const Choice& c) {
      const Sink& sink = c.sink;
      return (!sink.pending.empty() && (sink.pending.size() >= per_chunk || sink.finished)) ||
             (sink.finished && sink.pending.empty() && !c.ended);
    };
    for (;;) {
      for (auto& c : choices) {  // each choice's tokens, in the order of the choices
        Sink& sink = c.sink;
        while (!sink.pending.empty() && (sink.pending.size() >= per_chunk || sink.finished)) {
          const std::size_t n = std::min(per_chunk, sink.pending.size());
          std::vector<Emission> group(std::make_move_iterator(sink.pending.begin()),
                                      std::make_move_iterator(sink.pending.begin() + static_cast<std::ptrdiff_t>(n)));
          sink.pending.erase(sink.pending.begin(), sink.pending.begin() + static_cast<std::ptrdiff_t>(n));
          // Taken as the write starts: Asio sends at once inside the call (unless the socket buffer
          // is full), while the coroutine may resume well after the send when the loop is busy.
          const double write_start_s = now_s();
          if (c.written == 0) {  // a request that already finished is no longer in the engine
            c.builder.set_cached_prompt_tokens(sink.finished ? sink.finished->cached_prompt_tokens
                                                             : engine_.cached_prompt_tokens(c.id).value_or(0));
          }
          if (!co_await send(std::exchange(c.start, {}) + c.builder.stream_tokens(group))) {
            abort_choices(choices);
            co_return false;
          }
          if (c.written == 0) sink.truth.first_token_sent_s = write_start_s;
          c.written += static_cast<int>(n);
          if (c.truncate_after > 0 && c.written >= c.truncate_after && !sink.finished) {
            abort_choices(choices);  // the engine side of a cut stream: the request is aborted
            co_return false;         // close without the last chunk or [DONE]
          }
        }
        if (sink.finished && sink.pending.empty() && !c.ended) {  // llama.cpp ends each choice apart
          c.ended = true;
          if (opts_.llamacpp_head_and_timings) c.builder.set_timings(llamacpp_timings(*sink.finished));
          if (!co_await send(std::exchange(c.start, {}) + c.builder.choice_end(sink.finished->cached_prompt_tokens))) {
            abort_choices(choices);
            co_return false;
          }
        }
      }
      const bool drained =
          std::all_of(choices.begin(), choices.end(), [](const Choice& c) { return c.sink.pending.empty(); });
      if (all_finished() && drained) break;
      // Tokens that came for a choice while a later one's were being written go now, not a step later.
      if (std::any_of(choices.begin(), choices.end(), to_write)) continue;
      if (!co_await wait_for_output(stream, notify, watch_client)) {
        abort_choices(choices);
        co_return false;
      }
    }
    for (auto& c : choices) flush_truth(c.sink);
    int other_tokens = 0;
    for (std::size_t i = 1; i < choices.size(); ++i) other_tokens += choices[i].builder.completion_tokens();
    first.builder.count_other_choices(other_tokens);
    if (!co_await send(first.builder.stream_end(first.sink.finished->cached_prompt_tokens))) {
      co_return false;
    }
    if (opts_.llamacpp_stream_end) {
      asio::steady_timer gap(stream.get_executor(), kLlamaCppTerminatorGap);
      co_await gap.async_wait(kNoThrow);
    }
    stream.expires_after(std::chrono::seconds(60));
    auto [ec, n] = co_await asio::async_write(stream, http::make_chunk_last(), kNoThrow);
    if (opts_.llamacpp_stream_end) {
      asio::steady_timer later(stream.get_executor(), kLlamaCppCloseDelay);
      co_await later.async_wait(kNoThrow);
      co_return false;  // the session closes the connection
    }
    co_return !ec && req.keep_alive();
  }

  // One choice of a client request: its engine sequence, where its output waits, its events'
  // builder, how far its stream got. It leaves sinks_ (its truth line written first) when it goes.
  struct Choice {
    Choice(Simulator* owner, RequestId engine_id, asio::steady_timer& notify, ResponseBuilder events, int cut_after)
        : self(owner), id(engine_id), sink(notify), builder(std::move(events)), truncate_after(cut_after) {
      self->sinks_.emplace(id, &sink);
    }
    Choice(const Choice&) = delete;
    Choice& operator=(const Choice&) = delete;
    ~Choice() {
      self->flush_truth(sink);
      self->sinks_.erase(id);
    }
    Simulator* self;
    RequestId id;
    Sink sink;
    ResponseBuilder builder;
    int truncate_after;  // 'truncate' fault: the stream is cut after this many of its tokens; -1 never
    int written = 0;
    std::string start;   // its role chunk, until sent
    bool ended = false;  // choice_end() sent
  };

  // A client that left, a failed write or a cut stream: every choice's sequence is aborted.
  void abort_choices(std::deque<Choice>& choices) {
    for (auto& c : choices) {
      if (auto f = engine_.abort(c.id, now_s())) record_finished(*f, &c.sink);
    }
    wake_engine();
  }

  asio::io_context& io_;
  const Profile& profile_;
  ServerOptions opts_;
  Engine engine_;
  ScenarioController scenario_;
  tcp::acceptor acceptor_;
  asio::steady_timer step_timer_;
  asio::steady_timer wake_timer_;
  ClockReading start_;  // both clocks at engine time 0, read together: truth times are wall + steady
  Clock::time_point origin_;
  std::int64_t wall_origin_us_;
  Uuid7Generator ids_;
  std::unordered_map<RequestId, Sink*> sinks_;
  ResponseStore stored_;  // Responses API responses, for previous_response_id
  // The engine's span of a client request, as vLLM exports it (otel/engine_span.hpp).
  void export_span(const FinishedRequest& f, const TruthContext& t) {
    auto ns = [&](double s) { return (wall_origin_us_ + static_cast<std::int64_t>(std::llround(s * 1e6))) * 1000; };
    auto opt_ns = [&](const std::optional<double>& s) -> std::optional<std::int64_t> {
      return s ? std::optional<std::int64_t>(ns(*s)) : std::nullopt;
    };
    otel::EngineRequest r{t.response_id.empty() ? std::to_string(f.id) : t.response_id,
                          profile_.model,
                          ns(f.arrival_s),
                          opt_ns(f.scheduled_s),
                          opt_ns(f.first_token_s),
                          opt_ns(f.last_token_s),
                          ns(f.finished_s),
                          f.prompt_tokens,
                          f.completion_tokens};
    std::optional<std::string_view> traceparent;
    if (!t.traceparent.empty()) traceparent = t.traceparent;
    exporter_->submit(otel::engine_request_span(r, traceparent, trace_ids_));
  }

  std::unique_ptr<otel::Exporter> exporter_;
  otel::IdGenerator trace_ids_;
  std::FILE* truth_ = nullptr;
  bool truth_error_reported_ = false;
  bool stopping_ = false;
};

}  // namespace

// An io_context whose suspended sessions can be destroyed while the Simulator they refer to
// still exists (a plain io_context destroys them in its destructor, after the Simulator).
struct ServerIo : asio::io_context {
  using asio::execution_context::shutdown;
  using asio::io_context::io_context;
};

int run_simulator(const Profile& profile, const ServerOptions& options) {
  ServerIo io(1);
  Simulator sim(io, profile, options);
  std::string error;
  if (!sim.open(error)) {
    std::cerr << "modelperfobs simulate: " << error << "\n";
    return 1;
  }
  asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (!ec) sim.begin_shutdown();
  });
  sim.start();
  std::cout << fmt::format("modelperfobs simulate: listening on http://{}:{} (model {})", options.host, sim.port(),
                           profile.model)
            << std::endl;
  io.run();
  // Sessions still open after the grace period end here, writing any truth line they hold,
  // before `sim` and its truth file go away.
  io.shutdown();
  return 0;
}

}  // namespace mpo::sim
