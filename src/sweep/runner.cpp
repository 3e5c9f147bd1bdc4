// The implementation of sweep/runner.hpp. Runs a whole sweep (edge): the engine identity, then each
// point in ascending order (scrape before, gauges sampled during, the point's requests, scrape
// after, energy), optional bisection between the last point inside the p99 budgets and the first
// outside, and the evaluated receipt.
#include "sweep/runner.hpp"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/this_coro.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "core/clock.hpp"
#include "core/go_json.hpp"
#include "core/json.hpp"
#include "core/time.hpp"
#include "engines/catalog.hpp"
#include "engines/server_props.hpp"
#include "loadgen/cache_reset.hpp"
#include "loadgen/conversation.hpp"
#include "loadgen/prompt_length.hpp"
#include "loadgen/wait_group.hpp"
#include "scrape/fetch.hpp"
#include "sweep/evaluate.hpp"
#include "sweep/evidence.hpp"
#include "sweep/fold.hpp"

namespace mpo::sweep {

namespace asio = boost::asio;

namespace {

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);

std::string coordinate_label(loadgen::LoadMode m, double c) {
  return std::string(m == loadgen::LoadMode::kConcurrency ? "concurrency=" : "rate=") + go_float_text(c);
}

const char* arrival_name(loadgen::Arrival a) {
  switch (a) {
    case loadgen::Arrival::kPoisson: return "poisson";
    case loadgen::Arrival::kGamma: return "gamma";
    case loadgen::Arrival::kConstant: return "constant";
    case loadgen::Arrival::kRecorded: return "recorded";
  }
  return "";
}

// Samples nvidia-smi's power.draw on its own thread (the tool blocks for tens of milliseconds),
// so the load generator's loop is never held up by it.
class PowerSampler {
 public:
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  ~PowerSampler() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::vector<PowerSample> samples() {
    std::lock_guard lock(mu_);
    return samples_;
  }
  std::string error() {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  void run() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      lock.unlock();
      std::string out;
      if (FILE* p = popen("nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits 2>/dev/null", "r")) {
        char buf[512];
        std::size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
      }
      const auto watts = parse_power_draw(out);
      const std::int64_t now = SystemClock::instance().steady_us();
      lock.lock();
      if (watts)
        samples_.push_back({now, *watts});
      else if (error_.empty())
        error_ = out.empty() ? "nvidia-smi gave no output (is it on PATH?)"
                             : "nvidia-smi printed no power.draw number: " + out.substr(0, 80);
      cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; });
    }
  }
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<PowerSample> samples_;
  std::string error_;
};

// The models and owner a server's GET /models names (its metrics engine and instance come from a
// scrape).
EngineIdentity read_identity(int status, const std::string& body) {
  EngineIdentity id;
  if (status != 200) return id;
  auto doc = parse_exact_json(body);
  if (!doc || !doc->is_object()) return id;
  if (const auto* data = json_array(doc->as_object(), "data")) {
    for (const auto& m : *data) {
      if (!m.is_object()) continue;
      if (auto v = json_string(m.as_object(), "id")) id.models.emplace_back(*v);
      if (auto v = json_string(m.as_object(), "owned_by"); v && id.owned_by.empty()) id.owned_by = std::string(*v);
    }
  }
  std::sort(id.models.begin(), id.models.end());
  return id;
}

// What a point's requests have come to so far, for its progress line.
struct PointCounts {
  std::size_t ok = 0, failed = 0;
  std::string latest_error;
  // Answers that stopped at their length limit short of the max_tokens asked for, as the server
  // counted them: something else (the engine's context) cut them. The last one's counts.
  std::size_t cut_short = 0;
  std::int64_t cut_got = 0, cut_asked = 0;
  void count(const ledger::Observation& ob) {
    if (ob.outcome == "ok") {
      ++ok;
      const auto reason = ob.finish_reason ? std::optional<std::string_view>(*ob.finish_reason) : std::nullopt;
      if (!ob.warmup && ledger::answer_cut_short(reason, ob.max_tokens, ob.completion_tokens, ob.token_source)) {
        ++cut_short;
        cut_got = *ob.completion_tokens;
        cut_asked = *ob.max_tokens;
      }
      return;
    }
    ++failed;
    latest_error =
        ob.http_status && ob.outcome == "http_error" ? fmt::format("{} {}", ob.outcome, *ob.http_status) : ob.outcome;
  }
  PointProgress at(std::size_t done, std::size_t total) const { return {done, total, ok, failed, latest_error}; }
};

class SweepRun {
 public:
  SweepRun(const SweepOptions& o, const SweepCallbacks& cb, std::atomic<bool>& stop)
      : o_(o),
        cb_(cb),
        stop_(stop),
        driver_(
            o.target, [this](const ledger::Observation& ob) { observe(ob); },
            [this](std::size_t d, std::size_t t) {
              if (cb_.on_progress) cb_.on_progress(label_, point_.at(d, t));
            }) {}

  // Result<T> has no empty state, which co_spawn's completion needs: wrap it.
  asio::awaitable<std::optional<Result<SweepReceipt>>> run() { co_return co_await run_inner(); }

