#include "sweep/point_evidence.hpp"

#include <array>
#include <cmath>

#include "sweep/typed_json.hpp"

namespace mpo::sweep {
namespace {

template <class T>
void put(boost::json::object& o, std::string_view key, const std::optional<T>& v) {
  if (v) o[key] = *v;
}

boost::json::object load_json(const LoadEvidence& l) {
  boost::json::object o;
  if (l.coordinate_key == "concurrency" && l.coordinate == std::floor(l.coordinate) && std::abs(l.coordinate) < 1e15)
    o[l.coordinate_key] = static_cast<std::int64_t>(l.coordinate);
  else
    o[l.coordinate_key] = l.coordinate;
  o["warmup_requests"] = l.warmup_requests;
  o["measured_requests"] = l.measured_requests;
  put(o, "duration_s", l.duration_s);
  put(o, "offered_rate_rps", l.offered_rate_rps);
  put(o, "achieved_rate_rps", l.achieved_rate_rps);
  o["started_at"] = l.started_at;
  o["ended_at"] = l.ended_at;
  return o;
}

boost::json::object generator_json(const GeneratorEvidence& g) {
  boost::json::object o;
  o["lateness_bound_ms"] = g.lateness_bound_ms;
  put(o, "send_lateness_p50_ms", g.send_lateness_p50_ms);
  put(o, "send_lateness_p99_ms", g.send_lateness_p99_ms);
  put(o, "send_lateness_max_ms", g.send_lateness_max_ms);
  o["cpu_seconds"] = g.cpu_seconds;
  o["wall_seconds"] = g.wall_seconds;
  put(o, "cpu_share", g.cpu_share);
  return o;
}

boost::json::object confidence_json(const ConfidenceEvidence& c) {
  boost::json::object o;
  o["method"] = c.method;
  o["resamples"] = c.resamples;
  o["level"] = c.level;
  o["seed"] = c.seed;
  auto interval = [&](std::string_view key, const std::optional<BootstrapInterval>& i) {
    if (i) o[key] = boost::json::object{{"low", i->low}, {"high", i->high}};
  };
  interval("ttft_p99_ms", c.ttft_p99_ms);
  interval("itl_p99_ms", c.itl_p99_ms);
  interval("end_to_end_p99_ms", c.end_to_end_p99_ms);
  return o;
}

boost::json::object steady_state_json(const SteadyStateEvidence& s) {
  boost::json::object o;
  o["rule"] = s.rule;
  put(o, "window_start_offset_ms", s.window_start_offset_ms);
  put(o, "window_end_offset_ms", s.window_end_offset_ms);
  put(o, "completed_requests", s.completed_requests);
  put(o, "output_tokens", s.output_tokens);
  o["status"] = s.status;
  put(o, "reason", s.reason);
  put(o, "throughput_tok_s", s.throughput_tok_s);
  return o;
}

boost::json::object cache_json(const CacheEvidence& c) {
  boost::json::object o;
  o["prompts"] = c.prompts;
  o["declared_shared_share"] = c.declared_shared_share;
  o["allowance_tokens_per_request"] = c.allowance_tokens_per_request;
  if (c.reset) {
    boost::json::object r;
    r["status"] = c.reset->status;
    put(r, "method", c.reset->method);
    put(r, "error", c.reset->error);
    o["reset"] = std::move(r);
  }
  o["status"] = c.status;
  put(o, "source", c.source);
  put(o, "requests", c.requests);
  put(o, "prompt_tokens", c.prompt_tokens);
  put(o, "cached_tokens", c.cached_tokens);
  put(o, "cached_share", c.cached_share);
  put(o, "limit_share", c.limit_share);
  put(o, "carryover", c.carryover);
  put(o, "server_cached_share", c.server_cached_share);
  put(o, "reason", c.reason);
  return o;
}

std::optional<BootstrapInterval> read_interval(JsonReader& r, std::string_view key) {
  const auto* m = r.object(key);
  if (m == nullptr) return std::nullopt;
  JsonReader in(*m, r.path(key));
  BootstrapInterval i;
  in.read("low", i.low);
  in.read("high", i.high);
  r.adopt(in);
  return i;
}

constexpr std::array<std::string_view, 8> kKnown = {"load",         "generator", "confidence", "errors_by_class",
                                                    "steady_state", "server",    "energy",     "cache"};

}  // namespace

std::optional<double> PointEvidence::server_number(std::string_view key) const {
  if (!server) return std::nullopt;
  const auto* v = server->if_contains(key);
  return v && v->is_number() ? std::optional<double>(v->to_number<double>()) : std::nullopt;
}

boost::json::object evidence_json(const PointEvidence& e) {
  boost::json::object o;
  if (e.load) o["load"] = load_json(*e.load);
  if (e.generator) o["generator"] = generator_json(*e.generator);
  if (e.confidence) o["confidence"] = confidence_json(*e.confidence);
  if (e.errors_by_class) {
    boost::json::object errors;
    for (const auto& [k, v] : *e.errors_by_class) errors[k] = v;
    o["errors_by_class"] = std::move(errors);
  }
  if (e.steady_state) o["steady_state"] = steady_state_json(*e.steady_state);
  if (e.server) o["server"] = *e.server;
  if (e.energy) o["energy"] = *e.energy;
  if (e.cache) o["cache"] = cache_json(*e.cache);
  for (const auto& [k, v] : e.unknown) o[k] = v;
  return o;
}

Result<PointEvidence> parse_point_evidence(const boost::json::object& o) {
  PointEvidence e;
  JsonReader r(o, "evidence");
  if (const auto* m = r.object("load")) {
    JsonReader in(*m, r.path("load"));
    LoadEvidence l;
    for (const char* key : {"concurrency", "rate_rps"}) {
      if (m->contains(key)) {
        l.coordinate_key = key;
        in.read(key, l.coordinate);
        break;
      }
    }
    in.read("warmup_requests", l.warmup_requests);
    in.read("measured_requests", l.measured_requests);
    in.read("duration_s", l.duration_s);
    in.read("offered_rate_rps", l.offered_rate_rps);
    in.read("achieved_rate_rps", l.achieved_rate_rps);
    in.read("started_at", l.started_at);
    in.read("ended_at", l.ended_at);
    r.adopt(in);
    e.load = std::move(l);
  }
  if (const auto* m = r.object("generator")) {
    JsonReader in(*m, r.path("generator"));
    GeneratorEvidence g;
    in.read("lateness_bound_ms", g.lateness_bound_ms);
    in.read("send_lateness_p50_ms", g.send_lateness_p50_ms);
    in.read("send_lateness_p99_ms", g.send_lateness_p99_ms);
    in.read("send_lateness_max_ms", g.send_lateness_max_ms);
    in.read("cpu_seconds", g.cpu_seconds);
    in.read("wall_seconds", g.wall_seconds);
    in.read("cpu_share", g.cpu_share);
    r.adopt(in);
    e.generator = g;
  }
  if (const auto* m = r.object("confidence")) {
    JsonReader in(*m, r.path("confidence"));
    ConfidenceEvidence c;
    in.read("method", c.method);
    in.read("resamples", c.resamples);
    in.read("level", c.level);
    in.read("seed", c.seed);
    c.ttft_p99_ms = read_interval(in, "ttft_p99_ms");
    c.itl_p99_ms = read_interval(in, "itl_p99_ms");
    c.end_to_end_p99_ms = read_interval(in, "end_to_end_p99_ms");
    r.adopt(in);
    e.confidence = std::move(c);
  }
  if (const auto* m = r.object("errors_by_class")) {
    JsonReader in(*m, r.path("errors_by_class"));
    std::map<std::string, std::int64_t> errors;
    for (const auto& [k, v] : *m) in.read(k, errors[std::string(k)]);
    r.adopt(in);
    e.errors_by_class = std::move(errors);
  }
  if (const auto* m = r.object("steady_state")) {
    JsonReader in(*m, r.path("steady_state"));
    SteadyStateEvidence s;
    in.read("rule", s.rule);
    in.read("window_start_offset_ms", s.window_start_offset_ms);
    in.read("window_end_offset_ms", s.window_end_offset_ms);
    in.read("completed_requests", s.completed_requests);
    in.read("output_tokens", s.output_tokens);
    in.read("status", s.status);
    in.read("reason", s.reason);
    in.read("throughput_tok_s", s.throughput_tok_s);
    r.adopt(in);
    e.steady_state = std::move(s);
  }
  if (const auto* m = r.object("server")) e.server = *m;
  if (const auto* m = r.object("energy")) e.energy = *m;
  if (const auto* m = r.object("cache")) {
    JsonReader in(*m, r.path("cache"));
    CacheEvidence c;
    in.read("prompts", c.prompts);
    in.read("declared_shared_share", c.declared_shared_share);
    in.read("allowance_tokens_per_request", c.allowance_tokens_per_request);
    if (const auto* reset = in.object("reset")) {
      JsonReader rr(*reset, in.path("reset"));
      CacheReset cr;
      rr.read("status", cr.status);
      rr.read("method", cr.method);
      rr.read("error", cr.error);
      in.adopt(rr);
      c.reset = std::move(cr);
    }
    in.read("status", c.status);
    in.read("source", c.source);
    in.read("requests", c.requests);
    in.read("prompt_tokens", c.prompt_tokens);
    in.read("cached_tokens", c.cached_tokens);
    in.read("cached_share", c.cached_share);
    in.read("limit_share", c.limit_share);
    in.read("carryover", c.carryover);
    in.read("server_cached_share", c.server_cached_share);
    in.read("reason", c.reason);
    r.adopt(in);
    e.cache = std::move(c);
  }
  if (!r.ok()) return make_error("sweep.evidence", r.error());
  e.unknown = unknown_members(o, kKnown);
  return e;
}

}  // namespace mpo::sweep
