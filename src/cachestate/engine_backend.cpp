// The implementation of cachestate/engine_backend.hpp. The engine adapter of `cache-state-bench`
// (edge): a vLLM-compatible server's process-local KV prefix cache, observed through its /metrics
// and the usage of pinned-prefix probe requests.
#include "cachestate/engine_backend.hpp"

#include <fmt/format.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <optional>

#include "core/clock.hpp"
#include "core/json.hpp"
#include "engines/signals.hpp"
#include "loadgen/cache_reset.hpp"
#include "loadgen/driver.hpp"
#include "net/client.hpp"
#include "scrape/fetch.hpp"

namespace mpo::cachestate {

namespace asio = boost::asio;
using engines::Signal;

namespace {

// Runs one coroutine to completion on its own event loop.
template <typename T>
T run_sync(std::function<asio::awaitable<T>()> make) {
  asio::io_context io;
  std::optional<T> out;
  std::exception_ptr failure;
  asio::co_spawn(io, make(), [&](std::exception_ptr e, T v) {
    if (e)
      failure = e;
    else
      out.emplace(std::move(v));
  });
  io.run();
  if (failure) std::rethrow_exception(failure);
  return std::move(*out);
}

}  // namespace

std::string prefix_prompt(const std::vector<std::int64_t>& tokens) {
  std::string out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    if (i) out.push_back(' ');
    out += fmt::format("t{}", tokens[i] < 0 ? fmt::format("n{}", -tokens[i]) : std::to_string(tokens[i]));
  }
  return out;
}

std::vector<std::int64_t> engine_prefix(std::size_t n) {
  std::vector<std::int64_t> out(kPinnedPrefix.begin(), kPinnedPrefix.end());
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  while (out.size() < n) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    out.push_back(static_cast<std::int64_t>(x % 100000));
  }
  out.resize(n);
  return out;
}

struct EngineBackend::Impl {
  EngineBackendOptions opts;
  scrape::Fetcher fetcher;
  std::uint64_t sequence = 0;
  std::uint64_t scrape_seq = 0;

  explicit Impl(EngineBackendOptions o) : opts(std::move(o)), fetcher(opts.metrics, scrape::FetchOptions{}) {}

  scrape::Snapshot scrape_raw() {
    return run_sync<scrape::Snapshot>(
        [&]() { return fetcher.scrape(++scrape_seq, SystemClock::instance().wall_us()); });
  }

  Result<scrape::Snapshot> scrape_now() {
    auto s = scrape_raw();
    if (s.status != scrape::ScrapeStatus::kOk) {
      return make_error(errc::kCacheStateScrape, fmt::format("{}: {}", fetcher.source(), scrape::failure_text(s)));
    }
    return s;
  }

  // What the load generator is pointed at: the engine, the model, the API the probes speak.
  loadgen::Target target() const {
    loadgen::Target t;
    t.url = opts.api;
    t.model = opts.model;
    t.timeout_s = opts.timeout_s;
    t.run_id = "cache-state-bench";
    t.api = opts.speak;
    return t;
  }

  // One request with `prompt` in the API asked for; its ledger-shaped observation.
  Result<ledger::Observation> send(const std::string& prompt, const std::string& id) {
    std::optional<ledger::Observation> seen;
    loadgen::Driver driver(
        target(), [&](const ledger::Observation& o) { seen = o; }, nullptr);
    loadgen::PointPlan plan;
    plan.coordinate = 1;
    loadgen::ServingRequest r;
    r.id = id;
    r.messages = {{"user", prompt}};
    r.max_output_tokens = 1;
    plan.requests = {r};
    run_sync<loadgen::PointRun>([&]() { return driver.run_point(plan); });
    if (!seen) return make_error(errc::kCacheStateRequest, "the request produced no observation");
    if (seen->outcome != "ok") {
      return make_error(errc::kCacheStateRequest,
                        fmt::format("the request failed: {} {}", seen->outcome, seen->error_message.value_or("")));
    }
    return *seen;
  }

  // The engine's prefix-cache reset (loadgen/cache_reset.hpp): vLLM's, SGLang's or llama.cpp's slot
  // erase, whichever the server offers; the route that worked is kept for the next arm.
  Result<std::string> reset_cache() {
    loadgen::Driver driver(
        target(), [](const ledger::Observation&) {}, nullptr);
    const auto [ok, text] =
        run_sync<std::pair<bool, std::string>>([&]() -> asio::awaitable<std::pair<bool, std::string>> {
          auto how = co_await reset_prefix_cache(driver, reset_route);
          co_return how ? std::pair(true, *how) : std::pair(false, how.error().message);
        });
    if (!ok) return make_error(errc::kCacheStateMechanism, text);
    return text;
  }
  std::string reset_route;

