#include "ledger/reader.hpp"

#include <algorithm>

#include <simdjson.h>

#include <fmt/format.h>

#include "core/time.hpp"
#include "ledger/observation.hpp"

namespace mpo::ledger {
namespace {

using simdjson::dom::element;

std::optional<std::string> opt_str(element o, std::string_view key) {
  std::string_view v;
  if (o[key].get_string().get(v) != simdjson::SUCCESS) return std::nullopt;
  return std::string(v);
}

std::optional<double> opt_num(element o, std::string_view key) {
  double d = 0;
  if (o[key].get_double().get(d) == simdjson::SUCCESS) return d;
  std::int64_t i = 0;
  if (o[key].get_int64().get(i) == simdjson::SUCCESS) return static_cast<double>(i);
  std::uint64_t u = 0;
  if (o[key].get_uint64().get(u) == simdjson::SUCCESS) return static_cast<double>(u);
  return std::nullopt;
}

std::optional<std::int64_t> opt_int(element o, std::string_view key) {
  std::int64_t i = 0;
  if (o[key].get_int64().get(i) == simdjson::SUCCESS) return i;
  double d = 0;
  if (o[key].get_double().get(d) == simdjson::SUCCESS && d == static_cast<double>(static_cast<std::int64_t>(d))) {
    return static_cast<std::int64_t>(d);
  }
  return std::nullopt;
}

std::optional<std::int64_t> opt_time(element o, std::string_view key) {
  auto s = opt_str(o, key);
  if (!s) return std::nullopt;
  auto t = parse_rfc3339(*s);
  return t ? std::optional<std::int64_t>(*t) : std::nullopt;
}

// A positive number, or nullopt: fak omits unknown values and writes no zero it did not measure.
std::optional<double> fak_num(element o, std::string_view key) {
  auto v = opt_num(o, key);
  return v && *v > 0 ? v : std::nullopt;
}

Result<LedgerRecord> from_ours(element o) {
  LedgerRecord r;
  r.source_schema = kObservationSchema;
  auto id = opt_str(o, "observation_id");
  auto started = opt_time(o, "started_at");
  auto outcome = opt_str(o, "outcome");
  if (!id || !started || !outcome) {
    return make_error("ledger.fields", "observation line without observation_id, started_at or outcome");
  }
  r.observation_id = *id;
  r.started_at_us = *started;
  r.ended_at_us = opt_time(o, "ended_at");
  r.model = opt_str(o, "model");
  r.response_model = opt_str(o, "response_model");
  r.backend = opt_str(o, "backend");
  r.path = opt_str(o, "path");
  r.operation = opt_str(o, "operation");
  bool b = false;
  if (o["stream"].get_bool().get(b) == simdjson::SUCCESS) r.stream = b;
  if (auto s = opt_int(o, "http_status")) r.http_status = static_cast<int>(*s);
  r.outcome = *outcome;
  r.error_type = opt_str(o, "error_type");
  r.error_message = opt_str(o, "error_message");
  r.ttfb_ms = opt_num(o, "ttfb_ms");
  r.ttft_ms = opt_num(o, "ttft_ms");
  r.e2e_ms = opt_num(o, "e2e_ms");
  r.tpot_ms = opt_num(o, "tpot_ms");
  r.itl_p50_ms = opt_num(o, "itl_p50_ms");
  r.itl_p95_ms = opt_num(o, "itl_p95_ms");
  r.itl_max_ms = opt_num(o, "itl_max_ms");
  r.output_tokens_per_second = opt_num(o, "output_tokens_per_second");
  r.e2e_output_tokens_per_second = opt_num(o, "e2e_output_tokens_per_second");
  r.prompt_tokens = opt_int(o, "prompt_tokens");
  r.completion_tokens = opt_int(o, "completion_tokens");
  r.total_tokens = opt_int(o, "total_tokens");
  r.cached_prompt_tokens = opt_int(o, "cached_prompt_tokens");
  r.token_source = opt_str(o, "token_source").value_or("none");
  r.in_flight_at_start = opt_int(o, "in_flight_at_start");
  return r;
}

// fak-model-perf/1 (reference/fak-formats.md section 1), mapped onto our fields.
Result<LedgerRecord> from_fak(element o) {
  LedgerRecord r;
  r.source_schema = "fak-model-perf/1";
  auto id = opt_str(o, "request_id");
  auto started = opt_time(o, "timestamp");
  if (!id || !started) return make_error("ledger.fields", "fak-model-perf/1 line without request_id or timestamp");
  r.observation_id = *id;
  r.started_at_us = *started;
  r.ended_at_us = opt_time(o, "completed_at");
  r.model = opt_str(o, "model");
  r.backend = opt_str(o, "backend");
  bool b = false;
  if (o["streaming"].get_bool().get(b) == simdjson::SUCCESS) r.stream = b;
  const auto status = opt_int(o, "status").value_or(0);
  if (status > 0) r.http_status = static_cast<int>(status);  // 0: no upstream response
  r.error_message = opt_str(o, "error");
  if (status == 0) {
    r.outcome = "upstream_unreachable";
  } else if (status >= 400) {
    r.outcome = "http_error";
  } else {
    r.outcome = r.error_message ? "proxy_error" : "ok";
  }
  r.e2e_ms = opt_num(o, "duration_ms");
  r.ttft_ms = r.stream ? fak_num(o, "ttft_ms") : std::nullopt;
  r.itl_p50_ms = fak_num(o, "inter_chunk_p50_ms");
  r.itl_p95_ms = fak_num(o, "inter_chunk_p95_ms");
  // fak's tpot and token rate include prefill on non-streamed rows; keep them only where ours agree.
  if (r.stream) {
    r.tpot_ms = fak_num(o, "tpot_ms");
    r.output_tokens_per_second = fak_num(o, "output_tokens_per_second");
  }
  r.prompt_tokens = opt_int(o, "prompt_tokens");
  r.completion_tokens = opt_int(o, "completion_tokens");
  r.total_tokens = opt_int(o, "total_tokens");
  r.token_source = r.completion_tokens ? "usage" : "none";
  if (r.completion_tokens && r.e2e_ms && *r.e2e_ms > 0) {
    r.e2e_output_tokens_per_second = static_cast<double>(*r.completion_tokens) / (*r.e2e_ms / 1000.0);
  }
  return r;
}

}  // namespace

LedgerRead read_ledger(std::string_view text) {
  LedgerRead out;
  out.records.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  simdjson::dom::parser parser;
  std::uint64_t line_no = 0;
  std::size_t pos = 0;
  auto problem = [&](std::string reason) {
    ++out.invalid_lines;
    if (out.problems.size() < 20) out.problems.push_back({line_no, std::move(reason)});
  };
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const bool last_unterminated = nl == std::string_view::npos;
    std::string_view line = text.substr(pos, last_unterminated ? std::string_view::npos : nl - pos);
    pos = last_unterminated ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    ++out.lines;
    element doc;
    if (parser.parse(line.data(), line.size()).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
      if (last_unterminated) {
        out.torn_last_line = true;  // a write cut short: everything before it stands
        if (out.problems.size() < 20) out.problems.push_back({line_no, "torn last line (no newline, not JSON): skipped"});
        continue;
      }
      problem("not a JSON object");
      continue;
    }
    const std::string schema = opt_str(doc, "schema").value_or("");
    Result<LedgerRecord> rec = make_error("ledger.schema", "");
    if (schema == kObservationSchema) {
      rec = from_ours(doc);
    } else if (schema == "fak-model-perf/1") {
      rec = from_fak(doc);
      if (rec) ++out.fak_lines;
    } else if (schema == kGapSchema) {
      ++out.gap_lines;
      out.dropped_lines += static_cast<std::uint64_t>(opt_int(doc, "dropped_lines").value_or(0));
      continue;
    } else {
      ++out.foreign_lines;
      if (out.problems.size() < 20) {
        out.problems.push_back({line_no, fmt::format("unknown schema '{}': skipped", schema.substr(0, 64))});
      }
      continue;
    }
    if (!rec) {
      problem(rec.error().message);
      continue;
    }
    out.records.push_back(std::move(*rec));
  }
  return out;
}

}  // namespace mpo::ledger
