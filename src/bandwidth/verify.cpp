// `bandwidth verify`: re-checks a receipt as a stranger would. Numbers are read exactly (simdjson)
// and every derived figure is recomputed the way the writer computed it, so equality is exact.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "bandwidth/host_roofline.hpp"
#include "bandwidth/receipt.hpp"
#include "core/simdjson_values.hpp"
#include "core/time.hpp"

namespace mpo::bandwidth {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

Error bad(std::string message) { return make_error(errc::kBandwidthVerify, std::move(message)); }

// No null anywhere: an unavailable value is omitted, never written as null.
std::optional<std::string> find_null(element e, const std::string& path) {
  if (e.is_null()) return path;
  object o;
  simdjson::dom::array a;
  if (!e.get(o)) {
    for (auto [k, v] : o) {
      if (auto p = find_null(v, path + "." + std::string(k))) return p;
    }
  } else if (!e.get(a)) {
    std::size_t i = 0;
    for (element v : a) {
      if (auto p = find_null(v, fmt::format("{}[{}]", path, i++))) return p;
    }
  }
  return std::nullopt;
}

std::optional<double> number(object o, std::string_view key) { return sj::number_field(o, key); }

std::optional<std::uint64_t> count(object o, std::string_view key) {
  element e;
  if (o[key].get(e)) return std::nullopt;
  if (e.is_uint64()) return e.get_uint64().value_unsafe();
  if (e.is_int64() && e.get_int64().value_unsafe() >= 0)
    return static_cast<std::uint64_t>(e.get_int64().value_unsafe());
  return std::nullopt;
}

std::optional<std::string_view> text(object o, std::string_view key) { return sj::string_field(o, key); }

bool has(object o, std::string_view key) { return sj::field(o, key).has_value(); }

Status only_keys(object o, std::initializer_list<std::string_view> allowed, std::string_view where) {
  const std::set<std::string_view> ok(allowed);
  for (auto [k, v] : o) {
    if (!ok.count(k)) return bad(fmt::format("{} has an unknown field \"{}\"", where, k));
  }
  return Ok{};
}

// `key` must equal `expected` exactly when expected is set, and be absent when it is not.
Status same(object o, std::string_view key, std::optional<double> expected, std::string_view how) {
  const auto got = number(o, key);
  if (!expected && got) return bad(fmt::format("result.{} is present but cannot be derived ({})", key, how));
  if (expected && !got) return bad(fmt::format("result.{} is missing although {}", key, how));
  if (expected && *got != *expected) {
    return bad(fmt::format("result.{} is {} but {} gives {}", key, *got, how, *expected));
  }
  return Ok{};
}

Status check_window(object in) {
  const auto a = text(in, "capture_started_at");
  const auto b = text(in, "capture_ended_at");
  if (!a || !b) return bad("inputs.capture_started_at and capture_ended_at are required");
  const auto ta = parse_rfc3339(*a);
  const auto tb = parse_rfc3339(*b);
  if (!ta || !tb) return bad("the capture window is not RFC 3339");
  if (*tb <= *ta) return bad("the capture window ends before it starts");
  return Ok{};
}

// inputs: the device named and declared by the operator, an engine only as asserted, positive ceilings.
Status check_hbm_inputs(object in) {
  const auto device = text(in, "device");
  if (!device || device->find_first_not_of(" \t") == std::string_view::npos) return bad("inputs.device is empty");
  if (text(in, "device_evidence") != std::optional<std::string_view>("operator-declared-capture-device")) {
    return bad("inputs.device_evidence must say the device is operator-declared");
  }
  if (has(in, "engine") &&
      text(in, "engine_evidence") != std::optional<std::string_view>("operator-asserted-not-proven-by-csv")) {
    return bad("inputs.engine must be marked operator-asserted");
  }
  for (std::string_view k : {"theoretical_gb_s", "device_roofline_gb_s"}) {
    if (auto v = number(in, k); v && !(*v > 0)) return bad(fmt::format("inputs.{} must be above 0", k));
  }
  return Ok{};
}

// The per-kernel breakdown, where there is one, adds up to the totals: launches, and each
// direction's bytes and the duration where every kernel has them (a launch without a value leaves
// its kernel's, and the total, absent).
Status check_kernels_add_up(object r, std::uint64_t launches, std::optional<std::uint64_t> read,
                            std::optional<std::uint64_t> write, std::optional<double> dur) {
  simdjson::dom::array kernels;
  if (r["kernels"].get(kernels)) return Ok{};
  std::uint64_t sum = 0, read_sum = 0, write_sum = 0;
  double dur_sum = 0;
  bool all_read = true, all_write = true, all_dur = true;
  for (element k : kernels) {
    object ko;
    if (k.get(ko)) return bad("result.kernels must hold objects");
    sum += count(ko, "launches").value_or(0);
    const auto kr = count(ko, "read_bytes"), kw = count(ko, "write_bytes");
    const auto kd = number(ko, "duration_ns");
    all_read = all_read && kr, all_write = all_write && kw, all_dur = all_dur && kd;
    read_sum += kr.value_or(0), write_sum += kw.value_or(0), dur_sum += kd.value_or(0);
  }
  if (sum != launches)
    return bad(fmt::format("result.kernels add up to {} launches, not launch_count {}", sum, launches));
  if (all_read != read.has_value() || (read && read_sum != *read)) {
    return bad(fmt::format("result.kernels' read_bytes add up to {}, not cumulative_read_bytes {}",
                           all_read ? std::to_string(read_sum) : "(a kernel has none)",
                           read ? std::to_string(*read) : "(absent)"));
  }
  if (all_write != write.has_value() || (write && write_sum != *write)) {
    return bad(fmt::format("result.kernels' write_bytes add up to {}, not cumulative_write_bytes {}",
                           all_write ? std::to_string(write_sum) : "(a kernel has none)",
                           write ? std::to_string(*write) : "(absent)"));
  }
  // Durations are sums of doubles in another order: equal to a relative 1e-9.
  if (all_dur != dur.has_value() || (dur && std::fabs(dur_sum - *dur) > 1e-9 * std::max(1.0, std::fabs(*dur)))) {
    return bad(fmt::format("result.kernels' duration_ns add up to {}, not cumulative_duration_ns {}",
                           all_dur ? fmt::format("{}", dur_sum) : "(a kernel has none)",
                           dur ? fmt::format("{}", *dur) : "(absent)"));
  }
  return Ok{};
}

// The fixed strings: the counters read and the statements of what the figure is and is not.
Status check_fixed_strings(object r) {
  auto strings_equal = [](element e, std::initializer_list<std::string_view> want) {
    simdjson::dom::array a;
    if (e.get(a)) return false;
    std::size_t i = 0;
    for (element x : a) {
      std::string_view v;
      if (i >= want.size() || x.get(v) || v != *(want.begin() + i)) return false;
      ++i;
    }
    return i == want.size();
  };
  element cs, st;
  if (r["counter_source"].get(cs) || !strings_equal(cs, {kReadMetric, kWriteMetric, kDurationMetric})) {
    return bad(fmt::format("result.counter_source must be [{}, {}, {}]", kReadMetric, kWriteMetric, kDurationMetric));
  }
  if (r["statements"].get(st) || !strings_equal(st, {kHbmStatements[0], kHbmStatements[1], kHbmStatements[2]})) {
    return bad("result.statements are not the receipt's fixed statements (what the figure is and is not)");
  }
  return Ok{};
}

// validity: valid exactly when a total exists, its reasons those the unavailable figures give.
Status check_hbm_validity(object validity, const Rates& rates, bool has_duration) {
  bool valid = false;
  if (validity["valid"].get(valid)) return bad("validity.valid is missing");
  if (valid != rates.total_gb_s.has_value())
    return bad("validity.valid must be true exactly when a total bandwidth exists");
  {
    const auto want = hbm_validity_reasons(rates, has_duration);
    element reasons;
    std::vector<std::string_view> got;
    simdjson::dom::array a;
    if (validity["reasons"].get(reasons) || reasons.get(a)) return bad("validity.reasons is missing");
    for (element x : a) {
      std::string_view v;
      if (x.get(v)) return bad("validity.reasons must hold strings");
      got.push_back(v);
    }
    if (got.size() != want.size() || !std::equal(got.begin(), got.end(), want.begin())) {
      return bad(fmt::format("validity.reasons do not follow from which figures are unavailable (expected {})",
                             want.empty() ? std::string("none") : fmt::format("\"{}\"", fmt::join(want, "\", \""))));
    }
  }
  return Ok{};
}

Result<Verdict> verify_hbm(object in, object r, object validity) {
  if (auto st = check_window(in); !st) return st.error();
  if (auto st = check_hbm_inputs(in); !st) return st.error();
  if (auto st = only_keys(r,
                          {"kind",
                           "counter_source",
                           "process_id",
                           "process",
                           "launch_count",
                           "cumulative_read_bytes",
                           "cumulative_write_bytes",
                           "cumulative_duration_ns",
                           "read_gb_s",
                           "write_gb_s",
                           "total_gb_s",
                           "utilization_of_theoretical",
                           "utilization_of_device_roofline",
                           "aggregation_scope",
                           "capture_host_evidence",
                           "profiled_kernel_active_time",
                           "uninstrumented_run_required",
                           "unavailable",
                           "kernels",
                           "statements"},
                          "result");
      !st) {
    return st.error();
  }
  bool flag = false;
  if (r["profiled_kernel_active_time"].get(flag) || !flag || r["uninstrumented_run_required"].get(flag) || !flag) {
    return bad("result must state profiled_kernel_active_time and uninstrumented_run_required as true");
  }
  const auto launches = count(r, "launch_count");
  if (!launches || *launches == 0) return bad("result.launch_count must be a positive integer");
  const auto read = count(r, "cumulative_read_bytes");
  const auto write = count(r, "cumulative_write_bytes");
  const auto dur = number(r, "cumulative_duration_ns");
  if (has(r, "cumulative_read_bytes") && !read)
    return bad("result.cumulative_read_bytes must be a non-negative integer");
  if (has(r, "cumulative_write_bytes") && !write)
    return bad("result.cumulative_write_bytes must be a non-negative integer");
  const Rates rates =
      compute_rates(read, write, dur, number(in, "theoretical_gb_s"), number(in, "device_roofline_gb_s"));
  if (auto st = same(r, "read_gb_s", rates.read_gb_s, "cumulative_read_bytes / cumulative_duration_ns"); !st)
    return st.error();
  if (auto st = same(r, "write_gb_s", rates.write_gb_s, "cumulative_write_bytes / cumulative_duration_ns"); !st)
    return st.error();
  if (auto st = same(r, "total_gb_s", rates.total_gb_s, "read_gb_s + write_gb_s"); !st) return st.error();
  if (auto st =
          same(r, "utilization_of_theoretical", rates.utilization_of_theoretical, "total_gb_s / theoretical_gb_s");
      !st) {
    return st.error();
  }
  if (auto st = same(r, "utilization_of_device_roofline", rates.utilization_of_device_roofline,
                     "total_gb_s / device_roofline_gb_s");
      !st) {
    return st.error();
  }
  if (auto st = check_kernels_add_up(r, *launches, read, write, dur); !st) return st.error();
  if (text(r, "aggregation_scope") != std::optional<std::string_view>(kAggregation)) {
    return bad(fmt::format("result.aggregation_scope must be {}", kAggregation));
  }
  if (auto st = check_fixed_strings(r); !st) return st.error();
  if (auto st = check_hbm_validity(validity, rates, dur.has_value()); !st) return st.error();
  std::string summary = fmt::format("{} launches", *launches);
  if (rates.total_gb_s)
    summary += fmt::format(", {:.1f} GB/s total over profiled kernel time", *rates.total_gb_s);
  else
    summary += ", total bandwidth unavailable";
  return Verdict{"hbm-profiled-kernel-active-time", summary};
}

Result<Verdict> verify_host_sample(object in, object r) {
  if (auto st = check_window(in); !st) return st.error();
  if (auto st =
          only_keys(r, {"kind", "bytes", "seconds", "host_gb_s", "utilization_of_measured_host_roofline", "statements"},
                    "result");
      !st) {
    return st.error();  // no HBM field can appear in a host sample
  }
  const auto roof = number(in, "measured_roofline_gb_s");
  const auto bytes = count(r, "bytes");
  const auto seconds = number(r, "seconds");
  if (!roof || !(*roof > 0) || !bytes || !seconds || !(*seconds > 0)) {
    return bad("a host sample needs inputs.measured_roofline_gb_s > 0, result.bytes and result.seconds > 0");
  }
  const double gb_s = static_cast<double>(*bytes) / *seconds / 1e9;
  if (auto st = same(r, "host_gb_s", gb_s, "bytes / seconds / 1e9"); !st) return st.error();
  if (auto st = same(r, "utilization_of_measured_host_roofline", gb_s / *roof, "host_gb_s / measured_roofline_gb_s");
      !st) {
    return st.error();
  }
  return Verdict{"host-memory-sample", fmt::format("{:.2f} GB/s host memory, {:.0f}% of the measured host roofline "
                                                   "(not HBM evidence)",
                                                   gb_s, 100 * gb_s / *roof)};
}

Result<Verdict> verify_roofline(object in, object r) {
  simdjson::dom::array pts;
  if (r["points"].get(pts)) return bad("result.points is missing");
  std::vector<RooflinePoint> points;
  for (element e : pts) {
    object p;
    if (e.get(p)) return bad("result.points must hold objects");
    RooflinePoint rp;
    rp.threads = static_cast<int>(count(p, "threads").value_or(0));
    simdjson::dom::array trials;
    if (p["trial_gb_s"].get(trials)) return bad("a point has no trial_gb_s");
    for (element t : trials) {
      double v = 0;
      if (t.get(v)) return bad("trial_gb_s must hold numbers");
      rp.trial_gb_s.push_back(v);
    }
    rp.median_gb_s = median(rp.trial_gb_s);
    if (number(p, "median_gb_s") != std::optional<double>(rp.median_gb_s)) {
      return bad(fmt::format("the median of the {}-thread point is not the median of its trials", rp.threads));
    }
    points.push_back(std::move(rp));
  }
  const auto threshold = number(in, "knee_threshold");
  if (!threshold) return bad("inputs.knee_threshold is missing");
  const RooflineAnalysis a = analyse_roofline(points, *threshold);
  if (auto st = same(r, "sustainable_gb_s", a.sustainable_gb_s, "the largest min of adjacent medians"); !st)
    return st.error();
  const auto knee = count(r, "knee_threads");
  if (knee.has_value() != a.knee_threads.has_value() || (knee && static_cast<int>(*knee) != *a.knee_threads)) {
    return bad("result.knee_threads does not follow from the medians and the threshold");
  }
  return Verdict{"host-roofline", a.sustainable_gb_s
                                      ? fmt::format("sustainable {:.2f} GB/s host copy bandwidth", *a.sustainable_gb_s)
                                      : "no sustainable figure"};
}

}  // namespace