  asio::awaitable<Result<SweepReceipt>> run_inner() {
    const Clock& clock = SystemClock::instance();
    if (!o_.metrics_url.empty()) {
      auto u = scrape::parse_metrics_url(o_.metrics_url);
      if (!u) co_return u.error();
      metrics_ = std::make_unique<scrape::Fetcher>(*u, scrape::FetchOptions{});
    }
    if (!o_.dcgm_url.empty()) {
      auto u = scrape::parse_metrics_url(o_.dcgm_url);
      if (!u) co_return u.error();
      dcgm_ = std::make_unique<scrape::Fetcher>(*u, scrape::FetchOptions{});
    }
    if (o_.power == "nvidia-smi") {
      power_ = std::make_unique<PowerSampler>();
      power_->start();
    }
    // Identity: what the server says it serves, and what its metrics say it is.
    auto [status, body] = co_await driver_.get("/models");
    if (auto problem = net::openai_models_problem(o_.target.url, status, body, body)) {
      std::string advice = " (--url is the OpenAI base URL, e.g. http://127.0.0.1:8000/v1)";
      if (status == 0 && body.rfind("tls", 0) == 0) advice = " (pass --ca FILE for a private CA)";
      if (problem->find("did you mean") != std::string::npos || status == 401 || status == 403) advice.clear();
      co_return make_error(errc::kSweepUrl, *problem + advice);
    }
    EngineIdentity id = read_identity(status, body);
    if (std::find(id.models.begin(), id.models.end(), o_.target.model) == id.models.end()) {
      note(fmt::format("warning: the server does not list model '{}' (it lists: {})", o_.target.model,
                       id.models.empty() ? "none" : fmt::format("{}", fmt::join(id.models, ", "))));
    }
    if (metrics_) {
      scrape::Snapshot first = co_await scrape_engine();
      if (!scrape::has_signals(first.status)) {
        const bool said = first.not_prometheus_text;  // its error already asks whether the URL is right
        co_return make_error(errc::kSweepMetricsUrl,
                             fmt::format("--metrics-url {}: {}{}", o_.metrics_url, first.error,
                                         said ? "" : " (expected the engine's Prometheus /metrics page)"));
      }
      id.metrics_engine = std::string(engines::engine_name(first.signals.engine));
      id.server_instance = scrape::server_instance_id(first);
    }
    // The batch capacity: the operator's, else the server's own word where it gives one (llama.cpp's
    // GET /props total_slots, SGLang's GET /server_info running-request cap), so the capacity rule
    // judges the points against what the engine runs. Asked only of a server that says it is that
    // engine (its /models' owned_by, or its /metrics): a proxy in front of another would write the
    // 404 into its ledger.
    int capacity = o_.batch_capacity;
    std::string capacity_source = o_.capacity_source;
    const auto is = [&](engines::Engine e, std::string_view owned_by) {
      return id.owned_by == owned_by || id.metrics_engine == engines::engine_name(e);
    };
    std::optional<engines::ServerSlots> slots;
    if (is(engines::Engine::kLlamaCpp, "llamacpp")) {
      auto [props_status, props] = co_await driver_.get_admin("/props");
      if (props_status == 200) {
        if (auto read = engines::parse_llamacpp_props(props)) slots = std::move(*read);
      }
    } else if (is(engines::Engine::kSglang, "sglang")) {
      // /server_info since SGLang renamed it; /get_server_info before (and still, deprecated).
      for (const char* route : {"/server_info", "/get_server_info"}) {
        auto [info_status, info] = co_await driver_.get_admin(route);
        if (info_status == 200) {
          if (auto read = engines::parse_sglang_server_info(info, route)) slots = std::move(*read);
        }
        if (info_status != 404) break;
      }
    }
    if (slots && capacity <= 0 && capacity_source.empty()) {
      capacity = slots->slots;
      capacity_source = slots->source();
      note(fmt::format("batch capacity {} from the server ({}{}); --batch-capacity overrides it", capacity,
                       capacity_source, slots->context()));
    } else if (slots && capacity > 0 && capacity != slots->slots) {
      // The operator's word stands (it names the contract), but not unchallenged.
      note(
          fmt::format("warning: --batch-capacity {} but the server says it decodes {} at once ({}{}): points "
                      "are judged against {}",
                      capacity, slots->slots, slots->source(), slots->context(), capacity));
    }
    const std::string observed_receipt = sha256_digest(go_marshal(engine_identity_json(id)));
    std::string engine = o_.engine;
    if (engine.empty())
      engine = !id.metrics_engine.empty() && id.metrics_engine != "unknown" ? id.metrics_engine : id.owned_by;
    if (engine.empty()) engine = "unidentified";

    r_.generated_at = format_rfc3339_us(clock.wall_us() / 1'000'000 * 1'000'000);
    if (auto dot = r_.generated_at.find('.'); dot != std::string::npos)
      r_.generated_at = r_.generated_at.substr(0, dot) + "Z";
    r_.machine_id = o_.machine_id.empty() ? "unknown" : o_.machine_id;
    r_.model = o_.target.model;
    r_.mode = o_.mode;
    measured_ = loadgen::take_requests(o_.workload, o_.requests);
    shared_words_ = loadgen::shared_leading_words(measured_);
    r_.workload_digest = loadgen::workload_digest(measured_);
    r_.workload_requests = static_cast<std::int64_t>(measured_.size());
    contract_ =
        Contract{o_.track, o_.target.model, engine, o_.engine_receipt.empty() ? observed_receipt : o_.engine_receipt,
                 capacity, capacity_source};
    r_.contracts = {contract_};
    r_.sla = o_.sla;
    r_.tool_version = o_.tool_version;
    SweepLoad load;
    load.mode = o_.mode == loadgen::LoadMode::kConcurrency ? "closed-loop" : "open-loop";
    if (o_.mode == loadgen::LoadMode::kRate) {
      load.arrival = arrival_name(o_.arrival);
      if (o_.arrival == loadgen::Arrival::kGamma) load.burstiness = o_.burstiness;
    }
    load.url = o_.target.url.origin + o_.target.url.base_path;
    load.api = std::string(loadgen::api_name(o_.target.api));
    load.workload_source = o_.workload_source;
    load.requests_per_point = static_cast<std::int64_t>(o_.requests);
    load.warmup_rule = o_.warmup >= 0
                           ? fmt::format("{} requests", o_.warmup)
                           : std::string("one per worker (closed loop) or one second of arrivals (open loop)");
    load.seed = o_.seed;
    load.slo_ms = o_.slo_ms;
    load.lateness_bound_ms = o_.lateness_bound_ms;
    load.ignore_eos = o_.target.ignore_eos;
    load.timeout_s = o_.target.timeout_s;
    if (!o_.metrics_url.empty()) load.metrics_url = o_.metrics_url;
    if (!o_.power.empty()) load.power = o_.power;
    if (!o_.dcgm_url.empty()) load.dcgm_url = o_.dcgm_url;
    const auto prompts_rule = [&] {
      return o_.same_prompts_every_point
                 ? std::string("same_every_point")
                 : fmt::format(
                       "distinct_per_point: word {} of each request's last message (the first after "
                       "the {} words all share) is p<point> in measured and w<point> in warm-up "
                       "requests, points numbered from 000 in the order they ran{}",
                       shared_words_ + 1, shared_words_,
                       o_.prompt_salt.empty() ? "" : ", followed by the run's prompt_salt");
    };
    load.prompts = prompts_rule();
    if (!o_.prompt_salt.empty()) load.prompt_salt = o_.prompt_salt;
    const std::string sessions = loadgen::describe_sessions(measured_);
    if (!sessions.empty()) {
      load.sessions = sessions + (o_.mode == loadgen::LoadMode::kConcurrency
                                      ? ": each point's concurrency is live sessions, each sending its turns in order"
                                      : ": each point's rate is sessions started per second");
      if (o_.target.chain_responses)
        *load.sessions += "; each turn after the first sends only its new message with previous_response_id";
    }
    bool messages_fitted = false;
    if (o_.fit_each_message) {
      // Each message to its length, where the whole turn cannot be (its turns share prefixes).
      note("fitting the conversations' messages to their lengths in tokens (--approximate-input-tokens skips it)");
      if (auto route = co_await tokenizer_.find(); !route) {
        load.prompt_lengths = "approximate: " + route.error().message;
      } else if (auto n = co_await fitter_.fit_messages(measured_); !n) {
        load.prompt_lengths = "approximate: " + n.error().message;
      } else {
        load.prompt_lengths = fmt::format(
            "messages: each of the {} distinct messages fitted to its length in tokens by {}; a turn's prompt is "
            "its messages' tokens and the chat template's own",
            *n, *route);
        messages_fitted = true;
      }
      if (!messages_fitted)
        note("warning: message lengths are about one token per word, not exact (" + *load.prompt_lengths + ")");
    } else if (o_.exact_prompt_tokens) {
      if (!o_.not_fitted_because.empty()) {
        load.prompt_lengths = "approximate: " + o_.not_fitted_because;
      } else if (auto route = co_await tokenizer_.find(); route) {
        load.prompt_lengths = "exact: " + *route;
        exact_ = true;
      } else {
        load.prompt_lengths = "approximate: " + route.error().message;
      }
      if (!exact_)
        note("warning: prompt lengths are about one token per word, not exact (" + *load.prompt_lengths + ")");
    }
    if (exact_ && o_.shared_prefix_tokens > 0 && shared_words_ > 0 && !measured_.empty()) {
      // The shared prefix was made of words (about three tokens each on Llama's tokenizer): fitted
      // to its length in tokens, the same text in every request, before any point.
      auto prefix = co_await fitter_.fit_to_tokens(loadgen::shared_prefix_text(measured_.front(), shared_words_),
                                                   o_.shared_prefix_tokens);
      if (prefix) {
        loadgen::replace_shared_prefix(measured_, shared_words_, *prefix);
        shared_words_ = loadgen::shared_leading_words(measured_);
        *load.prompt_lengths += fmt::format("; the shared prefix fitted to {} tokens", o_.shared_prefix_tokens);
        load.prompts = prompts_rule();
      } else {
        note("warning: the shared prefix not fitted: " + prefix.error().message);
      }
    }
    if (o_.reset_cache_between_points) {
      auto how = co_await reset_cache();
      if (!how) co_return how.error();
      load.cache_reset = "before every point: " + *how;
    }
    load.observed_engine_identity = id;
    if (o_.shard.sharded()) {
      ShardSetting shard;
      shard.index = o_.shard.index;
      shard.count = o_.shard.count;
      if (o_.start_at_us) shard.start_at = format_rfc3339_us(*o_.start_at_us);
      if (o_.point_period_s > 0) shard.point_period_s = o_.point_period_s;
      load.shard = shard;
    }
    load.observed_engine_receipt_digest = observed_receipt;
    r_.load = std::move(load);

    for (double c : o_.coordinates) {
      if (stop_.load()) break;
      co_await run_point(c);
    }
    if (o_.refine && o_.sla.any()) co_await refine();
    if (!interrupted_.empty()) {
      r_.load->interrupted = interrupted_;
      r_.interrupted_by = signal_;
    }
    r_.stopped_because = stopped_because_;
    if (auto st = evaluate_sweep(r_); !st) co_return st.error();
    co_return r_;
  }

