// The implementation of loadgen/driver.hpp. The load generator (edge: Asio, one thread).
#include "loadgen/driver.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <random>
#include <variant>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "core/uuid.hpp"
#include "loadgen/conversation.hpp"
#include "loadgen/measure.hpp"
#include "loadgen/wait_group.hpp"
#include "net/client.hpp"
#include "openai/stream_tap.hpp"

namespace mpo::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

double thread_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A worker's connection: null until connected, and again after the server closed it.
using ConnectionSlot = std::shared_ptr<net::Connection>;

void close_slot(ConnectionSlot& c) {
  if (c) c->close();
  c.reset();
}

struct Attempt {
  boost::system::error_code ec;
  std::string stage;    // connect, tls, write, header, body
  std::string message;  // net::Client's description, when it made one
};

// A request's deadline, watched by the point's one deadline watcher (Impl::watch_deadlines) instead
// of a timer armed and cancelled around each of its reads and writes: three timers per request
// were a tenth of the generator's work at 10,000 requests/s.
struct Watch {
  std::int64_t deadline_us = 0;  // steady
  ConnectionSlot* conn = nullptr;
  bool fired = false;  // the watcher closed the connection: the request timed out
};
using Watches = std::list<Watch>;  // in send order, so in deadline order

// Removes a request's watch however its coroutine ends.
class WatchGuard {
 public:
  WatchGuard(Watches& list, Watch w) : list_(list), it_(list.insert(list.end(), w)) {}
  ~WatchGuard() { list_.erase(it_); }
  WatchGuard(const WatchGuard&) = delete;
  WatchGuard& operator=(const WatchGuard&) = delete;
  bool fired() const { return it_->fired; }

 private:
  Watches& list_;
  Watches::iterator it_;
};

}  // namespace

std::vector<double> arrival_offsets(const PointPlan& plan) {
  const auto units = units_of(plan.requests);
  std::vector<double> out;
  out.reserve(units.size());
  if (plan.arrival == Arrival::kRecorded) {
    const double speed = plan.speed > 0 ? plan.speed : 1;
    for (const auto& u : units) out.push_back(plan.requests[u.begin].arrival_offset_s.value_or(0) / speed);
    return out;
  }
  std::mt19937_64 rng(plan.seed);
  const double rate = plan.coordinate;
  double t = 0;
  for (std::size_t i = 0; i < units.size(); ++i) {
    out.push_back(t);
    switch (plan.arrival) {
      case Arrival::kConstant: t += 1.0 / rate; break;
      case Arrival::kPoisson: t += std::exponential_distribution<double>(rate)(rng); break;
      case Arrival::kGamma: {
        const double shape = plan.burstiness > 0 ? plan.burstiness : 1;
        t += std::gamma_distribution<double>(shape, 1.0 / (rate * shape))(rng);
        break;
      }
      case Arrival::kRecorded: break;
    }
  }
  return out;
}

struct Driver::Impl {
  Target target;
  std::function<void(const ledger::Observation&)> on_observation;
  std::function<void(std::size_t, std::size_t)> on_progress;
  std::unique_ptr<net::Client> client;  // made on the first connect, on the loop that runs the driver
  Uuid7Generator ids;
  std::vector<ConnectionSlot> idle;  // open-loop pool
  std::int64_t in_flight = 0;
  Watches watches;                            // the deadlines of the requests in flight
  std::vector<asio::steady_timer*> thinking;  // sessions waiting out a think time: stop_sending ends the wait

  // Per point.
  bool stop_sending = false, abandoned = false;
  asio::steady_timer* schedule = nullptr;  // open loop: the wait for the next arrival
  std::int64_t point_start_us = 0;
  std::size_t done = 0, total = 0;
  std::string label;

  Impl(Target t, std::function<void(const ledger::Observation&)> obs,
       std::function<void(std::size_t, std::size_t)> prog)
      : target(std::move(t)), on_observation(std::move(obs)), on_progress(std::move(prog)) {}

  std::string path(std::string_view suffix) const { return target.url.base_path + std::string(suffix); }