Result<Verdict> verify_receipt(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  element root;
  if (auto err = parser.parse(padded).get(root)) {
    return make_error(errc::kJsonParse, fmt::format("not one JSON document: {}", simdjson::error_message(err)));
  }
  object top;
  if (root.get(top)) return bad("a receipt is a JSON object");
  if (auto p = find_null(root, "$"))
    return bad(fmt::format("{} is null: an unavailable value is omitted, never null", *p));
  if (auto st = only_keys(top, {"schema", "created_at", "tool", "inputs", "result", "validity"}, "the receipt"); !st) {
    return st.error();
  }
  const auto schema = text(top, "schema");
  object in, r, validity;
  if (top["inputs"].get(in) || top["result"].get(r) || top["validity"].get(validity)) {
    return bad("inputs, result and validity are required objects");
  }
  if (!text(top, "created_at") || !parse_rfc3339(*text(top, "created_at"))) return bad("created_at is not RFC 3339");
  if (schema == std::optional<std::string_view>("modelperfobs.host-roofline.v1")) return verify_roofline(in, r);
  if (schema != std::optional<std::string_view>("modelperfobs.bandwidth.v1")) {
    return bad(fmt::format("schema \"{}\" is not a bandwidth receipt", schema.value_or("")));
  }
  const auto kind = text(r, "kind");
  if (kind == std::optional<std::string_view>("hbm-profiled-kernel-active-time")) return verify_hbm(in, r, validity);
  if (kind == std::optional<std::string_view>("host-memory-sample")) return verify_host_sample(in, r);
  return bad(fmt::format("result.kind \"{}\" is unknown", kind.value_or("")));
}

}  // namespace mpo::bandwidth
