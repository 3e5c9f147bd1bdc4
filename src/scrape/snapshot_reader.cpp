// The implementation of scrape/snapshot_reader.hpp. Reading `modelperfobs.scrape.v1` lines back
// (the proxy's `<ledger>.scrape.jsonl`, `scrape --output`), so facts can be taken over a recorded
// run.
#include "scrape/snapshot_reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>
#include <limits>

#include "core/simdjson_values.hpp"
#include "core/time.hpp"

namespace mpo::scrape {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Error bad(std::string m) { return make_error(errc::kScrapeLine, std::move(m)); }

// A JSON number, or one of the strings a snapshot line writes for a non-finite value ("NaN",
// "+Inf", "-Inf"): a page's NaN or Inf survives the round trip (FORMATS.md).
std::optional<double> number(element e) {
  if (auto v = sj::number_of(e)) return v;
  const auto s = sj::string_of(e);
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  return std::nullopt;
}
std::optional<double> number(object o, std::string_view key) {
  auto v = sj::field(o, key);
  return v ? number(*v) : std::nullopt;
}
// A count read from a file, before it is converted: finite, integral, in [lo, hi]; else nullopt
// (a negative `seq` converted to an unsigned integer was undefined behaviour, found by fuzzing).
template <typename T>
std::optional<T> whole(std::optional<double> v, double lo, double hi) {
  if (!v || !std::isfinite(*v) || *v < lo || *v > hi || *v != std::floor(*v)) return std::nullopt;
  return static_cast<T>(*v);
}
constexpr double kMaxExact = 9007199254740992.0;  // 2^53
std::optional<std::string_view> text(object o, std::string_view key) { return sj::string_field(o, key); }

// The strings of an array field (other elements skipped); empty when absent.
std::vector<std::string> strings(object o, std::string_view key) {
  std::vector<std::string> out;
  array a;
  if (o[key].get(a)) return out;
  for (element e : a) {
    std::string_view v;
    if (!e.get(v)) out.emplace_back(v);
  }
  return out;
}

std::optional<std::int64_t> time_field(object o, std::string_view key) {
  auto s = text(o, key);
  if (!s) return std::nullopt;
  auto t = parse_rfc3339(*s);
  return t ? std::optional<std::int64_t>(*t) : std::nullopt;
}

std::optional<ScrapeStatus> status_of(std::string_view s) {
  for (ScrapeStatus st : {ScrapeStatus::kOk, ScrapeStatus::kStale, ScrapeStatus::kHttpError, ScrapeStatus::kUnreachable,
                          ScrapeStatus::kTimeout, ScrapeStatus::kParseError}) {
    if (to_string(st) == s) return st;
  }
  return std::nullopt;
}

std::optional<engines::Engine> engine_of(std::string_view name, std::string_view generation) {
  for (engines::Engine e : {engines::Engine::kUnknown, engines::Engine::kVllmV0, engines::Engine::kVllmV1,
                            engines::Engine::kSglang, engines::Engine::kLlamaCpp, engines::Engine::kTgi}) {
    if (engines::engine_name(e) == name && engines::engine_generation(e) == generation) return e;
  }
  return std::nullopt;
}

std::optional<engines::Signal> signal_of(std::string_view name) {
  for (std::size_t i = 0; i < engines::kSignalCount; ++i) {
    const auto s = static_cast<engines::Signal>(i);
    if (engines::signal_name(s) == name) return s;
  }
  return std::nullopt;
}

Status read_signal(engines::EngineSignals& out, std::string_view name, element e) {
  const auto sig = signal_of(name);
  object o;
  if (!sig || e.get(o)) return bad(fmt::format("signals.{} is not a known signal object", name));
  const auto source = text(o, "source");
  const auto series = whole<int>(number(o, "series"), 0, std::numeric_limits<int>::max());
  if (!source || !series) return bad(fmt::format("signals.{} needs source and series (a count)", name));
  const auto i = static_cast<std::size_t>(*sig);
  if (engines::signal_kind(*sig) == engines::SignalKind::kHistogram) {
    engines::HistogramSignal h;
    h.source = std::string(*source);
    h.series = static_cast<int>(*series);
    h.merged.count = number(o, "count");
    h.merged.sum = number(o, "sum");
    array buckets;
    if (o["buckets"].get(buckets)) return bad(fmt::format("signals.{} has no buckets", name));
    for (element b : buckets) {
      array pair;
      if (b.get(pair) || pair.size() != 2)
        return bad(fmt::format("signals.{}.buckets holds [upper, count] pairs", name));
      std::string_view inf;
      const auto upper = pair.at(0).get_string().get(inf) == simdjson::SUCCESS && inf == "+Inf"
                             ? std::optional<double>(std::numeric_limits<double>::infinity())
                             : number(pair.at(0).value_unsafe());
      const auto count = number(pair.at(1).value_unsafe());
      if (!upper || !count) return bad(fmt::format("signals.{}.buckets holds [upper, count] pairs", name));
      h.merged.buckets.push_back({*upper, *count});
    }
    if (auto invalid = text(o, "invalid")) h.merged.problems.push_back({0, 0, h.source, std::string(*invalid)});
    out.histograms[i] = std::move(h);
    return Ok{};
  }
  const auto value = number(o, "value");
  if (!value) return bad(fmt::format("signals.{} has no value", name));
  engines::ScalarSignal v{*value, std::string(*source), static_cast<int>(*series), {}};
  if (element parts; o["parts"].get(parts) == simdjson::SUCCESS) {
    array list;
    if (parts.get(list)) return bad(fmt::format("signals.{}.parts holds [key, value] pairs", name));
    for (element p : list) {
      array pair;
      std::string_view key;
      if (p.get(pair) || pair.size() != 2 || pair.at(0).get_string().get(key))
        return bad(fmt::format("signals.{}.parts holds [key, value] pairs", name));
      const auto part = number(pair.at(1).value_unsafe());
      if (!part) return bad(fmt::format("signals.{}.parts holds [key, value] pairs", name));
      v.parts.push_back({std::string(key), *part});
    }
  }
  out.scalars[i] = std::move(v);
  return Ok{};
}

Result<Snapshot> parse_line(std::string_view line, simdjson::dom::parser& parser) {
  element root;
  if (parser.parse(line.data(), line.size()).get(root)) return bad("not JSON");
  object o;
  if (root.get(o)) return bad("not a JSON object");
  if (text(o, "schema") != std::optional<std::string_view>("modelperfobs.scrape.v1")) {
    return bad("not a modelperfobs.scrape.v1 line");
  }
  Snapshot s;
  const auto seq = whole<std::uint64_t>(number(o, "seq"), 0, kMaxExact);
  const auto source = text(o, "source");
  const auto status = text(o, "status");
  const auto scheduled = time_field(o, "scheduled_at");
  const auto started = time_field(o, "scrape_started_at");
  const auto ended = time_field(o, "scrape_ended_at");
  if (!seq || !source || !status || !scheduled || !started || !ended) {
    return bad("needs seq (a count), source, status, scheduled_at, scrape_started_at and scrape_ended_at");
  }
  const auto st = status_of(*status);
  if (!st) return bad(fmt::format("unknown status '{}'", *status));
  s.seq = *seq;
  s.source = std::string(*source);
  s.status = *st;
  s.scheduled_at_us = *scheduled;
  s.started_at_us = *started;
  s.ended_at_us = *ended;
  if (sj::field(o, "http_status") && !sj::field(o, "http_status")->is_null()) {
    const auto h = whole<int>(number(o, "http_status"), 0, 999);
    if (!h) return bad("http_status must be a status code");
    s.http_status = *h;
  }
  if (auto e = text(o, "error")) s.error = std::string(*e);
  s.bytes = whole<std::uint64_t>(number(o, "bytes"), 0, kMaxExact).value_or(0);
  if (auto f = text(o, "format")) {
    s.format = *f == "openmetrics-1.0" ? promtext::Format::kOpenMetrics : promtext::Format::kText004;
  }
  if (!has_signals(s.status)) return s;
  object server;
  if (o["server"].get(server)) return bad("an ok or stale snapshot needs server");
  const auto engine = engine_of(text(server, "engine").value_or(""), text(server, "generation").value_or(""));
  if (!engine) return bad("server names an unknown engine");
  s.signals.engine = *engine;
  s.signals.prefix = std::string(text(server, "prefix").value_or(""));
  s.signals.models = strings(server, "models");
  object signals;
  if (o["signals"].get(signals)) return bad("an ok or stale snapshot needs signals");
  for (auto [name, value] : signals) {
    if (auto r = read_signal(s.signals, name, value); !r) return r.error();
  }
  object cache;
  if (!o["cache_config"].get(cache)) {
    for (auto [k, v] : cache) {
      std::string_view val;
      if (!v.get(val)) s.signals.cache_config.push_back({std::string(k), std::string(val)});
    }
    s.signals.cache_config_source = s.signals.prefix + "cache_config_info";
  }
  s.signals.notes = strings(o, "notes");
  array problems;
  if (!o["parse_problems"].get(problems)) {
    for (element p : problems) {
      object po;
      if (p.get(po)) continue;
      s.problems.push_back({whole<std::uint32_t>(number(po, "line"), 0, 4294967295.0).value_or(0),
                            whole<std::uint32_t>(number(po, "column"), 0, 4294967295.0).value_or(0),
                            std::string(text(po, "family").value_or("")),
                            std::string(text(po, "message").value_or(""))});
    }
  }
  return s;
}

}  // namespace

Result<Snapshot> parse_snapshot_line(std::string_view line) {
  simdjson::dom::parser parser;
  return parse_line(line, parser);
}

SnapshotsRead read_snapshots(std::string_view text) {
  simdjson::dom::parser parser;  // one for the whole file: its buffers are reused line after line
  SnapshotsRead out;
  std::size_t pos = 0;
  std::uint64_t line_no = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    auto s = parse_line(line, parser);
    if (!s) {
      ++out.invalid_lines;
      if (out.problems.size() < 10) out.problems.push_back(fmt::format("line {}: {}", line_no, s.error().message));
      continue;
    }
    out.snapshots.push_back(std::move(*s));
  }
  return out;
}

}  // namespace mpo::scrape