  asio::awaitable<Attempt> connect(ConnectionSlot& c, std::chrono::steady_clock::time_point deadline) {
    if (!client) {
      auto made = net::Client::make(co_await asio::this_coro::executor, target.url, target.ca_file);
      if (!made) co_return Attempt{asio::error::invalid_argument, "tls", made.error().message};
      client = std::move(*made);
    }
    auto [conn, failure] = co_await client->connect(deadline);
    if (failure) {
      const char* stage = failure->kind == net::FailureKind::kResolve ? "resolve"
                          : failure->kind == net::FailureKind::kTls   ? "tls"
                                                                      : "connect";
      co_return Attempt{failure->ec, stage, failure->message};
    }
    c = std::move(conn);
    co_return Attempt{};
  }

  // One request, measured. `scheduled_us`: the steady time it was due.
  asio::awaitable<Sample> measure(ConnectionSlot& conn, const ServingRequest& r, bool warmup,
                                  std::int64_t scheduled_us) {
    const Clock& clock = SystemClock::instance();
    const std::int64_t sent_us = clock.steady_us();
    const std::int64_t wall_start = clock.wall_us();
    const auto limit = std::chrono::microseconds(static_cast<std::int64_t>(target.timeout_s * 1e6));
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const WatchGuard watch(watches, Watch{sent_us + limit.count(), &conn});
    Sample s;
    s.id = r.id;
    s.warmup = warmup;
    s.prompt_tokens_estimate = r.prompt_tokens_estimate;
    s.max_tokens = r.max_output_tokens;
    s.scheduled_offset_ms = round_ms(static_cast<double>(scheduled_us - point_start_us) / 1000.0);
    s.sent_offset_ms = round_ms(static_cast<double>(sent_us - point_start_us) / 1000.0);
    s.observation_id = ids.next(wall_start / 1000);

    ledger::Observation o;
    o.observation_id = s.observation_id;
    o.started_at_us = wall_start;
    o.proxy_instance = "sweep:" + target.run_id;
    o.backend = target.url.origin;
    o.method = "POST";
    o.path = path(api_path(target.api));
    o.operation = std::string(api_operation(target.api));
    o.model = target.model;
    o.stream = true;
    o.usage_requested = true;
    o.max_tokens = r.max_output_tokens;
    o.in_flight_at_start = in_flight;
    o.scheduled_at_us = wall_start - (sent_us - scheduled_us);
    o.send_lateness_ms = round_ms(static_cast<double>(sent_us - scheduled_us) / 1000.0);
    o.sweep_point = label;
    o.warmup = warmup;
    if (!r.session_id.empty()) {
      o.session_id = r.session_id;
      o.session_source = "header";
      o.turn = r.turn;
    }
    ++in_flight;

    const std::string body = request_body(r, target.model, target.ignore_eos, target.api);
    http::request<http::string_body> req{http::verb::post, o.path, 11};
    req.set(http::field::host, target.url.host_header);
    req.set(http::field::user_agent, "modelperfobs-sweep");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    req.set("X-Fak-Observation-ID", s.observation_id);
    if (!r.session_id.empty()) req.set("X-Session-ID", r.session_id);
    if (!target.api_key.empty()) req.set(http::field::authorization, "Bearer " + target.api_key);
    if (target.api == Api::kMessages) {  // Anthropic's API names its version and takes its key so
      req.set("anthropic-version", "2023-06-01");
      if (!target.api_key.empty()) req.set("x-api-key", target.api_key);
    }
    req.keep_alive(true);
    req.body() = body;
    req.prepare_payload();
    o.request_bytes = body.size();

    std::optional<http::response_parser<http::buffer_body>> parser_slot;
    parser_slot.emplace();
    parser_slot->body_limit(boost::none);
    Attempt failure;
    // A pooled connection the server closed while idle fails at write or header: retry once on a
    // fresh one (nothing of this request reached the engine).
    for (int attempt = 0; attempt < 2; ++attempt) {
      const bool reused = conn != nullptr;
      if (!conn) {
        failure = co_await connect(conn, deadline);
        if (failure.ec) break;
      }
      conn->expires_never();  // the deadline is watched (watch_deadlines)
      auto [wec, wn] = co_await conn->write(req);
      if (wec) {
        failure = {wec, "write", {}};
        close_slot(conn);
        if (reused) continue;
        break;
      }
      auto [hec, hn] = co_await conn->read_header(*parser_slot);
      if (hec) {
        failure = {hec, "header", {}};
        close_slot(conn);
        const auto kind = net::classify(hec);
        if (reused && (kind == net::FailureKind::kClosed || kind == net::FailureKind::kReset)) {
          parser_slot.emplace();
          parser_slot->body_limit(boost::none);
          continue;
        }
        break;
      }
      failure = {};
      break;
    }
    auto finish = [&](Sample& sm) {
      --in_flight;
      const std::int64_t end_us = clock.steady_us();
      sm.end_to_end_ms = round_ms(static_cast<double>(end_us - sent_us) / 1000.0);
      o.ended_at_us = clock.wall_us();
      o.e2e_ms = static_cast<double>(end_us - sent_us) / 1000.0;
      if (on_observation) on_observation(o);
      ++done;
      if (on_progress) on_progress(done, total);
    };
    const auto timed_out = [&] {
      return abandoned ? std::string("interrupted: the sweep was stopped (a second Ctrl-C) before the response ended")
                       : fmt::format("no complete response within the timeout ({} s)", target.timeout_s);
    };
    if (failure.ec) {
      const bool timeout = watch.fired() || net::classify(failure.ec) == net::FailureKind::kTimeout;
      record_failure(s, o,
                     RequestFailure{failure.stage, timeout,
                                    watch.fired()             ? timed_out()
                                    : failure.message.empty() ? failure.ec.message()
                                                              : failure.message});
      finish(s);
      co_return s;
    }
    auto& parser = *parser_slot;
    const auto& head = parser.get();
    const int status = static_cast<int>(head.result_int());
    o.ttfb_ms = static_cast<double>(clock.steady_us() - sent_us) / 1000.0;
    if (auto it = head.find("X-Request-Id"); it != head.end()) o.upstream_request_id = std::string(it->value());
    const auto ctype = head.find(http::field::content_type);
    const bool sse = ctype != head.end() && ctype->value().find("text/event-stream") != std::string_view::npos;
    openai::StreamTap tap(sse);
    std::string error_body;
    // Not zeroed: the parser writes what it reads (zeroing 16 KiB was a sixth of the loop's work
    // per one-token request).
    constexpr std::size_t kBufSize = 16 * 1024;
    const auto buf = std::make_unique_for_overwrite<char[]>(kBufSize);
    boost::system::error_code body_ec;
    while (!parser.is_done()) {
      parser.get().body().data = buf.get();
      parser.get().body().size = kBufSize;
      auto [rec, rn] = co_await conn->read_some(parser);
      if (rec == http::error::need_buffer) rec = {};
      const std::size_t got = kBufSize - parser.get().body().size;
      if (got > 0) {
        const std::string_view piece(buf.get(), got);
        o.response_bytes += got;
        tap.feed(piece, clock.steady_us());
        if (status >= 300 && error_body.size() < 4096) error_body.append(piece.substr(0, 4096 - error_body.size()));
      }
      if (rec) {
        body_ec = rec;
        break;
      }
    }
    tap.finish(parser.is_done());
    Response response;
    response.sent_us = sent_us;
    response.end_us = clock.steady_us();
    response.http_status = status;
    response.sse = sse;
    response.error_body = std::move(error_body);
    if (body_ec) {
      const bool timeout = watch.fired() || net::classify(body_ec) == net::FailureKind::kTimeout;
      response.body_end = timeout                                    ? BodyEnd::kTimeout
                          : body_ec == asio::error::connection_reset ? BodyEnd::kReset
                                                                     : BodyEnd::kTruncated;
      response.body_error = watch.fired() ? timed_out() : body_ec.message();
    }
    if (!parser.is_done() || !parser.keep_alive()) close_slot(conn);
    record_response(s, o, std::move(tap), response);
    finish(s);
    co_return s;
  }