 private:
  void note(std::string line) {
    if (cb_.on_note) cb_.on_note(line);
  }

 public:
  // A signal (SIGINT, SIGTERM), the `count`th: the first sends no further request and gives the
  // ones in flight `drain` to end (then closes them); the second closes them now. Either way the
  // receipt is written, marked interrupted (not valid for claims).
  void interrupt(int signal, int count, std::chrono::milliseconds drain) {
    const char* name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    if (count == 1) {
      signal_ = signal;
      interrupted_ = fmt::format("{} during {}: no further request was sent; those in flight were given {} s to end",
                                 name, label_.empty() ? std::string("the start") : label_, drain.count() / 1000.0);
      driver_.stop_sending();
      note(fmt::format("interrupted ({}): finishing the requests in flight (at most {} s; again to stop now)", name,
                       drain.count() / 1000.0));
      return;
    }
    if (abandoned_) return;
    abandoned_ = true;
    interrupted_ += count == 2 ? fmt::format("; a second {} closed those still in flight", name)
                               : std::string("; those still in flight were closed when the time was up");
    driver_.abandon();
    if (count == 2) note("stopping now: the requests in flight are closed");
  }

 private:
  std::string interrupted_;
  int signal_ = 0;
  bool abandoned_ = false;
  std::string stopped_because_;
  std::size_t ok_ = 0, failed_ = 0;