  // llama.cpp publishes no process start time. Its GET /props carries a `media_marker` drawn at
  // random when the server starts (b10309: two starts gave two markers, one process answers the same
  // one every time), which names the process instance: a restart between two snapshots changes it.
  // "" when the server has no such route or field.
  std::string llamacpp_epoch() {
    net::ExchangeOptions req;
    req.target = "/props";
    req.user_agent = "modelperfobs-cache-state-bench";
    const auto x = net::exchange_blocking(opts.api, {}, std::move(req), opts.timeout_s);
    if (x.failure || x.status != 200) return {};
    const auto doc = parse_json(x.body);
    if (!doc || !doc->is_object()) return {};
    const auto marker = json_string(doc->as_object(), "media_marker");
    return marker && !marker->empty() ? fmt::format("llama.cpp /props media_marker={}", *marker) : std::string();
  }

  Result<int> post(const std::string& path) {
    // POST with an empty body on the server's origin (vLLM's admin routes are not under /v1).
    net::ExchangeOptions req;
    req.method = net::http::verb::post;
    req.target = path;
    req.user_agent = "modelperfobs-cache-state-bench";
    const auto x = net::exchange_blocking(opts.api, {}, std::move(req), opts.timeout_s);
    if (x.failure) return make_error(errc::kCacheStateMechanism, fmt::format("POST {}: {}", path, x.failure->message));
    return x.status;
  }
};

EngineBackend::EngineBackend(EngineBackendOptions o) : impl_(std::make_unique<Impl>(std::move(o))) {}
EngineBackend::~EngineBackend() = default;

Status EngineBackend::check() {
  net::ExchangeOptions req;
  req.target = impl_->opts.api.base_path + "/models";
  req.user_agent = "modelperfobs-cache-state-bench";
  const auto x = net::exchange_blocking(impl_->opts.api, {}, std::move(req), 10);
  if (auto problem = net::openai_models_problem(impl_->opts.api, x.failure ? 0 : x.status, x.body,
                                                x.failure ? x.failure->message : std::string())) {
    return make_error(errc::kCacheStateUrl, "--url: " + *problem);
  }
  if (const auto s = impl_->scrape_raw(); s.status != scrape::ScrapeStatus::kOk) {
    // A page of another kind already asks whether the URL is right.
    return make_error(errc::kCacheStateMetricsUrl,
                      fmt::format("--metrics-url {}: {}{}", impl_->fetcher.source(), scrape::failure_text(s),
                                  s.not_prometheus_text ? "" : " (expected the engine's Prometheus /metrics page)"));
  }
  return Ok{};
}

Result<BackendIdentity> EngineBackend::identity() {
  auto s = impl_->scrape_now();
  if (!s) return s.error();
  std::string models;
  for (const auto& m : s->signals.models) models += (models.empty() ? "" : ",") + m;
  return BackendIdentity{std::string(engines::engine_name(s->signals.engine)), scrape::server_instance_id(*s),
                         models.empty() ? impl_->opts.model : models};
}

std::optional<std::string> EngineBackend::supports(std::string_view layer, std::string_view transition) {
  if (layer != "process_local_kv") return std::nullopt;  // external_shared_kv, provider_prompt_cache: no safe mechanism
  // The engine's reset: vLLM's POST /reset_prefix_cache, SGLang's POST /flush_cache or llama.cpp's
  // slot erase, whichever it offers (apply() names the one used).
  if (transition == "cold_start") return "prefix-cache reset";
  if (transition == "warm_admit") return "prefix-cache reset, then the pinned prefix twice";
  if (transition == "explicit_invalidate") return "prefix-cache reset";
  if (transition == "pressure_evict") return "admit competing prefixes worth 1.5 KV pools";
  return std::nullopt;  // natural_expiry: vLLM's prefix cache has no time-to-live
}