  // Closes the connection of every request past its deadline, looking a few times per timeout (at
  // most every 50 ms), until `stopping`.
  asio::awaitable<void> watch_deadlines(const bool& stopping, asio::steady_timer& tick) {
    const auto period = std::clamp(std::chrono::microseconds(static_cast<std::int64_t>(target.timeout_s * 1e6 / 20)),
                                   std::chrono::microseconds(1000), std::chrono::microseconds(50000));
    while (!stopping) {
      tick.expires_after(period);
      co_await tick.async_wait(kNoThrow);
      const std::int64_t now = SystemClock::instance().steady_us();
      for (auto& w : watches) {
        if (w.deadline_us > now) break;
        // A request still connecting has the same deadline on its connect.
        if (!w.fired && *w.conn) {
          w.fired = true;
          (*w.conn)->close();
        }
      }
    }
  }

  // Waits out a turn's think time (the client's own time before it), unless the point stops sending.
  asio::awaitable<void> think(double seconds) {
    if (seconds <= 0 || stop_sending) co_return;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(std::chrono::microseconds(static_cast<std::int64_t>(seconds * 1e6)));
    thinking.push_back(&timer);
    co_await timer.async_wait(kNoThrow);
    thinking.erase(std::find(thinking.begin(), thinking.end(), &timer));
  }