  // Each request's ledger line, as it ends: passed on, and watched for what makes the rest of the
  // run pointless (issue 38: a wrong model or a server that fails everything was found only after
  // the whole sweep): the server answering as another model, or the first requests all failing.
  void observe(const ledger::Observation& ob) {
    if (cb_.on_observation) cb_.on_observation(ob);
    point_.count(ob);
    if (ob.outcome == "ok")
      ++ok_;
    else
      ++failed_;
    if (!stopped_because_.empty()) return;
    if (ob.outcome == "ok" && ob.response_model && !ob.response_model->empty() &&
        *ob.response_model != o_.target.model) {
      stop_early(
          fmt::format("the server answered as model '{}', not '{}': every point would be invalid "
                      "(model_identity_mismatch); run with --model {}",
                      *ob.response_model, o_.target.model, *ob.response_model));
    } else if (ok_ == 0 && failed_ >= kFailedBeforeStopping) {
      stop_early(fmt::format("the first {} requests all failed; the last: {}{}", failed_,
                             ob.http_status ? fmt::format("HTTP {} ", *ob.http_status) : std::string(),
                             ob.error_message.value_or(ob.outcome)));
    }
  }
  static constexpr std::size_t kFailedBeforeStopping = 8;

  void stop_early(std::string why) {
    stopped_because_ = std::move(why);
    interrupted_ = "stopped early: " + stopped_because_;
    stop_.store(true);
    driver_.stop_sending();
    note("stopping: " + stopped_because_);
  }

  std::size_t warmup_for(double c) const {
    if (o_.warmup >= 0) return static_cast<std::size_t>(o_.warmup);
    if (o_.mode == loadgen::LoadMode::kConcurrency) return static_cast<std::size_t>(c);
    if (o_.arrival == loadgen::Arrival::kRecorded) return 0;
    return static_cast<std::size_t>(std::ceil(c));
  }

  // This shard's part of a point (loadgen/shard.hpp): closed loop, its workers and their requests;
  // open loop, the driver keeps its arrivals.
  void take_share(loadgen::PointPlan& plan, double c) const {
    if (o_.mode == loadgen::LoadMode::kRate) {
      plan.shard = o_.shard;
      return;
    }
    const auto concurrency = static_cast<std::int64_t>(c);
    std::vector<loadgen::ServingRequest> mine;
    std::size_t warmup = 0;
    // By unit: a conversation's turns stay together in one shard (a single request is its own unit).
    const auto units = loadgen::units_of(plan.requests);
    for (std::size_t u = 0; u < units.size(); ++u) {
      if (!o_.shard.owns_request(u, concurrency)) continue;
      for (std::size_t j = units[u].begin; j < units[u].end; ++j) {
        if (j < plan.warmup) ++warmup;
        mine.push_back(std::move(plan.requests[j]));
      }
    }
    plan.requests = std::move(mine);
    plan.warmup = warmup;
    plan.coordinate = static_cast<double>(loadgen::shard_concurrency(concurrency, o_.shard));
  }