Result<MetricSnapshot> EngineBackend::snapshot(std::string_view) {
  auto s = impl_->scrape_now();
  if (!s) return s.error();
  const auto& sig = s->signals;
  MetricSnapshot m;
  m.captured_at_us = s->ended_at_us;
  m.sample_sequence = ++impl_->sequence;
  m.source = impl_->fetcher.source();
  if (auto start = sig.value(Signal::kProcessStartTime)) {
    m.counter_epoch = fmt::format("process_start_time={}", *start);
  } else if (sig.engine == engines::Engine::kLlamaCpp) {
    m.counter_epoch = impl_->llamacpp_epoch();
  }
  auto u64 = [](std::optional<double> v) -> std::optional<std::uint64_t> {
    if (!v || *v < 0) return std::nullopt;
    return static_cast<std::uint64_t>(*v);
  };
  std::optional<double> requests = sig.value(Signal::kRequestsTotal);
  if (!requests) requests = sig.value(Signal::kRequestsFinished);
  m.requests = u64(requests);
  m.reused_tokens = u64(sig.value(Signal::kPrefixCacheHits));  // vLLM V1 counts hit tokens, not hits
  return m;
}

Result<MechanismReceipt> EngineBackend::apply(std::string_view, std::string_view transition,
                                              const std::vector<std::int64_t>& pinned) {
  MechanismReceipt m;
  m.name = *supports("process_local_kv", transition);
  if (transition == "pressure_evict") {
    auto s = impl_->scrape_now();
    if (!s) return s.error();
    const auto* blocks = s->signals.config("num_gpu_blocks");
    const auto* block_size = s->signals.config("block_size");
    if (!blocks || !block_size) {
      return make_error(errc::kCacheStateMechanism, "the server does not publish its KV pool size (cache_config_info)");
    }
    const double pool = std::stod(*blocks) * std::stod(*block_size);
    // Competing prompts of about a quarter pool each, distinct from the pinned one from the first token.
    const std::size_t each = static_cast<std::size_t>(std::max(32.0, pool / 4));
    double admitted = 0;
    for (int i = 0; admitted < 1.5 * pool && i < 64; ++i) {
      std::vector<std::int64_t> competing;
      for (std::size_t k = 0; k < each; ++k) competing.push_back(-1 - static_cast<std::int64_t>(i * 100000 + k));
      auto o = impl_->send(prefix_prompt(competing), fmt::format("competing-{}", i + 1));
      if (!o) return o.error();
      ++m.requests_sent;
      m.reused_tokens += static_cast<std::uint64_t>(o->cached_prompt_tokens.value_or(0));
      admitted += static_cast<double>(o->prompt_tokens.value_or(static_cast<std::int64_t>(each)));
    }
    m.exit_ok = true;
    m.detail = fmt::format("admitted {} competing prompts ({} tokens) into a {}-token KV pool", m.requests_sent,
                           admitted, pool);
    return m;
  }
  (void)pinned;
  auto route = impl_->reset_cache();
  m.exit_ok = route.ok();
  if (route) {
    m.name = transition == "warm_admit" ? *route + ", then the pinned prefix twice" : *route;
    m.detail = "reset by " + *route;
  } else {
    m.detail = route.error().message;
  }
  return m;
}

Result<ProbeObservation> EngineBackend::probe(std::string_view, const std::vector<std::int64_t>& prefix) {
  if (prefix.empty()) return make_error(errc::kCacheStateProbe, "an empty prefix cannot be probed");
  // Concurrent traffic: anything running or waiting at the server just before the probe.
  auto s = impl_->scrape_now();
  if (!s) return s.error();
  const double busy = s->signals.value(Signal::kRunning).value_or(0) + s->signals.value(Signal::kWaiting).value_or(0);
  auto o = impl_->send(prefix_prompt(prefix), "pinned-prefix-probe");
  if (!o) return o.error();
  ProbeObservation p;
  p.started_at_us = o->started_at_us;
  p.completed_at_us = o->ended_at_us;
  p.token_prefix_digest = prefix_key(prefix);
  p.prompt_tokens = static_cast<std::uint64_t>(o->prompt_tokens.value_or(0));
  p.reused_tokens = static_cast<std::uint64_t>(o->cached_prompt_tokens.value_or(0));
  p.reused = p.reused_tokens > 0;
  p.concurrent_requests = static_cast<std::uint64_t>(busy);
  if (!o->cached_prompt_tokens) {
    return make_error(errc::kCacheStateProbe,
                      "the server's usage carries no prompt_tokens_details.cached_tokens (vLLM: "
                      "--enable-prompt-tokens-details); reuse cannot be observed per probe");
  }
  return p;
}

}  // namespace mpo::cachestate
