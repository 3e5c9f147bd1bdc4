// The implementation of ledger/reader.hpp. Reading ledgers: our `modelperfobs.observation.v1` lines
// and fak's `fak-model-perf/1` lines alike, mapped onto one record.
#include "ledger/reader.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/simdjson_values.hpp"
#include "core/time.hpp"
#include "ledger/line_fields.hpp"
#include "ledger/observation.hpp"
#include "ledger/observation_scan.hpp"

namespace mpo::ledger {
namespace {

using detail::Field;
using detail::field_of;
using simdjson::dom::element;

std::optional<std::string_view> str_of(element v) { return sj::string_of(v); }

std::optional<std::int64_t> time_of(element v) {
  auto s = sj::string_of(v);
  if (!s) return std::nullopt;
  auto t = parse_rfc3339(*s);
  return t ? std::optional<std::int64_t>(*t) : std::nullopt;
}

// By key, for fak's lines (ours are read in one pass over their fields, below).
std::optional<std::string_view> opt_str(element o, std::string_view key) {
  auto v = sj::field(o, key);
  return v ? str_of(*v) : std::nullopt;
}
std::optional<double> opt_num(element o, std::string_view key) { return sj::number_field(o, key); }
std::optional<std::int64_t> opt_int(element o, std::string_view key) {
  auto v = sj::field(o, key);
  return v ? sj::integer_of(*v) : std::nullopt;
}
std::optional<std::int64_t> opt_time(element o, std::string_view key) {
  auto v = sj::field(o, key);
  return v ? time_of(*v) : std::nullopt;
}

// A positive number, or nullopt: fak omits unknown values and writes no zero it did not measure.
std::optional<double> fak_num(element o, std::string_view key) {
  auto v = opt_num(o, key);
  return v && *v > 0 ? v : std::nullopt;
}

// A DOM value read as detail::read_field reads values; server_timings' object minified into
// `scratch`.
struct DomValue {
  element v;
  std::string& scratch;
  std::optional<std::string_view> string() const { return str_of(v); }
  std::optional<std::int64_t> time() const { return time_of(v); }
  std::optional<double> number() const { return sj::number_of(v); }
  std::optional<std::int64_t> integer() const { return sj::integer_of(v); }
  std::optional<bool> boolean() const {
    bool b = false;
    return v.get_bool().get(b) == simdjson::SUCCESS ? std::optional<bool>(b) : std::nullopt;
  }
  std::optional<std::string_view> object() const {
    if (!v.is_object()) return std::nullopt;
    scratch = simdjson::minify(v);
    return scratch;
  }
};

// One pass over the line's fields (a ledger line has about 50): each key is looked up once, the
// first occurrence of a key wins, as a lookup by key would find it. The record's strings are views
// into the parse; a minified server_timings goes to `scratch`.
Status from_ours(simdjson::dom::object o, LedgerRecordView& r, std::string& scratch) {
  r.source_schema = kObservationSchema;
  bool seen[static_cast<std::size_t>(Field::kOther)] = {};
  detail::Required got;
  for (auto [key, v] : o) {
    const Field f = field_of(key);
    if (f == Field::kOther) continue;
    bool& once = seen[static_cast<std::size_t>(f)];
    if (once) continue;
    once = true;
    detail::read_field(f, DomValue{v, scratch}, r, got);
  }
  if (!got.all()) {
    return make_error(errc::kLedgerFields, "observation line without observation_id, started_at or outcome");
  }
  return Ok{};
}

// fak-model-perf/1 (docs/FAK.md section 1), mapped onto our fields.
Status from_fak(element o, LedgerRecordView& r) {
  r.source_schema = "fak-model-perf/1";
  auto id = opt_str(o, "request_id");
  auto started = opt_time(o, "timestamp");
  if (!id || !started) return make_error(errc::kLedgerFields, "fak-model-perf/1 line without request_id or timestamp");
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
  // Lines of fak's that carry no completed_at end at their start plus their duration (without
  // it a row would be zero-length: an idle window, a false "workload" verdict).
  if (!r.ended_at_us && r.e2e_ms && *r.e2e_ms >= 0) {
    r.ended_at_us = r.started_at_us + static_cast<std::int64_t>(*r.e2e_ms * 1000.0);
  }
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
  return Ok{};
}

template <typename To, typename From>
BasicLedgerRecord<To> convert(const BasicLedgerRecord<From>& f) {
  auto opt = [](const std::optional<From>& s) { return s ? std::optional<To>(To(*s)) : std::nullopt; };
  BasicLedgerRecord<To> t;
  t.source_schema = f.source_schema;
  t.observation_id = To(f.observation_id);
  t.started_at_us = f.started_at_us;
  t.ended_at_us = f.ended_at_us;
  t.model = opt(f.model);
  t.response_model = opt(f.response_model);
  t.backend = opt(f.backend);
  t.path = opt(f.path);
  t.operation = opt(f.operation);
  t.stream = f.stream;
  t.http_status = f.http_status;
  t.outcome = To(f.outcome);
  t.error_type = opt(f.error_type);
  t.error_message = opt(f.error_message);
  t.finish_reason = opt(f.finish_reason);
  t.max_tokens = f.max_tokens;
  t.ttfb_ms = f.ttfb_ms;
  t.ttft_ms = f.ttft_ms;
  t.e2e_ms = f.e2e_ms;
  t.tpot_ms = f.tpot_ms;
  t.itl_p50_ms = f.itl_p50_ms;
  t.itl_p95_ms = f.itl_p95_ms;
  t.itl_max_ms = f.itl_max_ms;
  t.output_tokens_per_second = f.output_tokens_per_second;
  t.e2e_output_tokens_per_second = f.e2e_output_tokens_per_second;
  t.first_output = opt(f.first_output);
  t.prompt_tokens = f.prompt_tokens;
  t.completion_tokens = f.completion_tokens;
  t.total_tokens = f.total_tokens;
  t.cached_prompt_tokens = f.cached_prompt_tokens;
  t.token_source = To(f.token_source);
  t.in_flight_at_start = f.in_flight_at_start;
  t.server_timings = opt(f.server_timings);
  t.sweep_point = opt(f.sweep_point);
  t.warmup = f.warmup;
  t.timing_basis = opt(f.timing_basis);
  t.proxy_lag_ms = f.proxy_lag_ms;
  t.proxy_lag_at_ms = f.proxy_lag_at_ms;
  t.proxy_lag_quiet_ms = f.proxy_lag_quiet_ms;
  t.trace_id = opt(f.trace_id);
  t.span_id = opt(f.span_id);
  t.session_id = opt(f.session_id);
  t.turn = f.turn;
  return t;
}

}  // namespace

LedgerRecord to_owned(const LedgerRecordView& v) { return convert<std::string>(v); }
LedgerRecordView view_of(const LedgerRecord& r) { return convert<std::string_view>(r); }

LineDecoder::LineDecoder()
    : parser_(std::make_unique<simdjson::dom::parser>()), scan_(std::make_unique<detail::ScanState>()) {}
LineDecoder::~LineDecoder() = default;
LineDecoder::LineDecoder(LineDecoder&&) noexcept = default;

void LineDecoder::note(std::uint64_t line_no, std::string reason) {
  if (out_.problems.size() < 20) out_.problems.push_back({line_no, std::move(reason)});
}

void LineDecoder::line(std::string_view line, std::uint64_t line_no, bool last_unterminated,
                       std::size_t readable_after) {
  if (!line.empty() && line.back() == '\r') {
    line.remove_suffix(1);
    ++readable_after;
  }
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  ++out_.lines;
  if (!dom_only_) {
    // Our writer's lines, in its form: read by a scan of their bytes, no DOM.
    view_ = LedgerRecordView{};
    if (detail::scan_observation(line, view_, *scan_, *parser_, scratch_) == detail::ScanRead::kRead) {
      deliver();
      return;
    }
  }
  if (readable_after < simdjson::SIMDJSON_PADDING) {
    // Near the end of the caller's memory: parse a copy with room after it (the parser's own copy
    // would allocate per line).
    padded_.assign(line);
    padded_.resize(line.size() + simdjson::SIMDJSON_PADDING, ' ');
    line = std::string_view(padded_.data(), line.size());
  }
  element doc;
  if (parser_->parse(line.data(), line.size(), false).get(doc) != simdjson::SUCCESS || !doc.is_object()) {
    if (last_unterminated) {
      out_.torn_last_line = true;  // a write cut short: everything before it stands
      note(line_no, "torn last line (no newline, not JSON): skipped");
      return;
    }
    ++out_.invalid_lines;
    note(line_no, "not a JSON object");
    return;
  }
  std::string_view schema;
  if (doc["schema"].get_string().get(schema) != simdjson::SUCCESS) schema = {};
  view_ = LedgerRecordView{};
  Status decoded = Ok{};
  if (schema == kObservationSchema) {
    decoded = from_ours(doc.get_object().value_unsafe(), view_, scratch_);
  } else if (schema == "fak-model-perf/1") {
    decoded = from_fak(doc, view_);
    if (decoded) ++out_.fak_lines;
  } else if (schema == kGapSchema) {
    ++out_.gap_lines;
    out_.dropped_lines += static_cast<std::uint64_t>(opt_int(doc, "dropped_lines").value_or(0));
    return;
  } else {
    ++out_.foreign_lines;
    note(line_no, fmt::format("unknown schema '{}': skipped", schema.substr(0, 64)));
    return;
  }
  if (!decoded) {
    ++out_.invalid_lines;
    note(line_no, decoded.error().message);
    return;
  }
  deliver();
}

void LineDecoder::deliver() {
  if (view_sink_) {
    view_sink_(view_);
  } else if (sink_) {
    sink_(to_owned(view_));
  } else {
    out_.records.push_back(to_owned(view_));
  }
}

std::uint64_t LineDecoder::text(std::string_view text, std::uint64_t first_line_no, bool is_end,
                                std::size_t readable_after) {
  std::uint64_t line_no = first_line_no;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const bool unterminated = nl == std::string_view::npos;
    const std::size_t end = unterminated ? text.size() : nl;
    line(text.substr(pos, end - pos), line_no, unterminated && is_end, text.size() - end + readable_after);
    pos = unterminated ? text.size() : nl + 1;
    ++line_no;
  }
  return line_no - first_line_no;
}

void merge_into(LedgerRead& into, LedgerRead&& from, std::uint64_t line_offset) {
  into.lines += from.lines;
  into.fak_lines += from.fak_lines;
  into.gap_lines += from.gap_lines;
  into.dropped_lines += from.dropped_lines;
  into.invalid_lines += from.invalid_lines;
  into.foreign_lines += from.foreign_lines;
  into.torn_last_line = into.torn_last_line || from.torn_last_line;
  for (LineProblem& p : from.problems) {
    if (into.problems.size() >= 20) break;
    into.problems.push_back({p.line + line_offset, std::move(p.reason)});
  }
  if (into.records.empty() && into.records.capacity() < from.records.size()) {
    into.records = std::move(from.records);
  } else {
    into.records.reserve(into.records.size() + from.records.size());
    std::move(from.records.begin(), from.records.end(), std::back_inserter(into.records));
  }
}

LedgerRead read_ledger(std::string_view text) {
  LineDecoder d;
  d.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  d.text(text, 1, true);
  return std::move(d).take();
}

}  // namespace mpo::ledger