  // --start-at: point `index` is due at start_at + index * --point-period (wall clock).
  asio::awaitable<void> wait_until_due(std::size_t index) {
    const std::int64_t due = *o_.start_at_us + static_cast<std::int64_t>(index * o_.point_period_s * 1e6);
    const std::int64_t wait_us = due - SystemClock::instance().wall_us();
    if (index > 0 && o_.point_period_s <= 0) co_return;
    if (wait_us <= 0) {
      if (index > 0)
        note(fmt::format("warning: point {} started {:.3f} s after it was due (--point-period too short?)", index + 1,
                         -static_cast<double>(wait_us) / 1e6));
      co_return;
    }
    asio::steady_timer timer(co_await asio::this_coro::executor);
    timer.expires_after(std::chrono::microseconds(wait_us));
    co_await timer.async_wait(kNoThrow);
  }

  asio::awaitable<void> run_point(double c) {
    auto ex = co_await asio::this_coro::executor;
    loadgen::PointPlan plan;
    plan.mode = o_.mode;
    plan.coordinate = c;
    plan.arrival = o_.arrival;
    plan.burstiness = o_.burstiness;
    plan.seed = o_.seed * 1000003u + static_cast<std::uint64_t>(c * 1000);
    plan.label = label_ = coordinate_label(o_.mode, c);
    point_ = {};
    plan.warmup = warmup_for(c);
    const std::size_t index = point_index_++;
    for (std::size_t i = 0; i < plan.warmup; ++i) {
      loadgen::ServingRequest w = o_.workload[i % o_.workload.size()];
      w.id += fmt::format("#warmup-{:03}", i + 1);
      w.arrival_offset_s.reset();
      // A warm-up request stands alone, even when it is a session's turn.
      w.session_id.clear();
      w.turn = 0;
      w.think_time_s = 0;
      plan.requests.push_back(std::move(w));
    }
    // Each point's own word (and the run's salt), unless every point sends the same prompts (then
    // the salt alone: the same at every point, still the run's own).
    const auto marker = [&](bool warmup) {
      return o_.same_prompts_every_point ? (o_.prompt_salt.empty() ? "" : "s" + o_.prompt_salt)
                                         : loadgen::point_marker(index, warmup) + o_.prompt_salt;
    };
    if (const std::string m = marker(true); !m.empty()) loadgen::mark_prompts(plan.requests, shared_words_, m);
    const std::size_t keep = shared_words_ + (marker(true).empty() ? 0 : 1);  // the shared words and the marker
    const double replay_shift = plan.warmup > 0 ? 1.0 : 0.0;
    if (o_.duration_s > 0 && o_.mode == loadgen::LoadMode::kConcurrency) {
      plan.duration_s = o_.duration_s;
    }
    auto sent = o_.duration_s > 0 && o_.mode == loadgen::LoadMode::kRate && o_.arrival != loadgen::Arrival::kRecorded
                    ? loadgen::take_requests(measured_, static_cast<std::size_t>(std::ceil(c * o_.duration_s)))
                    : measured_;
    if (const std::string m = marker(false); !m.empty()) loadgen::mark_prompts(sent, shared_words_, m);
    if (exact_) {
      // Named results, no co_await inside a conditional expression (GCC 12 destroys its temporaries
      // twice).
      auto warm = co_await fitter_.fit(plan.requests, keep);
      if (!warm)
        note("warning: prompt lengths not fitted at " + coordinate_label(o_.mode, c) + ": " + warm.error().message);
      auto measured = co_await fitter_.fit(sent, keep);
      if (!measured) {
        note("warning: prompt lengths not fitted at " + coordinate_label(o_.mode, c) + ": " + measured.error().message);
      }
    }
    CacheDeclaration cache;
    cache.prompts = o_.same_prompts_every_point ? "same_every_point" : "distinct_per_point";
    cache.declared_shared_share = declared_share(sent);
    if (o_.reset_cache_between_points) {
      auto how = co_await reset_cache();
      CacheReset reset;
      reset.status = how ? "ok" : "failed";
      if (how)
        reset.method = *how;
      else
        reset.error = how.error().message;
      if (!how)
        note("warning: the cache reset before " + coordinate_label(o_.mode, c) + " failed: " + how.error().message);
      cache.reset = std::move(reset);
    }
    for (auto r : sent) {
      if (r.arrival_offset_s) r.arrival_offset_s = *r.arrival_offset_s + replay_shift;
      plan.requests.push_back(std::move(r));
    }
    if (o_.arrival == loadgen::Arrival::kRecorded) {
      plan.speed = c;
      for (std::size_t i = 0; i < plan.warmup; ++i)
        plan.requests[i].arrival_offset_s = static_cast<double>(i) / plan.warmup;
    }

    if (o_.shard.sharded()) take_share(plan, c);
    if (o_.start_at_us) co_await wait_until_due(index);

    std::optional<scrape::Snapshot> before, after;
    std::vector<scrape::Snapshot> during;
    std::optional<double> dcgm_before, dcgm_after;
    if (metrics_) before = co_await scrape_engine();
    if (dcgm_) {
      auto f = co_await dcgm_->fetch();
      if (f.status == scrape::ScrapeStatus::kOk) dcgm_before = parse_dcgm_energy_mj(f.body);
    }
    // Gauges sampled during the point, on a timer the end of the point cancels.
    loadgen::WaitGroup sampler_done(ex);
    asio::steady_timer tick(ex);
    bool point_over = false;
    if (metrics_ && o_.metrics_interval_s > 0) {
      sampler_done.add();
      asio::co_spawn(
          ex,
          [&]() -> asio::awaitable<void> {
            while (!point_over) {
              tick.expires_after(std::chrono::microseconds(static_cast<std::int64_t>(o_.metrics_interval_s * 1e6)));
              co_await tick.async_wait(kNoThrow);
              if (point_over) break;
              scrape::Snapshot s = co_await scrape_engine();
              during.push_back(std::move(s));
            }
          },
          [&](std::exception_ptr) { sampler_done.done(); });
    }
    loadgen::PointRun run = co_await driver_.run_point(plan);
    if (o_.shard.sharded()) {
      for (auto& smp : run.samples) smp.shard = o_.shard.index;
      if (index == 0 && o_.start_at_us && r_.load && r_.load->shard) {
        r_.load->shard->start_lateness_ms =
            loadgen::round_ms(static_cast<double>(run.started_at_us - *o_.start_at_us) / 1000.0);
      }
    }
    point_over = true;
    tick.cancel();
    co_await sampler_done.wait();
    if (metrics_) after = co_await scrape_engine();
    if (dcgm_) {
      auto f = co_await dcgm_->fetch();
      if (f.status == scrape::ScrapeStatus::kOk) dcgm_after = parse_dcgm_energy_mj(f.body);
    }

    TrackPoint tp;
    tp.track = contract_.track;
    tp.measurement_status = run.samples.empty() ? "not_measured" : "measured";
    if (run.samples.empty()) tp.reason = "no request was sent";
    tp.model = contract_.model;
    tp.engine = contract_.engine;
    tp.engine_receipt_digest = contract_.engine_receipt_digest;
    tp.batch_capacity = contract_.batch_capacity;
    tp.capacity_source = contract_.capacity_source;
    std::int64_t tokens = 0;
    for (const auto& s : run.samples) {
      if (s.ok && !s.warmup) tokens += s.output_token_estimate;
    }
    LoadFigures lf;
    lf.coordinate_key = point_key(o_.mode);
    lf.coordinate = c;
    lf.open_loop = o_.mode == loadgen::LoadMode::kRate;
    lf.duration_s = o_.duration_s;
    lf.started_at = format_rfc3339_us(run.started_at_us);
    lf.ended_at = format_rfc3339_us(run.ended_at_us);
    tp.evidence.load = load_evidence(run.samples, lf);
    tp.evidence.generator =
        generator_evidence(run.samples, GeneratorFigures{o_.lateness_bound_ms, run.cpu_seconds, run.wall_seconds});
    tp.evidence.confidence = confidence_evidence(run.samples, plan.seed);
    tp.evidence.errors_by_class = errors_by_class(run.samples);
    tp.evidence.tokens = token_evidence(run.samples);
    tp.evidence.steady_state = steady_state_evidence(run.samples);
    if (before && after) {
      tp.evidence.server = server_evidence(previous_after_ ? &*previous_after_ : nullptr, *before, during, *after,
                                           requests_reaching_server(run.samples));
      previous_after_ = after;
    }
    if (power_) {
      const std::int64_t end_steady = run.started_steady_us + static_cast<std::int64_t>(run.wall_seconds * 1e6);
      auto e = energy_from_power(power_->samples(), run.started_steady_us, end_steady, tokens);
      if (e.at("status").as_string() != "measured" && !power_->error().empty()) e["reason"] = power_->error();
      tp.evidence.energy = std::move(e);
    } else if (dcgm_) {
      tp.evidence.energy = energy_from_dcgm(dcgm_before, dcgm_after, tokens, o_.dcgm_url);
    }
    const boost::json::object* server = tp.evidence.server ? &*tp.evidence.server : nullptr;
    tp.evidence.cache = cache_evidence(run.samples, cache, server);
    FoldOptions fo;
    fo.slo_ms = o_.slo_ms;
    if (server) fo.prefix_cache_hit_rate = prefix_hit_rate_metric(*server);
    tp.stats = fold_samples(run.samples, fo);
    tp.samples = std::move(run.samples);
    note(point_line(c, tp));
    if (point_.cut_short > 0) {
      note(
          fmt::format("  warning: {} answer{} stopped at the length limit short of the max_tokens asked for ({} of {} "
                      "tokens, the last): the engine's context cut {}, so this point measures shorter answers than "
                      "the workload asks (llama.cpp: a slot's context is -c over -np)",
                      point_.cut_short, point_.cut_short == 1 ? "" : "s", point_.cut_got, point_.cut_asked,
                      point_.cut_short == 1 ? "it" : "them"));
    }
    // Why requests failed, as the point ends, in the server's own words (issue 38).
    for (const auto& line : failure_lines(tp.samples)) note("  failed: " + line);

    Point p;
    p.coordinate = c;
    p.workload_digest = r_.workload_digest;
    p.tracks.push_back(std::move(tp));
    r_.points.push_back(std::move(p));
  }

