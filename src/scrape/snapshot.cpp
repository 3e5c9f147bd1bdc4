// The implementation of scrape/snapshot.hpp. One scrape of an engine's /metrics as a record
// (`modelperfobs.scrape.v1`, one JSON line each): when it was scheduled, started and ended, what
// came back, the server's identity, and the canonical signals.
#include "scrape/snapshot.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/json.hpp"
#include "core/text.hpp"
#include "core/time.hpp"
#include "promtext/number.hpp"

namespace mpo::scrape {
namespace {

using engines::Signal;
using engines::SignalKind;

// A number of a snapshot line: JSON has no NaN or Inf, so those are the strings "NaN", "+Inf" and
// "-Inf" (as OpenMetrics writes them), which the reader takes back.
void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"+Inf\"" : "\"-Inf\"";
  } else {
    append_json_number(out, v);
  }
}
std::string value_json(double v) {
  std::string out;
  append_value(out, v);
  return out;
}

std::string buckets_json(const promtext::HistogramSeries& h) {
  std::string out = "[";
  for (std::size_t i = 0; i < h.buckets.size(); ++i) {
    if (i) out += ',';
    out += '[';
    append_value(out, h.buckets[i].upper);
    out += ',';
    append_value(out, h.buckets[i].cumulative);
    out += ']';
  }
  return out + "]";
}

std::string signals_json(const engines::EngineSignals& s) {
  JsonObjectWriter w;
  for (std::size_t i = 0; i < engines::kSignalCount; ++i) {
    const auto sig = static_cast<Signal>(i);
    if (const engines::ScalarSignal* v = s.scalar(sig)) {
      JsonObjectWriter o;
      o.raw_field("value", value_json(v->value)).field("source", v->source).field("series", v->series);
      if (!v->parts.empty()) {
        std::string parts = "[";
        for (const engines::SignalPart& p : v->parts) {
          if (parts.size() > 1) parts += ',';
          parts += '[';
          append_json_string(parts, p.key);
          parts += ',';
          parts += value_json(p.value);
          parts += ']';
        }
        o.raw_field("parts", parts + "]");
      }
      w.raw_field(engines::signal_name(sig), std::move(o).finish());
    } else if (const engines::HistogramSignal* h = s.histogram(sig)) {
      JsonObjectWriter o;
      o.field("source", h->source).field("series", h->series);
      if (h->merged.count) o.raw_field("count", value_json(*h->merged.count));
      if (h->merged.sum) o.raw_field("sum", value_json(*h->merged.sum));
      o.raw_field("buckets", buckets_json(h->merged));
      if (!h->merged.valid()) o.field("invalid", h->merged.problems.front().message);
      w.raw_field(engines::signal_name(sig), std::move(o).finish());
    }
  }
  return std::move(w).finish();
}

}  // namespace

std::string_view to_string(ScrapeStatus s) {
  switch (s) {
    case ScrapeStatus::kOk: return "ok";
    case ScrapeStatus::kStale: return "stale";
    case ScrapeStatus::kHttpError: return "http_error";
    case ScrapeStatus::kUnreachable: return "unreachable";
    case ScrapeStatus::kTimeout: return "timeout";
    case ScrapeStatus::kParseError: return "parse_error";
  }
  return "unknown";
}

bool has_signals(ScrapeStatus s) { return s == ScrapeStatus::kOk || s == ScrapeStatus::kStale; }

std::string failure_text(const Snapshot& s) { return s.error.empty() ? std::string(to_string(s.status)) : s.error; }

void absorb_body(Snapshot& s, std::string_view body) {
  s.bytes = body.size();
  auto e = promtext::parse_exposition(body);
  if (!e) {
    s.status = ScrapeStatus::kParseError;
    const std::string kind = body_kind(body);
    s.not_prometheus_text = kind.rfind("text", 0) != 0;
    s.error = !s.not_prometheus_text
                  ? e.error().message
                  : fmt::format("the page is {}, not Prometheus text: is this the engine's /metrics URL? ({})", kind,
                                e.error().message);
    return;
  }
  s.format = e->format;
  s.problems = std::move(e->problems);
  s.signals = engines::extract_signals(*e);
}

std::string server_instance_id(const Snapshot& s) {
  std::string engine(engines::engine_name(s.signals.engine));
  if (const auto g = engines::engine_generation(s.signals.engine); !g.empty()) engine = fmt::format("{}-{}", engine, g);
  std::string models;
  for (const std::string& m : s.signals.models) models += (models.empty() ? "" : ",") + m;
  const auto start = s.signals.value(Signal::kProcessStartTime);
  return fmt::format("{}|{}|{}|{}", s.source, engine, models,
                     start ? promtext::format_number(*start) : "no-start-time");
}

std::string snapshot_json_line(const Snapshot& s) {
  JsonObjectWriter w;
  w.field("schema", "modelperfobs.scrape.v1")
      .field("seq", s.seq)
      .field("source", s.source)
      .field("scheduled_at", format_rfc3339_us(s.scheduled_at_us))
      .field("scrape_started_at", format_rfc3339_us(s.started_at_us))
      .field("scrape_ended_at", format_rfc3339_us(s.ended_at_us))
      .field("status", to_string(s.status));
  if (s.http_status) w.field("http_status", *s.http_status);
  if (!s.error.empty()) w.field("error", s.error);
  w.field("bytes", s.bytes);
  if (s.format) w.field("format", *s.format == promtext::Format::kOpenMetrics ? "openmetrics-1.0" : "text-0.0.4");
  if (has_signals(s.status)) {
    JsonObjectWriter server;
    server.field("instance_id", server_instance_id(s))
        .field("engine", engines::engine_name(s.signals.engine))
        .field("generation", engines::engine_generation(s.signals.engine))
        .field("prefix", s.signals.prefix);
    server.raw_field("models", json_string_array(s.signals.models));
    if (auto start = s.signals.value(Signal::kProcessStartTime)) server.field("process_start_time_s", *start);
    w.raw_field("server", std::move(server).finish());
    if (!s.problems.empty()) {
      std::string problems = "[";
      for (std::size_t i = 0; i < s.problems.size(); ++i) {
        if (i) problems += ',';
        JsonObjectWriter p;
        p.field("line", static_cast<std::uint64_t>(s.problems[i].line))
            .field("column", static_cast<std::uint64_t>(s.problems[i].column))
            .field("family", s.problems[i].family)
            .field("message", s.problems[i].message);
        problems += std::move(p).finish();
      }
      w.raw_field("parse_problems", problems + "]");
    }
    w.raw_field("signals", signals_json(s.signals));
    if (!s.signals.cache_config.empty()) {
      JsonObjectWriter cc;
      for (const promtext::Label& l : s.signals.cache_config) cc.field(l.name, l.value);
      w.raw_field("cache_config", std::move(cc).finish());
    }
    if (!s.signals.notes.empty()) w.raw_field("notes", json_string_array(s.signals.notes));
  }
  return std::move(w).finish();
}

std::string snapshots_path_for(const std::string& ledger_path) {
  constexpr std::string_view kExt = ".jsonl";
  if (ledger_path.size() > kExt.size() && ledger_path.ends_with(kExt)) {
    return ledger_path.substr(0, ledger_path.size() - kExt.size()) + ".scrape.jsonl";
  }
  return ledger_path + ".scrape.jsonl";
}

}  // namespace mpo::scrape