  // A unit's requests one after another on one connection (a session's turns: each sent when the
  // previous one ended and its think time passed, measured against that time). `first_due_us`:
  // when the unit's first request was due; `slot`: the sample index of its first request.
  // `go_on` is asked before each turn after the first (a closed loop's --duration).
  asio::awaitable<void> run_unit(ConnectionSlot& conn, const PointPlan& plan, Unit unit, std::string suffix,
                                 std::int64_t first_due_us, std::vector<std::optional<Sample>>& samples,
                                 std::size_t slot, const std::function<bool()>& go_on) {
    std::int64_t due = first_due_us;
    std::string previous_id;  // the previous turn's response, for chain_responses
    for (std::size_t i = unit.begin; i < unit.end && !stop_sending; ++i) {
      const ServingRequest* req = &plan.requests[i];
      ServingRequest renamed;
      if (!suffix.empty()) {  // a session sent again (--duration cycles the workload): a new session
        renamed = *req;
        renamed.session_id += suffix;
        req = &renamed;
      }
      if (target.chain_responses && i > unit.begin && !previous_id.empty()) {
        // Only the messages after the previous turn's, and after the answer the server holds.
        if (req != &renamed) renamed = *req;
        const std::size_t earlier = plan.requests[i - 1].messages.size() + 1;
        renamed.messages.erase(
            renamed.messages.begin(),
            renamed.messages.begin() + static_cast<std::ptrdiff_t>(std::min(earlier, renamed.messages.size())));
        renamed.previous_response_id = previous_id;
        req = &renamed;
      }
      if (i > unit.begin) {
        if (!go_on()) break;
        co_await think(req->think_time_s);
        if (stop_sending) break;
        due = SystemClock::instance().steady_us();
      }
      Sample s = co_await measure(conn, *req, i < plan.warmup, due);
      previous_id = s.ok ? s.response_id : std::string();
      const bool refused = !s.ok && s.error_class == "transport" && !s.http_status;
      const std::size_t at = slot + (i - unit.begin);
      if (at >= samples.size()) samples.resize(at + 1);
      samples[at] = std::move(s);
      if (refused) {
        // A server that refuses connections is not hammered in a tight loop.
        asio::steady_timer pause(co_await asio::this_coro::executor);
        pause.expires_after(std::chrono::milliseconds(50));
        co_await pause.async_wait(kNoThrow);
      }
      due = SystemClock::instance().steady_us();
    }
  }