  std::string point_line(double c, const TrackPoint& tp) const {
    auto one = [](std::optional<double> v) { return v ? fmt::format("{:.1f}", *v) : std::string("n/a"); };
    auto p99 = [&](const QuantileMetric& q) { return one(q.measured() ? q.p99 : std::nullopt); };
    const auto late = tp.evidence.generator ? tp.evidence.generator->send_lateness_p99_ms : std::nullopt;
    const auto& t = tp.evidence.tokens;
    const auto range = [](std::optional<std::int64_t> lo, std::optional<std::int64_t> mid,
                          std::optional<std::int64_t> hi) {
      if (!mid) return std::string("n/a");
      return *lo == *hi ? std::to_string(*mid) : fmt::format("{} ({}-{})", *mid, *lo, *hi);
    };
    const std::string late_text = late ? fmt::format("{:.3f}", late.value_or(0)) : "n/a";
    const std::string in = t ? range(t->input_min, t->input_p50, t->input_max) : "n/a";
    const std::string out = t ? range(t->output_min, t->output_p50, t->output_max) : "n/a";
    return fmt::format(
        "{}: {} ok, {} failed, {} tok/s, TTFT p99 {} ms, ITL p99 {} ms, e2e p99 {} ms, send lateness p99 {} ms, "
        "tokens in {} out {}",
        coordinate_label(o_.mode, c), tp.stats.ok, tp.stats.failed, one(tp.stats.throughput_tok_s.measured_value()),
        p99(tp.stats.ttft_ms), p99(tp.stats.itl_ms), p99(tp.stats.end_to_end_ms), late_text, in, out);
  }