  // Closed loop: `coordinate` workers, each taking the next unit (a request, or a whole session:
  // then the coordinate is the number of live sessions) when its last one ended.
  asio::awaitable<PointRun> run_closed(const PointPlan& plan) {
    auto ex = co_await asio::this_coro::executor;
    const auto units = units_of(plan.requests);
    std::size_t warm_units = 0;
    while (warm_units < units.size() && units[warm_units].begin < plan.warmup) ++warm_units;
    const std::size_t measured = units.size() - warm_units;
    std::vector<std::optional<Sample>> samples(plan.requests.size());
    std::size_t next = 0, next_slot = 0;
    std::optional<std::int64_t> measured_start;
    const auto limit_us = static_cast<std::int64_t>(plan.duration_s * 1e6);
    const auto within_duration = [&] {
      return !(limit_us > 0 && measured > 0 && measured_start &&
               SystemClock::instance().steady_us() - *measured_start >= limit_us);
    };
    WaitGroup wg(ex);
    const int workers = std::max(1, static_cast<int>(plan.coordinate));
    for (int w = 0; w < workers; ++w) {
      wg.add();
      asio::co_spawn(
          ex,
          [&]() -> asio::awaitable<void> {
            ConnectionSlot conn;
            std::int64_t ready = point_start_us;
            while (!stop_sending) {
              const std::size_t u = next;
              const std::int64_t now = SystemClock::instance().steady_us();
              if (limit_us > 0 && measured > 0) {
                if (!within_duration()) break;
              } else if (u >= units.size()) {
                break;
              }
              ++next;
              if (u >= warm_units && !measured_start) measured_start = now;
              const std::size_t cycle = u < units.size() ? 0 : (u - warm_units) / measured;
              const Unit unit = u < units.size() ? units[u] : units[warm_units + (u - warm_units) % measured];
              const std::size_t slot = next_slot;
              next_slot += unit.end - unit.begin;
              // Named, not built in the co_await's arguments (GCC 12 destroys a conditional's temporaries twice).
              std::string suffix;
              if (cycle > 0) suffix = fmt::format("#cycle-{}", cycle);
              const std::function<bool()> go_on = within_duration;
              co_await run_unit(conn, plan, unit, std::move(suffix), ready, samples, slot, go_on);
              ready = SystemClock::instance().steady_us();
            }
            close_slot(conn);
          },
          [&](std::exception_ptr) { wg.done(); });
    }
    co_await wg.wait();
    PointRun run;
    for (auto& s : samples) {
      if (s) run.samples.push_back(std::move(*s));
    }
    co_return run;
  }

  asio::awaitable<PointRun> run_open(const PointPlan& plan) {
    auto ex = co_await asio::this_coro::executor;
    const auto offsets = arrival_offsets(plan);
    const auto units = units_of(plan.requests);
    const auto n = units.size();
    std::vector<std::optional<Sample>> samples(plan.requests.size());
    WaitGroup wg(ex);
    asio::steady_timer timer(ex);
    // The schedule and the lateness measured against it share one origin.
    const std::int64_t start_us = SystemClock::instance().steady_us();
    schedule = &timer;
    for (std::size_t i = 0; i < n && !stop_sending; ++i) {
      if (!plan.shard.owns_arrival(i)) continue;  // another shard's arrival
      const std::int64_t due_us = start_us + static_cast<std::int64_t>(offsets[i] * 1e6);
      if (due_us > SystemClock::instance().steady_us()) {  // one already due is sent without a timer
        timer.expires_at(std::chrono::steady_clock::time_point(std::chrono::microseconds(due_us)));
        co_await timer.async_wait(kNoThrow);
        if (stop_sending) break;
      }
      wg.add();
      asio::co_spawn(
          ex,
          [&, i, due_us]() -> asio::awaitable<void> {
            ConnectionSlot conn;
            if (!idle.empty()) {
              conn = std::move(idle.back());
              idle.pop_back();
            }
            const std::function<bool()> always = [] { return true; };
            co_await run_unit(conn, plan, units[i], std::string(), due_us, samples, units[i].begin, always);
            if (conn) idle.push_back(std::move(conn));
          },
          [&](std::exception_ptr) { wg.done(); });
    }
    schedule = nullptr;
    co_await wg.wait();
    for (auto& c : idle) close_slot(c);
    idle.clear();
    PointRun run;
    for (auto& s : samples) {
      if (s) run.samples.push_back(std::move(*s));
    }
    co_return run;
  }
};

Driver::Driver(Target target, std::function<void(const ledger::Observation&)> on_observation,
               std::function<void(std::size_t, std::size_t)> on_progress)
    : impl_(std::make_unique<Impl>(std::move(target), std::move(on_observation), std::move(on_progress))) {}

Driver::~Driver() = default;

void Driver::stop_sending() {
  impl_->stop_sending = true;
  if (impl_->schedule != nullptr) impl_->schedule->cancel();
  for (auto* t : impl_->thinking) t->cancel();
}

void Driver::abandon() {
  stop_sending();
  impl_->abandoned = true;
  for (auto& w : impl_->watches) {
    if (!w.fired && *w.conn) {
      w.fired = true;
      (*w.conn)->close();
    }
  }
}

asio::awaitable<PointRun> Driver::run_point(const PointPlan& plan) {
  const Clock& clock = SystemClock::instance();
  impl_->point_start_us = clock.steady_us();
  impl_->done = 0;
  impl_->total = plan.requests.size();
  impl_->label = plan.label;
  const std::int64_t wall0 = clock.wall_us();
  const double cpu0 = thread_cpu_seconds();
  // Not a conditional expression: GCC 12 destroys a co_await temporary from one twice.
  auto ex = co_await asio::this_coro::executor;
  bool stopping = false;
  asio::steady_timer tick(ex);
  WaitGroup watcher(ex);
  watcher.add();
  asio::co_spawn(ex, impl_->watch_deadlines(stopping, tick), [&](std::exception_ptr) { watcher.done(); });
  PointRun run;
  if (plan.mode == LoadMode::kConcurrency) {
    run = co_await impl_->run_closed(plan);
  } else {
    run = co_await impl_->run_open(plan);
  }
  stopping = true;
  tick.cancel();
  co_await watcher.wait();
  run.cpu_seconds = thread_cpu_seconds() - cpu0;
  run.started_at_us = wall0;
  run.ended_at_us = clock.wall_us();
  run.started_steady_us = impl_->point_start_us;
  run.wall_seconds = static_cast<double>(clock.steady_us() - impl_->point_start_us) / 1e6;
  co_return run;
}

asio::awaitable<std::pair<int, std::string>> Driver::get(std::string suffix) {
  auto r = co_await simple(false, std::move(suffix), false);
  co_return r;
}

asio::awaitable<std::pair<int, std::string>> Driver::get_admin(std::string path) {
  auto r = co_await simple(false, std::move(path), true);
  co_return r;
}

asio::awaitable<std::pair<int, std::string>> Driver::post_admin(std::string path) {
  auto r = co_await simple(true, std::move(path), true);
  co_return r;
}

asio::awaitable<std::pair<int, std::string>> Driver::post_json_admin(std::string path, std::string body) {
  auto r = co_await simple(true, std::move(path), true, std::move(body));
  co_return r;
}

asio::awaitable<std::pair<int, std::string>> Driver::simple(bool post, std::string suffix, bool origin,
                                                            std::string body) {
  if (!impl_->client) {
    auto made = net::Client::make(co_await asio::this_coro::executor, impl_->target.url, impl_->target.ca_file);
    if (!made) co_return std::pair<int, std::string>{0, made.error().message};
    impl_->client = std::move(*made);
  }
  net::ExchangeOptions req;
  req.method = post ? http::verb::post : http::verb::get;
  req.target = origin ? suffix : impl_->path(suffix);
  req.user_agent = "modelperfobs-sweep";
  if (!body.empty()) {
    req.body = std::move(body);
    req.headers.emplace_back("Content-Type", "application/json");
  }
  if (!impl_->target.api_key.empty()) req.headers.emplace_back("Authorization", "Bearer " + impl_->target.api_key);
  auto x = co_await net::exchange(*impl_->client, std::move(req), net::deadline_after(10));
  if (x.failure) co_return std::pair<int, std::string>{0, x.failure->message};
  co_return std::pair<int, std::string>{x.status, std::move(x.body)};
}

}  // namespace mpo::loadgen