  // Bisection between the last point inside every budget and the first outside.
  asio::awaitable<void> refine() {
    for (int step = 0; step < 8 && !stop_.load(); ++step) {
      SweepReceipt probe = r_;
      if (!evaluate_sweep(probe) || probe.tracks.empty()) co_return;
      const auto& b = probe.tracks[0].p99_boundary;
      if (b.status != "measured") co_return;
      const double lo = b.last_passing.value_or(0), hi = b.first_failing.value_or(0);
      double mid;
      if (o_.mode == loadgen::LoadMode::kConcurrency) {
        if (hi - lo <= 1) co_return;
        mid = std::floor((lo + hi) / 2);
      } else {
        if ((hi - lo) / lo <= 0.1) co_return;
        mid = std::round((lo + hi) / 2 * 1000) / 1000;
      }
      note(fmt::format("refining the p99 boundary between {} and {}: trying {}", lo, hi, mid));
      co_await run_point(mid);
    }
  }

  const SweepOptions& o_;
  const SweepCallbacks& cb_;
  std::atomic<bool>& stop_;
  loadgen::Driver driver_;
  loadgen::EngineTokenizer tokenizer_{driver_, o_.target.model, o_.target.api};  // after driver_: it uses it
  loadgen::PromptFitter fitter_{tokenizer_};
  bool exact_ = false;
  std::unique_ptr<scrape::Fetcher> metrics_, dcgm_;
  std::unique_ptr<PowerSampler> power_;
  // The declared shared share of the prompts a point sends: a prompt sent earlier in the same point
  // counts whole (the point may reuse its own prompts), any other its shared words.
  double declared_share(const std::vector<loadgen::ServingRequest>& sent) const {
    std::set<std::string> seen;
    double shared = 0, total = 0;
    for (const auto& r : sent) {
      std::string text;
      for (const auto& m : r.messages) text += m.role + '\n' + m.content + '\n';
      double bytes = 0;
      for (const auto& m : r.messages) bytes += static_cast<double>(m.content.size());
      total += bytes;
      shared += seen.insert(text).second ? loadgen::declared_shared_share(r, shared_words_) * bytes : bytes;
    }
    return total > 0 ? shared / total : 0;
  }

  // One snapshot of the engine's /metrics, handed to on_snapshot as well (the sweep's
  // <ledger>.scrape.jsonl, which attribute and report read beside the ledger).
  asio::awaitable<scrape::Snapshot> scrape_engine() {
    scrape::Snapshot s = co_await metrics_->scrape(++seq_, SystemClock::instance().wall_us());
    if (cb_.on_snapshot) cb_.on_snapshot(s);
    co_return s;
  }

  asio::awaitable<Result<std::string>> reset_cache() {
    auto how = co_await reset_prefix_cache(driver_, reset_route_);
    if (!how) co_return make_error(how.error(), "--reset-cache-between-points: " + how.error().message);
    co_return how;
  }

  std::uint64_t seq_ = 0;
  std::size_t point_index_ = 0, shared_words_ = 0;
  std::string reset_route_;
  std::optional<scrape::Snapshot> previous_after_;
  std::vector<loadgen::ServingRequest> measured_;
  Contract contract_;
  SweepReceipt r_;
  std::string label_;
  PointCounts point_;  // the point running now
};

}  // namespace

Result<SweepReceipt> run_sweep(const SweepOptions& opts, const SweepCallbacks& cb) {
  if (opts.workload.empty()) return make_error(errc::kSweepWorkload, "the workload is empty");
  asio::io_context io;
  std::atomic<bool> stop{false};
  asio::signal_set signals(io, SIGINT, SIGTERM);
  SweepRun run(opts, cb, stop);
  // Ctrl-C as in any Unix tool: the first drains the point in progress (at most the request
  // timeout, and 10 s), the second stops at once; the receipt is written either way.
  const auto drain = std::chrono::milliseconds(static_cast<std::int64_t>(std::min(opts.target.timeout_s, 10.0) * 1000));
  asio::steady_timer drain_timer(io);
  int received = 0;
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                             int signal) {
    if (ec) return;
    ++received;
    stop.store(true);
    run.interrupt(signal, received, drain);
    if (received == 1) {
      drain_timer.expires_after(drain);
      drain_timer.async_wait([&](const boost::system::error_code& e) {
        if (!e) run.interrupt(signal, 3, drain);
      });
      signals.async_wait(on_signal);
    }
  };
  signals.async_wait(on_signal);
  std::optional<Result<SweepReceipt>> result;
  std::exception_ptr failure;
  asio::co_spawn(io, run.run(), [&](std::exception_ptr e, std::optional<Result<SweepReceipt>> r) {
    if (e)
      failure = e;
    else
      result = std::move(r);
    signals.cancel();
    drain_timer.cancel();
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return std::move(*result);
}

Result<ParityReport> run_parity(const SweepOptions& opts, const std::vector<ParityTrackUrl>& tracks,
                                std::int64_t concurrency, const SweepCallbacks& cb) {
  if (opts.workload.empty()) return make_error(errc::kSweepWorkload, "the workload is empty");
  const Clock& clock = SystemClock::instance();
  ParityReport r;
  r.generated_at = format_rfc3339_us(clock.wall_us());
  if (auto dot = r.generated_at.find('.'); dot != std::string::npos)
    r.generated_at = r.generated_at.substr(0, dot) + "Z";
  r.machine_id = opts.machine_id.empty() ? "unknown" : opts.machine_id;
  r.model = opts.target.model;
  const auto measured = loadgen::take_requests(opts.workload, opts.requests);
  r.requests = static_cast<std::int64_t>(measured.size());
  r.concurrency = std::min<std::int64_t>(concurrency, r.requests);  // capped at the request count, as fak
  r.slo_ms = opts.slo_ms;
  r.workload_digest = loadgen::workload_digest(measured);
  r.tool_version = opts.tool_version;
  asio::io_context io;
  std::exception_ptr failure;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        for (const char* name : kParityTracks) {
          auto it =
              std::find_if(tracks.begin(), tracks.end(), [&](const ParityTrackUrl& t) { return t.track == name; });
          if (it == tracks.end()) continue;
          loadgen::Target target = opts.target;
          target.url = it->url;
          const std::string label = std::string("track ") + name;
          PointCounts counts;
          loadgen::Driver driver(
              target,
              [&](const ledger::Observation& ob) {
                counts.count(ob);
                if (cb.on_observation) cb.on_observation(ob);
              },
              [&](std::size_t d, std::size_t t) {
                if (cb.on_progress) cb.on_progress(label, counts.at(d, t));
              });
          loadgen::PointPlan plan;
          plan.mode = loadgen::LoadMode::kConcurrency;
          plan.coordinate = static_cast<double>(r.concurrency);
          plan.label = label;
          plan.warmup =
              opts.warmup >= 0 ? static_cast<std::size_t>(opts.warmup) : static_cast<std::size_t>(r.concurrency);
          for (std::size_t i = 0; i < plan.warmup; ++i) {
            loadgen::ServingRequest w = opts.workload[i % opts.workload.size()];
            w.id += fmt::format("#warmup-{:03}", i + 1);
            plan.requests.push_back(std::move(w));
          }
          plan.requests.insert(plan.requests.end(), measured.begin(), measured.end());
          loadgen::PointRun run = co_await driver.run_point(plan);
          ParityTrack t;
          t.track = name;
          t.base_url = it->url.origin + it->url.base_path;
          t.measured = !run.samples.empty();
          if (!t.measured) t.reason = "no request was sent";
          FoldOptions fo;
          fo.slo_ms = opts.slo_ms;
          t.stats = fold_samples(run.samples, fo);
          t.samples = std::move(run.samples);
          if (cb.on_note) {
            cb.on_note(fmt::format("{}: {} ok, {} failed", label, t.stats->ok, t.stats->failed));
          }
          r.tracks.push_back(std::move(t));
        }
      },
      [&](std::exception_ptr e) { failure = e; });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return r;
}

}  // namespace mpo::sweep
